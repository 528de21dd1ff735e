// Small helpers the integration tests share: a fresh namespace per test (with the
// `default` ServiceAccount a controller-manager would have created), and a client that
// acts as a given ServiceAccount (to see RBAC as a workload does).
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export async function createNamespace(kc: KubeConfig, prefix: string, t?: Teardown, labels?: Record<string, string>, annotations?: Record<string, string>): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name, labels, annotations } } });
  await core.createNamespacedServiceAccount({ namespace: name, body: { metadata: { name: 'default' } } });
  // The shared plane's namespace controller empties and removes it; on a plane without one
  // (or held by a finalizer whose controller stopped) it stays Terminating, which is harmless.
  t?.teardown(() => core.deleteNamespace({ name }).catch(() => undefined));
  return name;
}

export async function serviceAccountToken(kc: KubeConfig, namespace: string, sa: string, audiences?: string[]): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  const res = await core.createNamespacedServiceAccountToken({
    name: sa, namespace, body: { spec: { audiences: audiences ?? [], expirationSeconds: 3600 } },
  });
  return res.status!.token;
}

/** A KubeConfig for the same server that authenticates with `token`. */
export function kubeConfigForToken(admin: KubeConfig, token: string): KubeConfig {
  const cluster = admin.getCurrentCluster()!;
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'sa', token }],
    contexts: [{ name: 'sa', cluster: cluster.name, user: 'sa' }],
    currentContext: 'sa',
  });
  return kc;
}
