// Static checks of `spec.provider.kubernetes` (ESO v1 field names). No I/O: the webhook
// and the reconciler call this to report a broken store before anything dials out.
import type { KubernetesProvider } from '../../api/types.js';
import { isDnsLabel } from '../../kube/names.js';
import { caBundleProblems, caProviderProblems, secretKeyProblems, serverUrlProblems, serviceAccountProblems } from '../spec-checks.js';
import { isObject } from '../../json-object.js';



function serverProblems(server: unknown): string[] {
  if (server === undefined) return [];
  if (!isObject(server)) return ['kubernetes.server must be an object'];
  const out: string[] = [];
  if (server.url !== undefined) out.push(...serverUrlProblems('kubernetes.server.url', server.url, ['https:']));
  out.push(...caBundleProblems('kubernetes.server.caBundle', server.caBundle), ...caProviderProblems('kubernetes.server.caProvider', server.caProvider));
  return out;
}

function authProblems(auth: unknown): string[] {
  if (auth === undefined) return [];
  if (!isObject(auth)) return ['kubernetes.auth must be an object'];
  const out: string[] = [];
  const set = ['token', 'serviceAccount', 'cert'].filter((k) => auth[k] != null);
  if (set.length > 1) out.push(`kubernetes.auth must set one of token, serviceAccount, cert (found ${set.join(', ')})`);
  if (auth.token != null) {
    if (!isObject(auth.token)) out.push('kubernetes.auth.token must be an object');
    else out.push(...secretKeyProblems('kubernetes.auth.token.bearerToken', auth.token.bearerToken));
  }
  if (auth.serviceAccount != null) out.push(...serviceAccountProblems('kubernetes.auth.serviceAccount', auth.serviceAccount));
  if (auth.cert != null) {
    if (!isObject(auth.cert)) {
      out.push('kubernetes.auth.cert must be an object');
    } else {
      out.push(...secretKeyProblems('kubernetes.auth.cert.clientCert', auth.cert.clientCert));
      out.push(...secretKeyProblems('kubernetes.auth.cert.clientKey', auth.cert.clientKey));
    }
  }
  return out;
}

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['kubernetes must be an object'];
  const problems: string[] = [];
  const rn = spec.remoteNamespace;
  if (rn !== undefined && !isDnsLabel(rn)) {
    problems.push('kubernetes.remoteNamespace must be a namespace name (RFC 1123 label)');
  }
  problems.push(...serverProblems(spec.server), ...authProblems(spec.auth));
  if (spec.authRef != null) {
    problems.push(...secretKeyProblems('kubernetes.authRef', spec.authRef));
    if (spec.auth != null && isObject(spec.auth) && Object.values(spec.auth).some((v) => v != null)) {
      problems.push('kubernetes.authRef (a kubeconfig) and kubernetes.auth are exclusive');
    }
  }
  return problems;
}

export type { KubernetesProvider };
