// PushSecret `data[].metadata`: ESO's envelope (`apiVersion:
// kubernetes.external-secrets.io/v1alpha1`, `kind: PushSecretMetadata`, `spec: {...}`) whose
// spec is provider-specific. The envelope is checked here, the spec by the provider's own
// `validatePushMetadata` (its SDK-free meta.ts), built from `metadataChecker` so every
// provider names malformed, unknown and unsupported fields the same way. The reconciler
// calls `checkPushMetadata` once per store and entry, before anything is pushed: a tag or a
// KMS key silently dropped would be worse than a refusal (docs/pushsecret.md).
import type { ProviderMeta, PushMetadata } from './types.js';
import { isObject } from '../json-object.js';

const PUSH_METADATA_API_VERSION = 'kubernetes.external-secrets.io/v1alpha1';
const PUSH_METADATA_KIND = 'PushSecretMetadata';

/** Bounds on metadata maps: bounded work and bounded remote requests for any input. */
const MAX_ENTRIES = 64;
const MAX_TEXT = 4096;


/** Checks one field's value; returns what is wrong ("must be …") or undefined. */
export type FieldCheck = (v: unknown) => string | undefined;

/** A map of strings (tags, labels, annotations, custom metadata). */
export const stringMap: FieldCheck = (v) => {
  if (!isObject(v)) return 'must be a map of strings';
  const entries = Object.entries(v);
  if (entries.length > MAX_ENTRIES) return `has ${entries.length} entries; at most ${MAX_ENTRIES}`;
  for (const [k, x] of entries) {
    if (k === '' || typeof x !== 'string') return 'must be a map of non-empty keys to strings';
    if (k.length + x.length > MAX_TEXT) return `entry "${k.slice(0, 64)}" is longer than ${MAX_TEXT} characters`;
  }
  return undefined;
};

/** A non-empty string. */
export const text: FieldCheck = (v) => (typeof v === 'string' && v !== '' && v.length <= MAX_TEXT ? undefined : `must be a non-empty string of at most ${MAX_TEXT} characters`);

/** One of `values`. */
export const oneOf = (...values: string[]): FieldCheck => (v) => (typeof v === 'string' && values.includes(v) ? undefined : `must be ${values.join(' or ')}`);

/** An RFC 3339 date-time (`2030-01-02T03:04:05Z`). */
export const dateTime: FieldCheck = (v) =>
  typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(v) && !Number.isNaN(Date.parse(v))
    ? undefined
    : 'must be an RFC 3339 date-time such as 2030-01-02T03:04:05Z';

/** A provider's `validatePushMetadata`: `applied` fields with their checks; `unsupported`
 *  fields (ESO's, not applied by ESI) with the reason, refused by name. */
export function metadataChecker(provider: string, applied: Record<string, FieldCheck>, unsupported: Record<string, string> = {}): (spec: Record<string, unknown>) => string[] {
  const known = Object.keys(applied);
  return (spec) => {
    const problems: string[] = [];
    for (const [field, v] of Object.entries(spec)) {
      const check = Object.hasOwn(applied, field) ? applied[field] : undefined;
      if (check) {
        const why = check(v);
        if (why) problems.push(`metadata.spec.${field} ${why}`);
      } else if (Object.hasOwn(unsupported, field)) {
        problems.push(`metadata.spec.${field} is not supported by ESI's ${provider} provider (${unsupported[field]}); remove it`);
      } else {
        problems.push(`metadata.spec.${field} is not a field of the ${provider} provider's push metadata (${known.length ? `it applies: ${known.join(', ')}` : 'it applies none'}); remove it`);
      }
    }
    return problems;
  };
}

/** The entry's metadata as `provider` will apply it, or the problems (each naming the
 *  field under `at`, e.g. `spec.data[0].metadata`). Undefined metadata is no metadata. */
export function checkPushMetadata(provider: Pick<ProviderMeta, 'name' | 'validatePushMetadata'>, raw: unknown, at: string): { metadata?: PushMetadata; problems: string[] } {
  if (raw === undefined || raw === null) return { problems: [] };
  if (!isObject(raw)) return { problems: [`${at} must be an object (apiVersion ${PUSH_METADATA_API_VERSION}, kind ${PUSH_METADATA_KIND}, spec)`] };
  const problems: string[] = [];
  if (raw.apiVersion !== PUSH_METADATA_API_VERSION) problems.push(`${at}.apiVersion must be ${PUSH_METADATA_API_VERSION}`);
  if (raw.kind !== PUSH_METADATA_KIND) problems.push(`${at}.kind must be ${PUSH_METADATA_KIND}`);
  for (const k of Object.keys(raw)) if (k !== 'apiVersion' && k !== 'kind' && k !== 'spec') problems.push(`${at}.${k} is not a field of ${PUSH_METADATA_KIND} (apiVersion, kind, spec)`);
  const spec = raw.spec ?? {};
  if (!isObject(spec)) problems.push(`${at}.spec must be an object`);
  else if (!provider.validatePushMetadata) {
    if (Object.keys(spec).length) problems.push(`${at}.spec: the ${provider.name} provider applies no push metadata; remove ${Object.keys(spec).map((k) => `metadata.spec.${k}`).join(', ')}`);
  } else {
    problems.push(...provider.validatePushMetadata(spec).map((p) => `${at}.${p.replace(/^metadata\./, '')}`));
  }
  if (problems.length || !isObject(spec) || !Object.keys(spec).length) return { problems };
  return { metadata: spec, problems };
}
