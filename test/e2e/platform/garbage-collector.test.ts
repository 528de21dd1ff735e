// kube-controller-manager's garbage collector runs against the local control plane: an
// object whose owner is deleted is deleted too, in background and foreground propagation,
// and an object whose owner still exists is kept. Reconciler tests rely on this
// ("delete the ExternalSecret → its Secret is collected").
import { CoreV1Api, type V1ConfigMap } from '@kubernetes/client-node';
import t from 'tap';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import { createNamespace } from '../../support/kube.js';

const cp = await useControlPlane(t, { controllers: ['garbage-collector-controller'] });
const core = cp.kc.makeApiClient(CoreV1Api);

async function configMap(namespace: string, name: string, owner?: V1ConfigMap): Promise<V1ConfigMap> {
  const ownerReferences = owner
    ? [{ apiVersion: 'v1', kind: 'ConfigMap', name: owner.metadata!.name!, uid: owner.metadata!.uid!, blockOwnerDeletion: true }]
    : undefined;
  return core.createNamespacedConfigMap({ namespace, body: { metadata: { name, ownerReferences }, data: { k: 'v' } } });
}

async function exists(namespace: string, name: string): Promise<boolean> {
  return core.readNamespacedConfigMap({ namespace, name }).then(() => true, (err: { code?: number }) => {
    if (err.code === 404) return false;
    throw err;
  });
}

async function gone(namespace: string, name: string, timeoutMs = 30_000): Promise<number> {
  const started = Date.now();
  while (await exists(namespace, name)) {
    if (Date.now() - started > timeoutMs) throw new Error(`ConfigMap ${namespace}/${name} still exists after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return Date.now() - started;
}

t.test('the controller-manager reports the controllers it runs', async (t) => {
  t.ok(cp.controllers.includes('garbage-collector-controller'));
});

for (const propagationPolicy of ['Background', 'Foreground'] as const) {
  t.test(`deleting the owner deletes its dependent (${propagationPolicy} propagation)`, async (t) => {
    const ns = await createNamespace(cp.kc, 'gc', t);
    const owner = await configMap(ns, 'owner');
    await configMap(ns, 'dependent', owner);
    await configMap(ns, 'bystander');
    await core.deleteNamespacedConfigMap({ namespace: ns, name: 'owner', body: { propagationPolicy } });
    const ms = await gone(ns, 'dependent');
    t.comment(`dependent collected ${ms} ms after the owner's deletion`);
    await gone(ns, 'owner');
    t.ok(await exists(ns, 'bystander'), 'an object without owner is left alone');
  });
}

t.test('a dependent whose owner exists is kept', async (t) => {
  const ns = await createNamespace(cp.kc, 'gc', t);
  const owner = await configMap(ns, 'owner');
  await configMap(ns, 'dependent', owner);
  // An owner reference to a uid that never existed is dangling: the collector deletes it.
  // Deleting a dangling one proves the collector is looking at this namespace, so the kept
  // dependent below is kept by decision, not because nothing ran yet.
  await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'orphan', ownerReferences: [
    { apiVersion: 'v1', kind: 'ConfigMap', name: 'never-existed', uid: '00000000-0000-4000-8000-000000000000' },
  ] } } });
  await gone(ns, 'orphan');
  t.ok(await exists(ns, 'dependent'), 'the dependent of a live owner is kept');
});
