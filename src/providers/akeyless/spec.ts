// Static checks of `spec.provider.akeyless` (ESO's Akeyless store). No I/O.
import { References } from '../refs.js';
import { caBundleProblems, caProviderProblems, secretKeyProblems, serviceAccountProblems } from '../spec-checks.js';
import type { StoreReferences } from '../types.js';
import { isObject, type Json } from '../../json-object.js';

const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v !== '';

/** ESO's default key of `kubernetesAuth.secretRef` (a ServiceAccount token Secret). */
export const DEFAULT_JWT_KEY = 'token';
const SECRET_REF_FIELDS = ['accessID', 'accessType', 'accessTypeParam'] as const;

function kubernetesProblems(k: unknown): string[] {
  const at = 'akeyless.authSecretRef.kubernetesAuth';
  if (!isObject(k)) return [`${at} must be an object`];
  const out: string[] = [];
  if (!nonEmpty(k.accessID)) out.push(`${at}.accessID must be a non-empty string (the Kubernetes auth method's access ID)`);
  if (!nonEmpty(k.k8sConfName)) out.push(`${at}.k8sConfName must be a non-empty string (the gateway's Kubernetes auth config)`);
  if (k.serviceAccountRef !== undefined) out.push(...serviceAccountProblems(`${at}.serviceAccountRef`, k.serviceAccountRef));
  if (k.secretRef !== undefined) out.push(...secretKeyProblems(`${at}.secretRef`, k.secretRef, { key: false }));
  return out;
}

function authProblems(auth: unknown): string[] {
  if (!isObject(auth) || (auth.secretRef == null && auth.kubernetesAuth == null)) return ['akeyless.authSecretRef must set secretRef (accessID, accessType, accessTypeParam) or kubernetesAuth'];
  if (auth.kubernetesAuth != null) return kubernetesProblems(auth.kubernetesAuth);
  const s = auth.secretRef;
  if (!isObject(s)) return ['akeyless.authSecretRef.secretRef must be an object'];
  const out = ['accessID', 'accessType'].flatMap((f) => secretKeyProblems(`akeyless.authSecretRef.secretRef.${f}`, s[f]));
  if (s.accessTypeParam !== undefined) out.push(...secretKeyProblems('akeyless.authSecretRef.secretRef.accessTypeParam', s.accessTypeParam));
  return out;
}

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['akeyless must be an object'];
  const out = authProblems(spec.authSecretRef);
  if (!nonEmpty(spec.akeylessGWApiURL)) {
    out.push('akeyless.akeylessGWApiURL must be the URL of Akeyless\'s API or of a gateway');
  } else {
    try {
      const u = new URL(spec.akeylessGWApiURL);
      if (u.protocol !== 'https:' && u.protocol !== 'http:') out.push('akeyless.akeylessGWApiURL must be an http:// or https:// URL');
    } catch {
      out.push('akeyless.akeylessGWApiURL is not a valid URL');
    }
  }
  if (spec.ignoreCache !== undefined && typeof spec.ignoreCache !== 'boolean') out.push('akeyless.ignoreCache must be a boolean');
  out.push(...caBundleProblems('akeyless.caBundle', spec.caBundle), ...caProviderProblems('akeyless.caProvider', spec.caProvider));
  return out;
}

/** The JWT Secret of Kubernetes auth with ESO's default key. */
export function jwtRef(ref: { name: string; key?: string; namespace?: string }): { name: string; key: string; namespace?: string } {
  return { name: ref.name, key: ref.key || DEFAULT_JWT_KEY, ...(ref.namespace ? { namespace: ref.namespace } : {}) };
}

export function references(spec: unknown): StoreReferences {
  const refs = new References('akeyless', spec).caProvider('caProvider');
  if (validateSpec(spec).length > 0) return refs;
  const auth = (spec as { authSecretRef: Json }).authSecretRef;
  const k = auth.kubernetesAuth as { secretRef?: { name: string; key?: string; namespace?: string } } | undefined;
  if (!k) return refs.secretKey(...SECRET_REF_FIELDS.map((f) => `authSecretRef.secretRef.${f}`));
  if (k.secretRef) refs.credentials.push({ path: 'akeyless.authSecretRef.kubernetesAuth.secretRef', kind: 'Secret', ...jwtRef(k.secretRef) });
  return refs.serviceAccount('authSecretRef.kubernetesAuth.serviceAccountRef');
}
