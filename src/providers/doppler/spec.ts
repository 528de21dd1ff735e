// Static checks of `spec.provider.doppler` (ESO's Doppler store). No I/O.
import { References } from '../refs.js';
import type { StoreReferences } from '../types.js';
import { isObject } from '../../json-object.js';


export const FORMATS = ['json', 'dotnet-json', 'env', 'yaml', 'docker'] as const;
export const NAME_TRANSFORMERS = ['upper-camel', 'camel', 'lower-snake', 'tf-var', 'dotnet-env', 'lower-kebab'] as const;
/** ESO's default key of `auth.secretRef.dopplerToken`. */
export const DEFAULT_TOKEN_KEY = 'dopplerToken';

function authProblems(auth: unknown): string[] {
  if (!isObject(auth)) return ['doppler.auth must set secretRef.dopplerToken'];
  const out: string[] = [];
  if (auth.oidcConfig !== undefined) out.push('doppler.auth.oidcConfig is not supported by ESI: use auth.secretRef.dopplerToken (a service token)');
  const ref = isObject(auth.secretRef) ? auth.secretRef.dopplerToken : undefined;
  if (auth.oidcConfig === undefined && (!isObject(ref) || typeof ref.name !== 'string' || ref.name === '')) out.push('doppler.auth.secretRef.dopplerToken.name must be a non-empty string');
  if (isObject(ref) && ref.key !== undefined && (typeof ref.key !== 'string' || ref.key === '')) out.push('doppler.auth.secretRef.dopplerToken.key must be a non-empty string');
  return out;
}

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['doppler must be an object'];
  const out = authProblems(spec.auth);
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
  const refs = new References('doppler', spec);
  if (validateSpec(spec).length > 0) return refs;
  const r = tokenRef(spec as Parameters<typeof tokenRef>[0]);
  refs.credentials.push({ path: 'doppler.auth.secretRef.dopplerToken', kind: 'Secret', ...r });
  return refs;
}
