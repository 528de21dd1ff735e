// Static checks of `spec.provider.kubernetes` (ESO v1 field names). No I/O: the webhook
// and the reconciler call this to report a broken store before anything dials out.
import type { KubernetesProvider } from '../../api/types.js';
import { isDnsLabel } from '../../kube/names.js';
import { fieldProblems, type FieldRule } from '../fields.js';
import { isObject } from '../../json-object.js';

/** Every field that references a Secret, a ServiceAccount, a CA or the API server. */
export const FIELDS: readonly FieldRule[] = [
  { path: 'server.url', kind: 'url', schemes: ['https:'], example: 'https://kubernetes.example.com:6443' },
  { path: 'server.caBundle', kind: 'caBundle' },
  { path: 'server.caProvider', kind: 'caProvider' },
  { path: 'auth.token.bearerToken', kind: 'secretKey', required: 'withParent' },
  { path: 'auth.serviceAccount', kind: 'serviceAccount' },
  { path: 'auth.cert.clientCert', kind: 'secretKey', required: 'withParent' },
  { path: 'auth.cert.clientKey', kind: 'secretKey', required: 'withParent' },
  { path: 'authRef', kind: 'secretKey' },
];

function authProblems(auth: unknown): string[] {
  if (auth === undefined) return [];
  if (!isObject(auth)) return ['kubernetes.auth must be an object'];
  const out: string[] = [];
  const set = ['token', 'serviceAccount', 'cert'].filter((k) => auth[k] != null);
  if (set.length > 1) out.push(`kubernetes.auth must set one of token, serviceAccount, cert (found ${set.join(', ')})`);
  for (const k of ['token', 'cert'] as const) if (auth[k] != null && !isObject(auth[k])) out.push(`kubernetes.auth.${k} must be an object`);
  return out;
}

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['kubernetes must be an object'];
  const problems: string[] = [];
  const rn = spec.remoteNamespace;
  if (rn !== undefined && !isDnsLabel(rn)) {
    problems.push('kubernetes.remoteNamespace must be a namespace name (RFC 1123 label)');
  }
  if (spec.server !== undefined && !isObject(spec.server)) problems.push('kubernetes.server must be an object');
  problems.push(...authProblems(spec.auth), ...fieldProblems('kubernetes', FIELDS, spec));
  if (spec.authRef != null) {
    if (spec.auth != null && isObject(spec.auth) && Object.values(spec.auth).some((v) => v != null)) {
      problems.push('kubernetes.authRef (a kubeconfig) and kubernetes.auth are exclusive');
    }
  }
  return problems;
}

export type { KubernetesProvider };
