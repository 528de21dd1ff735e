// Static checks of `spec.provider.infisical` (ESO's Infisical store). No I/O.
import { References } from '../refs.js';
import { caBundleProblems, caProviderProblems, secretKeyProblems } from '../spec-checks.js';
import type { StoreReferences } from '../types.js';
import { isObject } from '../../json-object.js';


/** ESO's default API base. */
export const DEFAULT_HOST_API = 'https://app.infisical.com/api';

/** The auth kinds ESI serves and the Secret keys each one reads, in ESO's field names. */
export const AUTH_KINDS = {
  universalAuthCredentials: ['clientId', 'clientSecret'],
  tokenAuthCredentials: ['accessToken'],
  jwtAuthCredentials: ['identityId', 'jwt'],
  ldapAuthCredentials: ['identityId', 'ldapUsername', 'ldapPassword'],
} as const;
export type AuthKind = keyof typeof AUTH_KINDS;

/** ESO's other kinds: they sign with the cloud identity of the process (AWS, Azure, GCP, OCI)
 *  or read a token file in the controller's pod (kubernetes), which a tenant's store may not
 *  borrow (docs/decisions/0052-no-ambient-identity-for-tenant-stores.md). */
const REFUSED = ['awsAuthCredentials', 'azureAuthCredentials', 'gcpIdTokenAuthCredentials', 'gcpIamAuthCredentials', 'kubernetesAuthCredentials', 'ociAuthCredentials'];

/** The one auth kind the spec sets (validated specs only). */
export function authKind(auth: Record<string, unknown>): AuthKind {
  return (Object.keys(AUTH_KINDS) as AuthKind[]).find((k) => auth[k] != null)!;
}

function authProblems(auth: unknown): string[] {
  const served = Object.keys(AUTH_KINDS).join(', ');
  if (!isObject(auth)) return [`infisical.auth must set one of ${served}`];
  const set = Object.keys(auth).filter((k) => auth[k] != null);
  const refused = set.filter((k) => REFUSED.includes(k));
  if (refused.length > 0) return refused.map((k) => `infisical.auth.${k} is not supported by ESI (it authenticates as the process that reads); use one of ${served}`);
  const kinds = set.filter((k): k is AuthKind => Object.hasOwn(AUTH_KINDS, k));
  if (kinds.length !== 1) return [`infisical.auth must set exactly one of ${served}${kinds.length > 1 ? `, found ${kinds.join(', ')}` : ''}`];
  const kind = kinds[0]!;
  const creds = auth[kind];
  if (!isObject(creds)) return [`infisical.auth.${kind} must be an object`];
  return AUTH_KINDS[kind].flatMap((f) => secretKeyProblems(`infisical.auth.${kind}.${f}`, creds[f]));
}

function scopeProblems(scope: unknown): string[] {
  if (!isObject(scope)) return ['infisical.secretsScope must set projectSlug and environmentSlug'];
  const out: string[] = [];
  for (const f of ['projectSlug', 'environmentSlug'] as const) if (typeof scope[f] !== 'string' || scope[f] === '') out.push(`infisical.secretsScope.${f} must be a non-empty string`);
  if (scope.organizationSlug !== undefined && typeof scope.organizationSlug !== 'string') out.push('infisical.secretsScope.organizationSlug must be a string');
  if (scope.secretsPath !== undefined && (typeof scope.secretsPath !== 'string' || !scope.secretsPath.startsWith('/'))) out.push('infisical.secretsScope.secretsPath must be an absolute folder path (starting with /)');
  for (const f of ['recursive', 'expandSecretReferences'] as const) if (scope[f] !== undefined && typeof scope[f] !== 'boolean') out.push(`infisical.secretsScope.${f} must be a boolean`);
  return out;
}

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['infisical must be an object'];
  const out = [...authProblems(spec.auth), ...scopeProblems(spec.secretsScope)];
  if (spec.hostAPI !== undefined) {
    try {
      const u = new URL(String(spec.hostAPI));
      if (u.protocol !== 'https:' && u.protocol !== 'http:') out.push('infisical.hostAPI must be an http:// or https:// URL');
    } catch {
      out.push('infisical.hostAPI is not a valid URL');
    }
  }
  out.push(...caBundleProblems('infisical.caBundle', spec.caBundle), ...caProviderProblems('infisical.caProvider', spec.caProvider));
  return out;
}

export function references(spec: unknown): StoreReferences {
  const refs = new References('infisical', spec);
  const auth = isObject(spec) && isObject(spec.auth) ? spec.auth : {};
  for (const [kind, fields] of Object.entries(AUTH_KINDS)) if (auth[kind] != null) refs.secretKey(...fields.map((f) => `auth.${kind}.${f}`));
  return refs.caProvider('caProvider');
}
