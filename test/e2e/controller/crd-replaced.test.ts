// The controller's caches after their CRD is replaced: on a private control plane (deleting a
// CRD would disturb other test files), a ClusterSecretStore created after the CRD was
// deleted and created again, and after it was replaced with a changed schema, reaches the
// cache; and the restart delays of src/kube/informer.ts start short and stay bounded.
import { ApiextensionsV1Api, CustomObjectsApi, KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import { installCrds, loadCrds } from '../../../src/api/crds.js';
import { Informers } from '../../../src/controller/runtime/informers.js';
import { restartDelay } from '../../../src/kube/informer.js';
import { KubeRest } from '../../../src/kube/rest.js';
import { startControlPlane } from '../../support/platform/control-plane-process.js';
import { until } from '../../support/fixtures/controller.js';

t.test('restart delays: 200 ms first, doubling, at most 5 s', async (t) => {
  t.same([1, 2, 3, 4, 5, 6, 7, 50].map(restartDelay), [200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
});

const cp = await startControlPlane(await mkdtemp(join(tmpdir(), 'esi-crd-replaced-')));
t.teardown(() => cp.stop());
const kc = new KubeConfig();
kc.loadFromFile(cp.kubeconfigPath);
await installCrds(kc);
const seen = new Set<string>();
const rest = new KubeRest(kc);
const handler = (_kind: string, o: KubernetesObject) => seen.add(`${o.kind}/${o.metadata?.name}`);
const informers = new Informers(kc, rest, { add: handler, update: handler, delete: () => undefined }, { logger: pino({ level: 'silent' }) });
await informers.start();
t.teardown(async () => {
  await informers.stop();
  rest.close();
});
const custom = kc.makeApiClient(CustomObjectsApi);
const CRD = 'clustersecretstores.external-secrets.io';

async function createStore(name: string): Promise<void> {
  await until(`ClusterSecretStore ${name} created`, async () => {
    await custom.createClusterCustomObject({ group: 'external-secrets.io', version: 'v1', plural: 'clustersecretstores',
      body: { apiVersion: 'external-secrets.io/v1', kind: 'ClusterSecretStore', metadata: { name }, spec: { provider: { fake: { data: [] } } } } });
    return true;
  });
}

t.test('a store created after the CRD was deleted and created again reaches the cache', async (t) => {
  await createStore('before');
  await until('store "before" cached', async () => seen.has('ClusterSecretStore/before'));
  const api = kc.makeApiClient(ApiextensionsV1Api);
  await api.deleteCustomResourceDefinition({ name: CRD });
  await until('CRD gone', async () => api.readCustomResourceDefinition({ name: CRD }).then(() => false, () => true));
  await installCrds(kc);
  await createStore('after');
  await until('store "after" cached', async () => seen.has('ClusterSecretStore/after'));
  t.ok(informers.clusterSecretStore('after'), 'the controller finds the new store');
  t.notOk(informers.clusterSecretStore('before'), 'the store deleted with its CRD left the cache');
});

t.test('a store created after the CRD was replaced with a changed schema reaches the cache', async (t) => {
  const crds = await loadCrds();
  for (const c of crds) (c.spec.versions[0]!.schema!.openAPIV3Schema as { description?: string }).description = 'changed';
  await installCrds(kc, { onlyIfAbsent: false, crds });
  await createStore('changed');
  await until('store "changed" cached', async () => seen.has('ClusterSecretStore/changed'));
  t.ok(informers.clusterSecretStore('changed'));
});
