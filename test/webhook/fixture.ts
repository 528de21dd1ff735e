// Shared set-up of the webhook integration tests: CRDs installed, a webhook process
// registered for this file's namespaces, an application namespace with realistic stores
// and ExternalSecrets, and a canary value that must never leak.
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { installCrds } from '../../src/api/crds.js';
import { freePort } from '../platform/processes.js';
import { useControlPlane, type ControlPlane } from '../platform/controlPlane.js';
import { createNamespace } from '../helpers/kube.js';
import { registerWebhook, startWebhook, waitForCaBundle, type RunningWebhook } from '../helpers/webhook.js';

export const CANARY = 'canary-9f3b2c71-do-not-leak';
const GROUP = 'external-secrets.io';

export interface WebhookFixture {
  cp: ControlPlane;
  kc: KubeConfig;
  ns: string;
  otherNs: string;
  /** The label value (`esi-test-run`) of the namespaces this webhook serves. */
  runId: string;
  webhook: RunningWebhook;
  manifests: object[];
  createPod(pod: V1Pod, dryRun?: boolean): Promise<V1Pod>;
}

type T = { teardown(fn: () => unknown): void };

export function manifestsFor(ns: string, otherNs: string, runId: string): object[] {
  const store = (kind: string, name: string, provider: object, extra: object = {}) => ({
    apiVersion: `${GROUP}/v1`, kind, metadata: kind === 'SecretStore' ? { name, namespace: ns } : { name }, spec: { provider, ...extra },
  });
  const es = (name: string, storeName: string, kind = 'SecretStore') => ({
    apiVersion: `${GROUP}/v1`, kind: 'ExternalSecret', metadata: { name, namespace: ns },
    spec: { secretStoreRef: { name: storeName, kind }, refreshInterval: '1h', data: [{ secretKey: 'password', remoteRef: { key: 'db-creds', property: 'password' } }] },
  });
  return [
    store('SecretStore', 'cluster-secrets', { kubernetes: { remoteNamespace: ns, auth: { serviceAccount: { name: 'default' } } } }),
    store('SecretStore', 'vault', { vault: { server: 'https://vault.example:8200', path: 'secret', version: 'v2', auth: { tokenSecretRef: { name: 'vault-token', key: 'token' } } } }),
    store('ClusterSecretStore', `shared-${runId}`, { vault: { server: 'https://vault.example:8200', path: 'shared', auth: { kubernetes: { mountPath: 'kubernetes', role: 'apps' } } } },
      { conditions: [{ namespaceSelector: { matchLabels: { 'esi-test-run': runId } } }] }),
    store('ClusterSecretStore', `restricted-${runId}`, { vault: { server: 'https://vault.example:8200', path: 'x', auth: { kubernetes: { mountPath: 'kubernetes', role: 'x' } } } },
      { conditions: [{ namespaces: ['payments'] }] }),
    store('ClusterSecretStore', `crossns-${runId}`, { vault: { server: 'https://vault.example:8200', path: 'x', auth: { tokenSecretRef: { name: 'root-token', key: 'token', namespace: otherNs } } } }),
    es('db', 'cluster-secrets'),
    es('vault-app', 'vault'),
    es('shared', `shared-${runId}`, 'ClusterSecretStore'),
    es('restricted', `restricted-${runId}`, 'ClusterSecretStore'),
    es('crossns', `crossns-${runId}`, 'ClusterSecretStore'),
  ];
}

async function apply(kc: KubeConfig, objects: object[]) {
  const custom = kc.makeApiClient(CustomObjectsApi);
  for (const o of objects as { kind: string; metadata: { namespace?: string } }[]) {
    const plural = `${o.kind.toLowerCase()}s`;
    if (o.metadata.namespace) await custom.createNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: o.metadata.namespace, plural, body: o });
    else await custom.createClusterCustomObject({ group: GROUP, version: 'v1', plural, body: o });
  }
}

/** `extraArgs`: more `esi webhook` flags (e.g. --workers). */
export async function setupWebhook(t: T, extraArgs: string[] = []): Promise<WebhookFixture> {
  const cp = await useControlPlane(t);
  const kc = cp.kc;
  await installCrds(kc);
  const port = await freePort();
  const { name, runId } = await registerWebhook(kc, port, t);
  const systemNs = await createNamespace(kc, 'esi-system', t);
  const ns = await createNamespace(kc, 'app', t, { 'esi-test-run': runId });
  const otherNs = await createNamespace(kc, 'other', t);
  const core = kc.makeApiClient(CoreV1Api);
  await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'db-creds' }, stringData: { password: CANARY } } });
  await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'vault-token' }, stringData: { token: `${CANARY}-token`, unrelated: CANARY } } });
  const manifests = manifestsFor(ns, otherNs, runId);
  await apply(kc, manifests);
  const webhook = await startWebhook({ kubeconfigPath: cp.kubeconfigPath, namespace: systemNs, configName: name, port, extraArgs });
  t.teardown(() => webhook.stop());
  await waitForCaBundle(kc, name);
  // Caches are watch-backed: give the webhook a moment to see the objects just created.
  await new Promise((r) => setTimeout(r, 500));
  return {
    cp, kc, ns, otherNs, runId, webhook, manifests,
    createPod: (pod, dryRun) => core.createNamespacedPod({ namespace: ns, body: pod, ...(dryRun ? { dryRun: 'All' } : {}) }),
  };
}

export function labelledPod(name: string, annotations: Record<string, string>, spec?: Partial<V1Pod['spec']>): V1Pod {
  return {
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name, labels: { 'esi.dev/inject': 'true', app: name }, annotations },
    spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }], ...spec },
  };
}
