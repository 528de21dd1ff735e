// Watches break when the apiserver restarts (a rollout, a crash). A webhook whose caches
// silently stop watching would refuse pods for ExternalSecrets created afterwards. This
// restarts a private apiserver under a running webhook and shows it still sees new objects.
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { installCrds } from '../../../src/api/crds.js';
import { startControlPlane } from '../../support/platform/control-plane-process.js';
import { freePort } from '../../support/platform/processes.js';
import { createNamespace } from '../../support/kube.js';
import { registerWebhook, startWebhook, waitForCaBundle } from '../../support/webhook.js';

// Private on purpose: restarting the shared apiserver would disturb other test files.
const cp = await startControlPlane(await mkdtemp(join(tmpdir(), 'esi-relist-')));
t.teardown(() => cp.stop());
const kc = new KubeConfig();
kc.loadFromFile(cp.kubeconfigPath);
await installCrds(kc);
const port = await freePort();
const { name, runId } = await registerWebhook(kc, port, t);
const webhook = await startWebhook({ kubeconfigPath: cp.kubeconfigPath, namespace: await createNamespace(kc, 'esi-system', t), configName: name, port });
t.teardown(() => webhook.stop());
await waitForCaBundle(kc, name);
const ns = await createNamespace(kc, 'relist', t, { 'esi-test-run': runId });
const custom = kc.makeApiClient(CustomObjectsApi);
const core = kc.makeApiClient(CoreV1Api);

async function createExternalSecret(esName: string) {
  await custom.createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural: 'externalsecrets', body: {
    apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: esName },
    spec: { secretStoreRef: { name: 'k8s' }, data: [{ secretKey: 'k', remoteRef: { key: 'db', property: 'k' } }] } } });
}

/** Creates a pod for `esName`, retrying while the webhook has not seen it yet. */
async function podInjected(podName: string, esName: string, timeoutMs: number): Promise<{ injected: boolean; lastError: string }> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  for (let i = 0; Date.now() < deadline; i++) {
    try {
      const pod = await core.createNamespacedPod({ namespace: ns, body: {
        metadata: { name: `${podName}-${i}`, labels: { 'esi.dev/inject': 'true' }, annotations: { 'esi.dev/secrets': esName } },
        spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] } } });
      return { injected: !!pod.spec!.initContainers?.some((c) => c.name === 'esi-agent'), lastError };
    } catch (err) {
      lastError = String((err as { body?: string }).body ?? err);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  return { injected: false, lastError };
}

await custom.createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural: 'secretstores', body: {
  apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'k8s' },
  spec: { provider: { kubernetes: { remoteNamespace: ns, auth: { serviceAccount: { name: 'default' } } } } } } });
await createExternalSecret('before');

t.test('before the restart the webhook sees new ExternalSecrets', async (t) => {
  const r = await podInjected('before', 'before', 15_000);
  t.ok(r.injected, `pod injected (last refusal: ${r.lastError || 'none'})`);
});

t.test('after an apiserver restart the caches rewatch and see objects created since', async (t) => {
  await cp.restartApiserver();
  await createExternalSecret('after');
  const r = await podInjected('after', 'after', 60_000);
  // The ExternalSecret exists only since the restart: the webhook can know it only through
  // a watch (or relist) that survived the broken connection.
  t.ok(r.injected, `pod for an ExternalSecret created after the restart was injected (last refusal: ${r.lastError || 'none'})`);
});
