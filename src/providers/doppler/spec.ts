// Static checks of `spec.provider.doppler` (ESO's Doppler store). No I/O.
import { fieldProblems, fieldReferences, type FieldRule } from '../fields.js';
import type { StoreReferences } from '../types.js';
import { isObject } from '../../json-object.js';

export const FORMATS = ['json', 'dotnet-json', 'env', 'yaml', 'docker'] as const;
const NAME_TRANSFORMERS = ['upper-camel', 'camel', 'lower-snake', 'tf-var', 'dotnet-env', 'lower-kebab'] as const;
/** ESO's default key of `auth.secretRef.dopplerToken`. */
const DEFAULT_TOKEN_KEY = 'dopplerToken';

export const FIELDS: readonly FieldRule[] = [
  { path: 'auth.secretRef.dopplerToken', kind: 'secretKey', required: 'always', defaultKey: DEFAULT_TOKEN_KEY, unless: 'auth.oidcConfig' },
];

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['doppler must be an object'];
  const out = fieldProblems('doppler', FIELDS, spec);
  if (isObject(spec.auth) && spec.auth.oidcConfig !== undefined) out.push('doppler.auth.oidcConfig is not supported by ESI: use auth.secretRef.dopplerToken (a service token)');
  for (const f of ['project', 'config'] as const) {
    if (spec[f] !== undefined && (typeof spec[f] !== 'string' || spec[f] === '')) out.push(`doppler.${f} must be a non-empty string`);
  }
  if (spec.format !== undefined && !(FORMATS as readonly unknown[]).includes(spec.format)) out.push(`doppler.format must be one of ${FORMATS.join(', ')}`);
  if (spec.nameTransformer !== undefined && !(NAME_TRANSFORMERS as readonly unknown[]).includes(spec.nameTransformer)) {
    out.push(`doppler.nameTransformer must be one of ${NAME_TRANSFORMERS.join(', ')}`);
  }
  return out;
}

/** The token selector with ESO's default key. */
export function tokenRef(spec: { auth: { secretRef?: { dopplerToken: { name: string; key?: string; namespace?: string } } } }): { name: string; key: string; namespace?: string } {
  const r = spec.auth.secretRef!.dopplerToken;
  return { name: r.name, key: r.key || DEFAULT_TOKEN_KEY, ...(r.namespace ? { namespace: r.namespace } : {}) };
}

export function references(spec: unknown): StoreReferences {
  return fieldReferences('doppler', FIELDS, spec);
}
