// spec.syncWindows in the reconciler, on the real apiserver, as a tenant: a Password generator
// gives a new value at every refresh, so a held-back refresh shows as an unchanged Secret.
// An open allow window lets refreshes through (the control case); a deny window that is open
// holds them back while force-sync still goes through; an allow window that is closed holds
// them back; a window that cannot be read is left out (refreshes go on, as ESO) and named in
// a Warning Event. The first sync is never held back.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { GENERATORS_GROUP } from '../../../src/api/types.js';
import { controllerEnv, decoded, GROUP, ready, startController, until } from '../../support/fixtures/controller.js';
import { createTenant } from '../../support/tenant.js';

const env = await controllerEnv(t);
const run = randomBytes(3).toString('hex');
// Generator-only ExternalSecrets have no store class: this controller serves the unclassed
// ones, in this test's namespace only.
const tenant = await createTenant(env.kc, 'ctl-windows', t, { 'esi-windows-run': run });
const ns = tenant.namespace;
await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--leader-elect=false', '--coalesce-window', '0s', '--namespace-selector', `esi-windows-run=${run}`], t);

await tenant.custom.createNamespacedCustomObject({ group: GENERATORS_GROUP, version: 'v1alpha1', namespace: ns, plural: 'passwords', body: {
  apiVersion: `${GENERATORS_GROUP}/v1alpha1`, kind: 'Password', metadata: { name: 'pw' }, spec: { length: 24 },
} });

async function createES(name: string, syncWindows: object): Promise<string> {
  await tenant.custom.createNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', body: {
    apiVersion: `${GROUP}/v1`, kind: 'ExternalSecret', metadata: { name },
    spec: { refreshInterval: '1s', syncWindows, dataFrom: [{ sourceRef: { generatorRef: { apiVersion: `${GENERATORS_GROUP}/v1alpha1`, kind: 'Password', name: 'pw' } } }] },
  } });
  await ready(env, ns, name, 'True', 'SecretSynced');
  const first = await password(name);
  t.equal(first.length, 24, `${name}: the first sync is not held back`);
  return first;
}
const password = async (name: string) => decoded(await tenant.core.readNamespacedSecret({ namespace: ns, name }).catch(() => undefined)).password ?? '';
const changes = (name: string, from: string) => until(`${name}: a new password at a refresh`, async () => {
  const p = await password(name);
  return p && p !== from ? p : undefined;
}, 30_000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('an open allow window lets refreshes through (the control case)', async (t) => {
  const first = await createES('open', { kind: 'allow', windows: [{ schedule: '* * * * *', duration: '1h' }] });
  t.not(await changes('open', first), first);
});

t.test('an open deny window holds refreshes back; force-sync goes through', async (t) => {
  const first = await createES('frozen', { kind: 'deny', windows: [{ schedule: '* * * * *', duration: '1h' }] });
  await sleep(6_000); // six refresh intervals
  t.equal(await password('frozen'), first, 'unchanged while the window is open');
  await tenant.custom.patchNamespacedCustomObject({
    group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'frozen',
    body: [{ op: 'add', path: '/metadata/annotations', value: { 'force-sync': String(Date.now()) } }],
  });
  const forced = await changes('frozen', first);
  await sleep(4_000);
  t.equal(await password('frozen'), forced, 'after the forced sync, held back again');
});

t.test('a closed allow window holds refreshes back', async (t) => {
  // February 30th never comes: the window never opens.
  const first = await createES('closed', { kind: 'allow', windows: [{ schedule: '0 0 30 2 *', duration: '1h' }] });
  await sleep(6_000);
  t.equal(await password('closed'), first);
});

t.test('a window that cannot be read is left out, as ESO does, and named in a Warning Event', async (t) => {
  const first = await createES('typo', { kind: 'deny', windows: [{ schedule: '* * * * *', duration: '8 hours' }] });
  t.not(await changes('typo', first), first, 'refreshes go on');
  const event = await until('the InvalidSyncWindow event', async () => {
    const list = await env.core.listNamespacedEvent({ namespace: ns });
    return list.items.find((e) => e.reason === 'InvalidSyncWindow' && e.involvedObject.name === 'typo');
  }, 30_000);
  t.equal(event.type, 'Warning');
  t.match(event.message, /spec\.syncWindows\.windows\[0\]: .*duration/);
});
