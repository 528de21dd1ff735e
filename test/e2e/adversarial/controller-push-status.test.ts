// Status forgery and credential errors read as "deleted": a
// PushSecret's status is the tenant's to write (the status subresource), so it must not be
// what the controller believes it wrote. Two tenants (test/support/tenant.ts) push into a
// platform store shared through ClusterSecretStores (the gRPC reference plugin, which keeps
// no ownership mark); a victim's entries are read back from the plugin's own backend. The
// attacker forges status.syncedPushSecrets with its own client while the controller is down
// (so no in-memory record hides it), then lets the controller act on it. Then a careless
// store credential: a PushSecret whose store can no longer authenticate must keep its
// finalizer and say why, not be finalized with its entry left behind.
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import t from 'tap';
import { startPluginServer } from '../../../examples/grpc-plugin/server.js';
import type { PushSecret } from '../../../src/api/types.js';
import { GROUP, controllerEnv, create, startController, until, type RunningController } from '../../support/fixtures/controller.js';
import { remoteData } from '../../support/fixtures/push.js';
import { createNamespace, serviceAccountToken } from '../../support/kube.js';
import { createTenant, type Tenant } from '../../support/tenant.js';

const VICTIM = 'victim-value-3f0c2a';
const root = t;
const env = await controllerEnv(t);
const victim = await createTenant(env.kc, 'push-victim', t);
const attacker = await createTenant(env.kc, 'push-attacker', t);
// Plaintext: the platform's store needs no per-namespace credential, so one client serves
// every namespace a ClusterSecretStore admits (the case where a tenant could act for another).
const plugin = await startPluginServer();
t.teardown(() => plugin.stop());
const remote = (key: string) => plugin.store.get(key, '').then((b) => Buffer.from(b).toString('utf8'), () => undefined);

const V1A1 = 'v1alpha1';
const ps = (tn: Tenant, name: string) => tn.custom.getNamespacedCustomObject({ group: GROUP, version: V1A1, namespace: tn.namespace, plural: 'pushsecrets', name })
  .then((o) => o as PushSecret, () => undefined);
const readyOf = (p: PushSecret | undefined) => p?.status?.conditions?.find((c) => c.type === 'Ready');

/** Waits for the PushSecret's Ready status; the timeout names the last condition. */
async function pushed(tn: Tenant, name: string): Promise<void> {
  let last = '';
  await until(`PushSecret ${name} Ready=True`, async () => {
    const c = readyOf(await ps(tn, name));
    last = JSON.stringify(c);
    return c?.status === 'True';
  }).catch((err: Error) => Promise.reject(new Error(`${err.message}; last: ${last}`)));
}

async function push(tn: Tenant, name: string, spec: object, meta: object = {}): Promise<void> {
  await tn.custom.createNamespacedCustomObject({
    group: GROUP, version: V1A1, namespace: tn.namespace, plural: 'pushsecrets',
    body: { apiVersion: `${GROUP}/${V1A1}`, kind: 'PushSecret', metadata: { name, ...meta }, spec: { refreshInterval: '2s', ...spec } },
  });
}

/** The tenant's own status write: what the status subresource lets it do. */
async function forge(tn: Tenant, name: string, synced: Record<string, Record<string, string>>): Promise<void> {
  const cur = (await ps(tn, name))!;
  const syncedPushSecrets = Object.fromEntries(Object.entries(synced).map(([store, keys]) => [store, Object.fromEntries(Object.entries(keys).map(([key, secretKey]) =>
    [key, { match: { secretKey, remoteRef: { remoteKey: key } } }]))]));
  await tn.custom.replaceNamespacedCustomObjectStatus({ group: GROUP, version: V1A1, namespace: tn.namespace, plural: 'pushsecrets', name, body: { ...cur, status: { ...cur.status, syncedPushSecrets } } });
}

const entry = (remoteKey: string) => ({ match: { secretKey: 'password', remoteRef: { remoteKey } } });
const args = ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s'];
const shared = `${env.cls}-shared`;
const closed = `${env.cls}-closed`;
await victim.core.createNamespacedSecret({ namespace: victim.namespace, body: { metadata: { name: 'db' }, stringData: { password: VICTIM } } });
await attacker.core.createNamespacedSecret({ namespace: attacker.namespace, body: { metadata: { name: 'db' }, stringData: { password: 'attacker-value' } } });
const grpc = { grpc: { url: `http://127.0.0.1:${plugin.port}` } };
await create(env, undefined, 'clustersecretstores', { kind: 'ClusterSecretStore', metadata: { name: shared }, spec: { controller: env.cls, provider: grpc } });
await create(env, undefined, 'clustersecretstores', {
  kind: 'ClusterSecretStore', metadata: { name: closed }, spec: { controller: env.cls, provider: grpc, conditions: [{ namespaces: [victim.namespace] }] },
});
let ctl: RunningController = await startController(env.cp.kubeconfigPath, args, t);

t.test('a forged status makes the controller neither overwrite nor delete another tenant\'s entries', async (t) => {
  const css = (name: string) => [{ name, kind: 'ClusterSecretStore' }];
  await push(victim, 'mine', { secretStoreRefs: css(shared), selector: { secret: { name: 'db' } }, data: [entry('victim-one'), entry('victim-two')] });
  await push(victim, 'mine-closed', { secretStoreRefs: css(closed), selector: { secret: { name: 'db' } }, data: [entry('victim-closed')] });
  await pushed(victim, 'mine');
  await pushed(victim, 'mine-closed');
  for (const k of ['victim-one', 'victim-two', 'victim-closed']) t.equal(await remote(k), VICTIM, `${k} pushed by the victim`);
  // The victim's PushSecrets go (deletionPolicy None: the entries stay, the victim's data);
  // otherwise the victim's own refresh would push a deleted entry back and hide the deletion.
  for (const name of ['mine', 'mine-closed']) await victim.custom.deleteNamespacedCustomObject({ group: GROUP, version: V1A1, namespace: victim.namespace, plural: 'pushsecrets', name });
  await until('the victim\'s PushSecrets gone', async () => !(await ps(victim, 'mine')) && !(await ps(victim, 'mine-closed')));

  // The attacker: an overwrite the controller refuses, a PushSecret of its own, and one
  // for a store whose conditions do not even admit its namespace (with the finalizer set by itself).
  await push(attacker, 'overwrite', { secretStoreRefs: css(shared), selector: { secret: { name: 'db' } }, data: [entry('victim-one')] });
  await push(attacker, 'own', { secretStoreRefs: css(shared), deletionPolicy: 'Delete', selector: { secret: { name: 'db' } }, data: [entry('attacker-own')] });
  await push(attacker, 'final', { secretStoreRefs: css(closed), deletionPolicy: 'Delete', selector: { secret: { name: 'db' } }, data: [entry('attacker-closed')] },
    { finalizers: ['esi.dev/pushsecret-cleanup'] });
  await until('the attacker\'s PushSecrets reconciled', async () =>
    /not written by this PushSecret/.test(readyOf(await ps(attacker, 'overwrite'))?.message ?? '') &&
    readyOf(await ps(attacker, 'own'))?.status === 'True' && /do not admit/.test(readyOf(await ps(attacker, 'final'))?.message ?? ''));
  t.equal(await remote('victim-one'), VICTIM, 'no overwrite without a forged status');

  await ctl.stop();
  await forge(attacker, 'overwrite', { [`ClusterSecretStore/${shared}`]: { 'victim-one': 'password' } });
  await forge(attacker, 'own', { [`ClusterSecretStore/${shared}`]: { 'attacker-own': 'password', 'victim-two': 'password' } });
  await forge(attacker, 'final', { [`ClusterSecretStore/${closed}`]: { 'victim-closed': 'password' } });
  t.ok((await ps(attacker, 'own'))?.status?.syncedPushSecrets?.[`ClusterSecretStore/${shared}`]?.['victim-two'], 'the tenant could write the forged status');
  await attacker.custom.deleteNamespacedCustomObject({ group: GROUP, version: V1A1, namespace: attacker.namespace, plural: 'pushsecrets', name: 'final' });
  ctl = await startController(env.cp.kubeconfigPath, args, root); // it serves the next test too

  await until('the deleted PushSecret finalized', async () => !(await ps(attacker, 'final')), 60_000);
  t.equal(await remote('victim-closed'), VICTIM, 'deletion: the entry in a store the attacker may not even use is still there');
  const listed = (p: PushSecret | undefined, key: string) => !!p?.status?.syncedPushSecrets?.[`ClusterSecretStore/${shared}`]?.[key];
  await until('the forged entries acted on or dropped', async () =>
    (!listed(await ps(attacker, 'own'), 'victim-two') || (await remote('victim-two')) !== VICTIM) &&
    (!listed(await ps(attacker, 'overwrite'), 'victim-one') || (await remote('victim-one')) !== VICTIM), 60_000).catch(() => undefined);
  t.equal(await remote('victim-two'), VICTIM, 'sync: a forged entry no longer wanted is not deleted');
  t.equal(await remote('victim-one'), VICTIM, 'sync: a forged entry is not overwritten');
  t.match(readyOf(await ps(attacker, 'overwrite')), { status: 'False', message: /not written by this PushSecret/ }, 'the overwrite is still refused');
  t.notOk(listed(await ps(attacker, 'own'), 'victim-two'), 'status repeats what the controller recorded, not the forgery');
  t.equal(await remote('attacker-own'), 'attacker-value', "the attacker's own entry is untouched");
  // The record outlived the restart: deleting the PushSecret still removes what it wrote.
  await attacker.custom.deleteNamespacedCustomObject({ group: GROUP, version: V1A1, namespace: attacker.namespace, plural: 'pushsecrets', name: 'own' });
  await until('its own entry removed with it', async () => !(await ps(attacker, 'own')) && (await remote('attacker-own')) === undefined);
  t.equal(await remote('victim-two'), VICTIM, 'and only that');
});

t.test('a store credential that is gone is not "entry already deleted"', async (t) => {
  // A kubernetes store of the attacker's (here: a careless user's) namespace writing into
  // a namespace where its ServiceAccount may manage Secrets.
  const target = await createNamespace(env.kc, 'push-cred-remote', t);
  await env.core.createNamespacedServiceAccount({ namespace: target, body: { metadata: { name: 'pusher' } } });
  const rbac = env.kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({ namespace: target, body: { metadata: { name: 'pusher' }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'create', 'update', 'delete', 'patch'] }] } });
  await rbac.createNamespacedRoleBinding({ namespace: target, body: {
    metadata: { name: 'pusher' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pusher' },
    subjects: [{ kind: 'ServiceAccount', name: 'pusher', namespace: target }],
  } });
  const tn = attacker;
  await tn.core.createNamespacedSecret({ namespace: tn.namespace, body: { metadata: { name: 'remote-token' }, stringData: { token: await serviceAccountToken(env.kc, target, 'pusher') } } });
  const store = (token: string) => ({
    apiVersion: `${GROUP}/v1`, kind: 'SecretStore', metadata: { name: 'kube' },
    spec: { controller: env.cls, provider: { kubernetes: { remoteNamespace: target, server: { url: env.cp.server, caBundle: Buffer.from(env.cp.caPem).toString('base64') }, auth: { token: { bearerToken: { name: token, key: 'token' } } } } } },
  });
  await tn.custom.createNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: tn.namespace, plural: 'secretstores', body: store('remote-token') });
  await push(tn, 'careless', { secretStoreRefs: [{ name: 'kube' }], deletionPolicy: 'Delete', selector: { secret: { name: 'db' } }, data: [{ match: { secretKey: 'password', remoteRef: { remoteKey: 'careless', property: 'pw' } } }] });
  await pushed(tn, 'careless');
  t.same(await remoteData(env, target, 'careless'), { pw: 'attacker-value' });

  // The store now names a credential Secret that does not exist; then the PushSecret goes.
  const cur = (await tn.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: tn.namespace, plural: 'secretstores', name: 'kube' })) as { metadata: object };
  await tn.custom.replaceNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: tn.namespace, plural: 'secretstores', name: 'kube', body: { ...store('no-such-token'), metadata: cur.metadata } });
  await tn.custom.deleteNamespacedCustomObject({ group: GROUP, version: V1A1, namespace: tn.namespace, plural: 'pushsecrets', name: 'careless' });
  const left = await until('the PushSecret says why it cannot finish', async () => {
    const p = await ps(tn, 'careless');
    return !p ? 'finalized' : /deleting:.*no-such-token/.test(readyOf(p)?.message ?? '') ? p : undefined;
  }, 60_000);
  t.not(left, 'finalized', 'the finalizer stays');
  t.match(readyOf(left as PushSecret), { status: 'False', message: /credential Secret "[^"]+\/no-such-token"/ }, 'status names the credential');
  t.same(await remoteData(env, target, 'careless'), { pw: 'attacker-value' }, 'the remote entry is still there (nothing was reported as deleted)');

  // Fixed credential: the deletion completes and removes the entry.
  const again = (await tn.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: tn.namespace, plural: 'secretstores', name: 'kube' })) as { metadata: object };
  await tn.custom.replaceNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: tn.namespace, plural: 'secretstores', name: 'kube', body: { ...store('remote-token'), metadata: again.metadata } });
  await until('finalized once the credential is back', async () => !(await ps(tn, 'careless')), 90_000);
  t.notOk(await remoteData(env, target, 'careless'), 'and the remote entry is deleted');
});

t.test('status, Events and logs carry no value', async (t) => {
  const events = JSON.stringify(await env.core.listNamespacedEvent({ namespace: attacker.namespace }));
  for (const [what, text] of [['events', events], ['logs', ctl.output()]] as const) t.notOk(text.includes(VICTIM), `no victim value in ${what}`);
});
