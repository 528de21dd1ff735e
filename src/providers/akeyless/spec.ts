// Static checks of `spec.provider.akeyless` (ESO's Akeyless store). No I/O.
import { fieldProblems, fieldReferences, type FieldRule } from '../fields.js';
import type { StoreReferences } from '../types.js';
import { isObject } from '../../json-object.js';

const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v !== '';

/** ESO's default key of `kubernetesAuth.secretRef` (a ServiceAccount token Secret). */
export const DEFAULT_JWT_KEY = 'token';

const WITH_SECRET_REF = { required: 'withParent', unless: 'authSecretRef.kubernetesAuth' } as const;
export const FIELDS: readonly FieldRule[] = [
  { path: 'akeylessGWApiURL', kind: 'url', required: 'always', example: 'https://api.akeyless.io (Akeyless\'s API or a gateway)' },
  { path: 'caBundle', kind: 'caBundle' },
  { path: 'caProvider', kind: 'caProvider' },
  { path: 'authSecretRef.secretRef.accessID', kind: 'secretKey', ...WITH_SECRET_REF },
  { path: 'authSecretRef.secretRef.accessType', kind: 'secretKey', ...WITH_SECRET_REF },
  { path: 'authSecretRef.secretRef.accessTypeParam', kind: 'secretKey', unless: 'authSecretRef.kubernetesAuth' },
  { path: 'authSecretRef.kubernetesAuth.serviceAccountRef', kind: 'serviceAccount' },
  { path: 'authSecretRef.kubernetesAuth.secretRef', kind: 'secretKey', defaultKey: DEFAULT_JWT_KEY },
];

function authProblems(auth: unknown): string[] {
  if (!isObject(auth) || (auth.secretRef == null && auth.kubernetesAuth == null)) return ['akeyless.authSecretRef must set secretRef (accessID, accessType, accessTypeParam) or kubernetesAuth'];
  const k = auth.kubernetesAuth;
  if (k == null) return isObject(auth.secretRef) ? [] : ['akeyless.authSecretRef.secretRef must be an object'];
  const at = 'akeyless.authSecretRef.kubernetesAuth';
  if (!isObject(k)) return [`${at} must be an object`];
  const out: string[] = [];
  if (!nonEmpty(k.accessID)) out.push(`${at}.accessID must be a non-empty string (the Kubernetes auth method's access ID)`);
  if (!nonEmpty(k.k8sConfName)) out.push(`${at}.k8sConfName must be a non-empty string (the gateway's Kubernetes auth config)`);
  return out;
}

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['akeyless must be an object'];
  const out = [...authProblems(spec.authSecretRef), ...fieldProblems('akeyless', FIELDS, spec)];
  if (spec.ignoreCache !== undefined && typeof spec.ignoreCache !== 'boolean') out.push('akeyless.ignoreCache must be a boolean');
  return out;
}

/** The JWT Secret of Kubernetes auth with ESO's default key. */
export function jwtRef(ref: { name: string; key?: string; namespace?: string }): { name: string; key: string; namespace?: string } {
  return { name: ref.name, key: ref.key || DEFAULT_JWT_KEY, ...(ref.namespace ? { namespace: ref.namespace } : {}) };
}

export function references(spec: unknown): StoreReferences {
  return fieldReferences('akeyless', FIELDS, spec);
}
