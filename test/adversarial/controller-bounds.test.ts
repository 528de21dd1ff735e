// Bounded work for any input the tenant controls (issue 21): `refreshInterval: 1ms` used to be
// a hot loop of reconciles; the reconciler now raises any interval to its floor of 1s
// (docs/controller.md, "Refresh"), so the tenant gets at most about one reconcile a second.
// Created with the tenant's own rights, on the real apiserver.
import t from 'tap';
import { createTenant } from '../helpers/tenant.js';
import { controllerEnv, create, externalSecret, fakeStore, ready, startController, type Env } from '../controller/fixture.js';

const env = await controllerEnv(t);
const tenant = await createTenant(env.kc, 'adv-bounds', t);
const ns = tenant.namespace;
const asTenant: Env = { ...env, kc: tenant.kc, core: tenant.core, custom: tenant.custom };
await create(asTenant, ns, 'secretstores', fakeStore('fake', env.cls, [{ key: 'k', value: 'v' }]));
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false'], t);

t.test('refreshInterval 1ms is held to the floor: a handful of reconciles in 6 s, not thousands', async (t) => {
  await create(asTenant, ns, 'externalsecrets', externalSecret('hot', 'fake', { refreshInterval: '1ms', data: [{ secretKey: 'k', remoteRef: { key: 'k' } }] }));
  await ready(asTenant, ns, 'hot', 'True', 'SecretSynced');
  const before = await ctl.counter('esi_controller_syncs_total');
  await new Promise((r) => setTimeout(r, 6000));
  const reconciles = (await ctl.counter('esi_controller_syncs_total')) - before;
  t.ok(reconciles <= 12, `${reconciles} reconciles in 6 s (floor 1s: at most about 6, with slack)`);
  t.ok(reconciles >= 2, `${reconciles} reconciles in 6 s: it does refresh`);
});
