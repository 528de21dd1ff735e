// Bounded work for any input the tenant controls: `refreshInterval: 1ms` used to be
// a hot loop of reconciles; the reconciler now raises any interval to its floor of 1s
// (docs/controller.md, "Refresh"), so the tenant gets at most about one reconcile a second.
// Also: deletionPolicy Merge cannot strip a Secret another ExternalSecret manages, and a
// store's metrics series is removed with the store (no unbounded /metrics). Created with the
// tenant's own rights, on the real apiserver.
import t from 'tap';
import { createTenant } from '../../support/tenant.js';
import { controllerEnv, create, decoded, externalSecret, fakeStore, getSecret, ready, startController, until, type Env } from '../../support/fixtures/controller.js';

const env = await controllerEnv(t);
const tenant = await createTenant(env.kc, 'adv-bounds', t);
const ns = tenant.namespace;
const asTenant: Env = { ...env, kc: tenant.kc, core: tenant.core, custom: tenant.custom };
await create(asTenant, ns, 'secretstores', fakeStore('fake', env.cls, [{ key: 'k', value: 'v' }]));
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false'], t);

t.test('refreshInterval 1ms is held to the floor: a handful of reconciles in 6 s, not thousands', async (t) => {
  await create(asTenant, ns, 'externalsecrets', externalSecret('hot', 'fake', { refreshInterval: '1ms', data: [{ secretKey: 'k', remoteRef: { key: 'k' } }] }));
  await ready(asTenant, ns, 'hot', 'True', 'SecretSynced');
  // Let the first sync's own follow-ups (status and Secret watch events) settle first.
  await new Promise((r) => setTimeout(r, 2000));
  const before = await ctl.counter('esi_controller_syncs_total');
  await new Promise((r) => setTimeout(r, 6000));
  const reconciles = (await ctl.counter('esi_controller_syncs_total')) - before;
  // About 6 at the 1s floor; a loaded machine has shown up to 19. The old code: thousands.
  t.ok(reconciles <= 60, `${reconciles} reconciles in 6 s (floor 1s: about 6, bounded well below the hot loop's thousands)`);
  t.ok(reconciles >= 2, `${reconciles} reconciles in 6 s: it does refresh`);
});

t.test('deletionPolicy Merge never strips a Secret another ExternalSecret manages', async (t) => {
  await create(asTenant, ns, 'externalsecrets', externalSecret('owner', 'fake', { data: [{ secretKey: 'k', remoteRef: { key: 'k' } }], target: { name: 'shared' } }));
  await ready(asTenant, ns, 'owner', 'True', 'SecretSynced');
  const before = await getSecret(env, ns, 'shared');
  await create(asTenant, ns, 'externalsecrets', externalSecret('stripper', 'fake', {
    data: [{ secretKey: 'gone', remoteRef: { key: 'no-such-key' } }],
    target: { name: 'shared', creationPolicy: 'Merge', deletionPolicy: 'Merge' },
  }));
  const es = await ready(asTenant, ns, 'stripper', 'False');
  t.match(es.status?.conditions?.find((c) => c.type === 'Ready')?.message, /owned by ExternalSecret "owner"|SecretConflict|managed by/);
  await new Promise((r) => setTimeout(r, 2000));
  const after = await getSecret(env, ns, 'shared');
  t.same(decoded(after), decoded(before), 'the other ExternalSecret\'s data is untouched');
  t.same(after?.metadata?.annotations, before?.metadata?.annotations, 'and its bookkeeping');
});

t.test('a store\'s metrics series goes with the store', async (t) => {
  await create(asTenant, ns, 'secretstores', fakeStore('short-lived', env.cls, [{ key: 'k', value: 'v' }]));
  await create(asTenant, ns, 'externalsecrets', externalSecret('uses-short-lived', 'short-lived', { data: [{ secretKey: 'k', remoteRef: { key: 'k' } }] }));
  await ready(asTenant, ns, 'uses-short-lived', 'True', 'SecretSynced');
  const series = `store="SecretStore/${ns}/short-lived"`;
  t.ok((await ctl.metrics()).includes(series), 'the series exists while the store does');
  await tenant.custom.deleteNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural: 'secretstores', name: 'short-lived' });
  await until('the series removed', async () => !(await ctl.metrics()).includes(series));
  t.pass('removed');
});
