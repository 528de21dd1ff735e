// Shared set-up of the `kubernetes` provider tests (kubernetes.test.ts,
// kubernetes-auth.test.ts): the test platform's real kube-apiserver, a namespace of the
// test's own, ServiceAccounts with Roles on its Secrets, and provider clients.
import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import t from 'tap';
import type { KubernetesProvider } from '../../src/api/types.js';
import { provider } from '../../src/providers/kubernetes/index.js';
import { ProviderError, type SecretsClient } from '../../src/providers/types.js';
import { useControlPlane } from '../platform/controlPlane.js';
import { createNamespace, serviceAccountToken } from '../helpers/kube.js';
import { testContext } from './context.js';

export const CANARY = 'k8s-canary-77d1';
export const cp = await useControlPlane(t);
export const core = cp.kc.makeApiClient(CoreV1Api);
export const ns = await createNamespace(cp.kc, 'k8s-provider', t);
export const storeId = `SecretStore/${ns}/k8s`;
export const caBundle = Buffer.from(cp.caPem).toString('base64');

/** A ServiceAccount with a Role of `verbs` on Secrets of the namespace (none = no Role). */
export async function serviceAccount(kc: KubeConfig, name: string, verbs: string[]): Promise<string> {
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } });
  if (verbs.length) {
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs }] } });
    await rbac.createNamespacedRoleBinding({ namespace: ns, body: {
      metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
    } });
  }
  return serviceAccountToken(kc, ns, name);
}

export const rwToken = await serviceAccount(cp.kc, 'esi-rw', ['get', 'list', 'create', 'update', 'delete', 'patch']);
export const noneToken = await serviceAccount(cp.kc, 'esi-none', []);
export const getToken = await serviceAccount(cp.kc, 'esi-get', ['get']);

export function spec(extra: Partial<KubernetesProvider> = {}): KubernetesProvider {
  return { server: { url: cp.server, caBundle }, auth: { serviceAccount: { name: 'esi-rw' } }, ...extra };
}

/** A client authenticated with the pod's own token (`token()` is the projected file). */
export function client(opts: { spec?: KubernetesProvider; token?: () => Promise<string>; credentials?: Record<string, string>; timeoutMs?: number; namespace?: string } = {}): Promise<SecretsClient> {
  return provider.newClient(testContext({
    storeId, spec: opts.spec ?? spec(), namespace: opts.namespace ?? ns, credentials: opts.credentials,
    token: opts.token ?? (async () => rwToken), timeoutMs: opts.timeoutMs ?? 5000,
  }));
}

export async function seedSecret(name: string, data: Record<string, string | Buffer>, meta: { labels?: Record<string, string>; annotations?: Record<string, string> } = {}): Promise<void> {
  const body = { metadata: { name, namespace: ns, ...meta }, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) };
  await core.deleteNamespacedSecret({ name, namespace: ns }).catch(() => undefined);
  await core.createNamespacedSecret({ namespace: ns, body });
}

/** The Secret's data as read by the admin, or undefined when it does not exist. */
export const readBack = (name: string): Promise<Record<string, string> | undefined> => core.readNamespacedSecret({ name, namespace: ns }).then(
  (s) => Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')])),
  () => undefined);

/** The ProviderError `p` rejects with (anything else fails the test). */
export const caught = (p: Promise<unknown>): Promise<ProviderError> => p.then(
  () => Promise.reject(new Error('expected a ProviderError')),
  (err: unknown) => (err instanceof ProviderError ? err : Promise.reject(err)));

export const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
export const texts = (m: Record<string, Uint8Array>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, text(v)]));
