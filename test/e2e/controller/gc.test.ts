// creationPolicy Owner through the real garbage collector (kube-controller-manager on the
// local control plane): deleting the ExternalSecret deletes its Secret; Orphan keeps it.
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, decoded, externalSecret, fakeStore, getSecret, ready, startController, until } from '../../support/fixtures/controller.js';

const env = await controllerEnv(t, { controllers: ['garbage-collector-controller'] });
const ns = await createNamespace(env.kc, 'ctl-gc', t);
await create(env, ns, 'secretstores', fakeStore('fake', env.cls, [{ key: 'k', value: 'v' }]));
await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false'], t);
const del = (name: string) => env.custom.deleteNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural: 'externalsecrets', name });

t.test('delete the ExternalSecret: Owner → the Secret is collected; Orphan → it stays', async (t) => {
  const one = { data: [{ secretKey: 'v', remoteRef: { key: 'k' } }] };
  await create(env, ns, 'externalsecrets', externalSecret('owned', 'fake', one));
  await create(env, ns, 'externalsecrets', externalSecret('orphan', 'fake', { ...one, target: { creationPolicy: 'Orphan' } }));
  await ready(env, ns, 'owned', 'True');
  await ready(env, ns, 'orphan', 'True');
  await del('owned');
  await del('orphan');
  await until('the owned Secret is garbage-collected', async () => !(await getSecret(env, ns, 'owned')), 60_000);
  await new Promise((r) => setTimeout(r, 2000));
  t.same(decoded(await getSecret(env, ns, 'orphan')), { v: 'v' }, 'the Orphan Secret outlives its ExternalSecret');
});
