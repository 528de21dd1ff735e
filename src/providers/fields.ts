// A provider's reference fields, declared once: where its spec holds a Secret key, a whole
// Secret, a ServiceAccount, a CA bundle, a CA provider or a server URL. From one list come the
// static checks (the shared rules of ./spec-checks.ts, one message set for every provider) and
// the StoreReferences the webhook and the reconciler mount or read (./refs.ts). A provider's
// own validateSpec keeps only what is truly its own (which auth method, enums, ranges), so a
// field path is written in one place.
import { field as objectAt, References } from './refs.js';
import { caBundleProblems, caProviderProblems, referenceKeyProblem, secretKeyProblems, serverUrlProblems, serviceAccountProblems } from './spec-checks.js';
import type { StoreReferences } from './types.js';
import { isObject } from '../json-object.js';

/** `always`: the field must be set. `withParent`: it must be set when the object holding it
 *  is (`auth.secretRef.accessKeyIDSecretRef` once `auth.secretRef` is there). */
export type Presence = 'always' | 'withParent';

interface Common {
  /** Dot-separated path below the provider's key (`auth.secretRef.connectTokenSecretRef`). */
  path: string;
  required?: Presence;
  /** The rule does not apply while this sibling path is set (an alternative auth method). */
  unless?: string;
}

export type FieldRule = Common & (
  /** `{name, key, namespace?}`; `defaultKey`: the key ESO uses when the selector has none. */
  | { kind: 'secretKey'; defaultKey?: string }
  /** `{name, namespace?}`: every key of the Secret. */
  | { kind: 'secret' }
  /** `{name, namespace?, audiences?}`; `audiencesAt`: the object whose audiences apply when
   *  the selector has none. */
  | { kind: 'serviceAccount'; audiencesAt?: string }
  | { kind: 'caBundle' }
  | { kind: 'caProvider' }
  /** A URL the client is built on; `schemes` defaults to https and http. */
  | { kind: 'url'; schemes?: readonly string[]; example?: string }
);

/** The value at a dot-separated path, and whether the object holding it exists. */
function lookup(spec: unknown, path: string): { value: unknown; parent: boolean } {
  const parts = path.split('.');
  const last = parts.pop()!;
  const holder = parts.length === 0 ? spec : objectAt(spec, parts.join('.'));
  return isObject(holder) ? { value: Object.hasOwn(holder, last) ? holder[last] : undefined, parent: true } : { value: undefined, parent: false };
}

function applies(spec: unknown, rule: FieldRule): boolean {
  return rule.unless === undefined || lookup(spec, rule.unless).value == null;
}

function ruleProblems(at: string, rule: FieldRule, value: unknown): string[] {
  switch (rule.kind) {
    case 'secretKey': {
      if (rule.defaultKey === undefined) return secretKeyProblems(at, value);
      // The key may be left out, but a key that is given must be a valid one.
      const given = isObject(value) && value.key !== undefined ? referenceKeyProblem(at, value.key) : undefined;
      return [...secretKeyProblems(at, value, { key: false }), ...(given ? [given] : [])];
    }
    case 'secret': return secretKeyProblems(at, value, { key: false });
    case 'serviceAccount': return serviceAccountProblems(at, value);
    case 'caBundle': return value === undefined ? [`${at} must be a base64-encoded PEM certificate bundle`] : caBundleProblems(at, value);
    case 'caProvider': return value === undefined ? [`${at} must be an object with type, name and key`] : caProviderProblems(at, value);
    case 'url': return serverUrlProblems(at, value, rule.schemes, rule.example);
  }
}

/** The problems of every declared field of `spec` (`provider`: its key, e.g. `doppler`). */
export function fieldProblems(provider: string, rules: readonly FieldRule[], spec: unknown): string[] {
  const out: string[] = [];
  for (const rule of rules) {
    if (!applies(spec, rule)) continue;
    const { value, parent } = lookup(spec, rule.path);
    const needed = rule.required === 'always' || (rule.required === 'withParent' && parent);
    if (value === undefined && !needed) continue;
    out.push(...ruleProblems(`${provider}.${rule.path}`, rule, value));
  }
  return out;
}

/** The Secrets, ConfigMaps and ServiceAccounts the declared fields of `spec` name. Fields
 *  that are not usable selectors (no name; no key where one is needed) name nothing: the
 *  checks above report them. */
export function fieldReferences(provider: string, rules: readonly FieldRule[], spec: unknown): StoreReferences {
  const refs = new References(provider, spec);
  for (const rule of rules) {
    if (!applies(spec, rule)) continue;
    switch (rule.kind) {
      case 'secretKey':
        if (rule.defaultKey === undefined) refs.secretKey(rule.path);
        else refs.secretKeyOr(rule.path, rule.defaultKey);
        break;
      case 'secret': refs.secret(rule.path); break;
      case 'serviceAccount': refs.serviceAccount(rule.path, rule.audiencesAt); break;
      case 'caProvider': refs.caProvider(rule.path); break;
      default: break;
    }
  }
  return refs;
}
