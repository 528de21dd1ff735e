// A store that never answers must not hold the reconciler's workers: every
// provider call runs under --provider-timeout, with the caller's options passed through the
// client cache. With two workers and two ExternalSecrets on the hung store, a third on a
// working store still syncs, and the hung ones fail with a Timeout naming the store.
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, externalSecret, fakeStore, ready, startController } from '../../support/fixtures/controller.js';
import { HUNG_PROVIDER } from '../../support/standins/hung-provider.js';

const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'ctl-hung', t);
await create(env, ns, 'secretstores', { kind: 'SecretStore', metadata: { name: 'hung' }, spec: { controller: env.cls, provider: { [HUNG_PROVIDER]: {} } } });
await create(env, ns, 'secretstores', fakeStore('fine', env.cls, [{ key: 'k', value: 'v' }]));
await startController(env.cp.kubeconfigPath, [
  '--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--workers', '2', '--provider-timeout', '2s',
], t, { imports: ['test/support/standins/hung-provider.ts'] });

t.test('calls to a store that never answers end at the deadline; other stores keep syncing', async (t) => {
  for (const name of ['stuck-1', 'stuck-2']) await create(env, ns, 'externalsecrets', externalSecret(name, 'hung', { data: [{ secretKey: 'k', remoteRef: { key: 'k' } }] }));
  await create(env, ns, 'externalsecrets', externalSecret('works', 'fine', { data: [{ secretKey: 'k', remoteRef: { key: 'k' } }] }));
  await ready(env, ns, 'works', 'True', 'SecretSynced');
  t.pass('the working store synced while both workers had met the hung one');
  for (const name of ['stuck-1', 'stuck-2']) {
    const es = await ready(env, ns, name, 'False', 'SecretSyncedError');
    t.match(es.status?.conditions?.find((c) => c.type === 'Ready')?.message, /SecretStore\/[^ ]+\/hung.*deadline|Timeout/, `${name}: the message says the call timed out`);
  }
});
