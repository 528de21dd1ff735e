// Leader election with a real Lease: one active reconciler per class; the standby does
// nothing until the leader is SIGKILLed, then takes the Lease within the lease duration
// and continues; SIGTERM releases the Lease.
import { CoordinationV1Api } from '@kubernetes/client-node';
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, decoded, externalSecret, fakeStore, getSecret, ready, startController, until } from '../../support/fixtures/controller.js';

const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'ctl-lease', t);
const LEASE_S = 4;
const args = ['--controller-class', env.cls, '--claim-unclassed=false', '--namespace', ns,
  '--lease-duration', `${LEASE_S}s`, '--renew-deadline', '3s', '--retry-period', '500ms'];
const leases = env.kc.makeApiClient(CoordinationV1Api);
const lease = () => leases.readNamespacedLease({ namespace: ns, name: `esi-controller-${env.cls}` });

t.test('SIGKILL the leader: the standby takes over within the lease duration; SIGTERM releases', async (t) => {
  const a = await startController(env.cp.kubeconfigPath, args, t);
  await until('A leads', async () => (await a.counter('esi_controller_leader')) === 1);
  const b = await startController(env.cp.kubeconfigPath, args, t);
  await create(env, ns, 'secretstores', fakeStore('fake', env.cls, [{ key: 'k', value: 'v1' }]));
  await create(env, ns, 'externalsecrets', externalSecret('first', 'fake', { data: [{ secretKey: 'v', remoteRef: { key: 'k' } }] }));
  await ready(env, ns, 'first', 'True');
  await new Promise((r) => setTimeout(r, 1500));
  t.equal(await b.counter('esi_controller_leader'), 0, 'B stands by');
  t.equal(await b.counter('esi_controller_syncs_total'), 0, 'the standby reconciled nothing while A led');
  t.match((await lease()).spec?.holderIdentity, /_\d+$/);

  const holderA = (await lease()).spec?.holderIdentity;
  await a.stop('SIGKILL');
  const killed = Date.now();
  await until('B leads', async () => (await b.counter('esi_controller_leader')) === 1, 20_000);
  const takeover = Date.now() - killed;
  t.ok(takeover <= (LEASE_S + 2) * 1000, `takeover after ${takeover} ms (lease ${LEASE_S} s, retry 0.5 s)`);
  t.not((await lease()).spec?.holderIdentity, holderA);

  await create(env, ns, 'externalsecrets', externalSecret('second', 'fake', { data: [{ secretKey: 'v', remoteRef: { key: 'k' } }] }));
  await ready(env, ns, 'second', 'True');
  t.same(decoded(await getSecret(env, ns, 'second')), { v: 'v1' }, 'B continues');

  await b.stop('SIGTERM');
  t.equal(b.child.exitCode, 0, 'clean exit on SIGTERM');
  t.equal((await lease()).spec?.holderIdentity ?? '', '', 'the Lease was released');
});

t.test('with only a kubeconfig, as on a fresh cluster: the Lease goes to the context namespace (`default`); a missing namespace fails fast, naming the flag', async (t) => {
  const cls = `${env.cls}-k`;
  // The test kubeconfig's context names no namespace, like kind's: kubectl's rule gives `default`.
  const c = await startController(env.cp.kubeconfigPath, ['--controller-class', cls, '--claim-unclassed=false', '--lease-duration', `${LEASE_S}s`, '--renew-deadline', '3s', '--retry-period', '500ms'], t);
  await until('it leads', async () => (await c.counter('esi_controller_leader')) === 1);
  t.match((await leases.readNamespacedLease({ namespace: 'default', name: `esi-controller-${cls}` })).spec?.holderIdentity, /_\d+$/, 'its Lease is in `default`');
  await c.stop();

  const missing = `absent-${env.cls}`;
  const m = await startController(env.cp.kubeconfigPath, ['--controller-class', `${cls}-m`, '--namespace', missing], undefined, { waitReady: false, createNamespace: false });
  const code = await new Promise<number | null>((r) => (m.child.exitCode !== null ? r(m.child.exitCode) : m.child.once('exit', r)));
  t.equal(code, 1, 'exits 1 (the work cannot go on)');
  t.match(m.output(), new RegExp(`namespace "${missing}" does not exist: .*create it or pass --namespace`));
  t.notMatch(m.output(), /reconciling/, 'nothing started');
});
