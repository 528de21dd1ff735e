// Static checks of `spec.provider.conjur` (ESO's CyberArk Conjur store). No I/O.
import { fieldProblems, fieldReferences, type FieldRule } from '../fields.js';
import type { StoreReferences } from '../types.js';
import { isObject, type Json } from '../../json-object.js';

const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v !== '';

/** ESO's default key of `jwt.secretRef` (a token Secret). */
export const DEFAULT_JWT_KEY = 'token';
/** The auth kinds ESO's CRD offers; ESI serves apikey and jwt. */
const AUTH_KINDS = ['apikey', 'jwt', 'cert'] as const;

export const FIELDS: readonly FieldRule[] = [
  { path: 'url', kind: 'url', required: 'always', example: 'https://conjur.example.com (the Conjur appliance)' },
  { path: 'caBundle', kind: 'caBundle' },
  { path: 'caProvider', kind: 'caProvider' },
  { path: 'auth.apikey.userRef', kind: 'secretKey', required: 'withParent' },
  { path: 'auth.apikey.apiKeyRef', kind: 'secretKey', required: 'withParent' },
  { path: 'auth.jwt.secretRef', kind: 'secretKey', defaultKey: DEFAULT_JWT_KEY },
  { path: 'auth.jwt.serviceAccountRef', kind: 'serviceAccount' },
];

function apikeyProblems(a: unknown): string[] {
  const at = 'conjur.auth.apikey';
  if (!isObject(a)) return [`${at} must be an object`];
  return nonEmpty(a.account) ? [] : [`${at}.account must be a non-empty string (the Conjur account)`];
}

function jwtProblems(j: unknown): string[] {
  const at = 'conjur.auth.jwt';
  if (!isObject(j)) return [`${at} must be an object`];
  const out: string[] = [];
  if (!nonEmpty(j.account)) out.push(`${at}.account must be a non-empty string (the Conjur account)`);
  if (!nonEmpty(j.serviceID)) out.push(`${at}.serviceID must be a non-empty string (the authn-jwt service ID)`);
  if (j.hostId !== undefined && typeof j.hostId !== 'string') out.push(`${at}.hostId must be a string`);
  if (j.secretRef == null && j.serviceAccountRef == null) out.push(`${at} must set secretRef or serviceAccountRef`);
  return out;
}

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['conjur must be an object'];
  const out = fieldProblems('conjur', FIELDS, spec);
  const auth: unknown = spec.auth;
  const set = isObject(auth) ? AUTH_KINDS.filter((k) => auth[k] != null) : [];
  const others = isObject(auth) ? Object.keys(auth).filter((k) => auth[k] != null && !(AUTH_KINDS as readonly string[]).includes(k)) : [];
  if (set.length + others.length !== 1) {
    out.push('conjur.auth must set exactly one of apikey or jwt');
  } else if (others.length > 0 || set[0] === 'cert') {
    out.push(`conjur.auth.${others[0] ?? 'cert'} is not supported by ESI (use apikey or jwt; docs/providers/conjur.md)`);
  } else {
    const a = auth as Json;
    out.push(...(set[0] === 'apikey' ? apikeyProblems(a.apikey) : jwtProblems(a.jwt)));
  }
  return out;
}

/** The JWT Secret with ESO's default key. */
export function jwtRef(ref: { name: string; key?: string; namespace?: string }): { name: string; key: string; namespace?: string } {
  return { name: ref.name, key: ref.key || DEFAULT_JWT_KEY, ...(ref.namespace ? { namespace: ref.namespace } : {}) };
}

export function references(spec: unknown): StoreReferences {
  return fieldReferences('conjur', FIELDS, spec);
}
