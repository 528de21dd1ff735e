// Static checks of `spec.provider.conjur` (ESO's CyberArk Conjur store). No I/O.
import { References } from '../refs.js';
import { caBundleProblems, caProviderProblems, secretKeyProblems, serviceAccountProblems } from '../spec-checks.js';
import type { StoreReferences } from '../types.js';
import { isObject, type Json } from '../../json-object.js';

const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v !== '';

/** ESO's default key of `jwt.secretRef` (a token Secret). */
export const DEFAULT_JWT_KEY = 'token';
/** The auth kinds ESO's CRD offers; ESI serves apikey and jwt. */
const AUTH_KINDS = ['apikey', 'jwt', 'cert'] as const;

function apikeyProblems(a: unknown): string[] {
  const at = 'conjur.auth.apikey';
  if (!isObject(a)) return [`${at} must be an object`];
  return [
    ...(nonEmpty(a.account) ? [] : [`${at}.account must be a non-empty string (the Conjur account)`]),
    ...secretKeyProblems(`${at}.userRef`, a.userRef),
    ...secretKeyProblems(`${at}.apiKeyRef`, a.apiKeyRef),
  ];
}

function jwtProblems(j: unknown): string[] {
  const at = 'conjur.auth.jwt';
  if (!isObject(j)) return [`${at} must be an object`];
  const out: string[] = [];
  if (!nonEmpty(j.account)) out.push(`${at}.account must be a non-empty string (the Conjur account)`);
  if (!nonEmpty(j.serviceID)) out.push(`${at}.serviceID must be a non-empty string (the authn-jwt service ID)`);
  if (j.hostId !== undefined && typeof j.hostId !== 'string') out.push(`${at}.hostId must be a string`);
  if (j.secretRef == null && j.serviceAccountRef == null) out.push(`${at} must set secretRef or serviceAccountRef`);
  if (j.secretRef != null) out.push(...secretKeyProblems(`${at}.secretRef`, j.secretRef, { key: false }));
  if (j.serviceAccountRef != null) out.push(...serviceAccountProblems(`${at}.serviceAccountRef`, j.serviceAccountRef));
  return out;
}

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['conjur must be an object'];
  const out: string[] = [];
  if (!nonEmpty(spec.url)) {
    out.push('conjur.url must be the URL of the Conjur appliance');
  } else {
    try {
      const u = new URL(spec.url);
      if (u.protocol !== 'https:' && u.protocol !== 'http:') out.push('conjur.url must be an http:// or https:// URL');
    } catch {
      out.push('conjur.url is not a valid URL');
    }
  }
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
  out.push(...caBundleProblems('conjur.caBundle', spec.caBundle), ...caProviderProblems('conjur.caProvider', spec.caProvider));
  return out;
}

/** The JWT Secret with ESO's default key. */
export function jwtRef(ref: { name: string; key?: string; namespace?: string }): { name: string; key: string; namespace?: string } {
  return { name: ref.name, key: ref.key || DEFAULT_JWT_KEY, ...(ref.namespace ? { namespace: ref.namespace } : {}) };
}

export function references(spec: unknown): StoreReferences {
  const refs = new References('conjur', spec).caProvider('caProvider');
  if (validateSpec(spec).length > 0) return refs;
  const auth = (spec as { auth: Json }).auth;
  if (auth.apikey) return refs.secretKey('auth.apikey.userRef', 'auth.apikey.apiKeyRef');
  const j = auth.jwt as { secretRef?: { name: string; key?: string; namespace?: string } };
  if (j.secretRef) refs.credentials.push({ path: 'conjur.auth.jwt.secretRef', kind: 'Secret', ...jwtRef(j.secretRef) });
  return refs.serviceAccount('auth.jwt.serviceAccountRef');
}
