// Static checks of `spec.provider.infisical` (ESO's Infisical store). No I/O.
import { fieldProblems, fieldReferences, type FieldRule } from '../fields.js';
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

export const FIELDS: readonly FieldRule[] = [
  ...Object.entries(AUTH_KINDS).flatMap(([kind, keys]) => keys.map((k): FieldRule => ({ path: `auth.${kind}.${k}`, kind: 'secretKey', required: 'withParent' }))),
  { path: 'hostAPI', kind: 'url', example: DEFAULT_HOST_API },
  { path: 'caBundle', kind: 'caBundle' },
  { path: 'caProvider', kind: 'caProvider' },
];

/** ESO's other kinds: they sign with the cloud identity of the process (AWS, Azure, GCP, OCI)
 *  or read a token file in the controller's pod (kubernetes), which a tenant's store may not
 *  borrow (docs/controller.md, "Identity"). */
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
  return isObject(auth[kind]) ? [] : [`infisical.auth.${kind} must be an object`];
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
  return [...authProblems(spec.auth), ...scopeProblems(spec.secretsScope), ...fieldProblems('infisical', FIELDS, spec)];
}

export function references(spec: unknown): StoreReferences {
  return fieldReferences('infisical', FIELDS, spec);
}
