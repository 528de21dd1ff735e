// A namespace's deletion is never held by a PushSecret finalizer whose credential the same
// deletion removed, and a remote entry is never reported deleted when it was not
// (docs/pushsecret.md "A namespace's deletion"). On the real apiserver with
// kube-controller-manager's namespace controller, as a tenant: a ClusterSecretStore (the
// `kubernetes` provider, its remote side another namespace of the same apiserver) whose
// credential reference resolves to the tenant's namespace; the tenant's PushSecrets with
// deletionPolicy Delete; the credential Secret goes first. While the namespace lives, a deleted
// PushSecret keeps its finalizer and says why; `kubectl delete namespace` then completes, the
// entries stay in the store, and what was left is named in a Warning Event on the
// ClusterSecretStore, the controller's log and a counter — never a value.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { createTenant } from '../../support/tenant.js';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, GROUP, startController, until } from '../../support/fixtures/controller.js';
import { getPush, kubernetesStore, pushReady, remoteData } from '../../support/fixtures/push.js';

const CANARY = `nsdel-canary-${randomBytes(4).toString('hex')}`;
const env = await controllerEnv(t, { controllers: ['namespace-controller'] });
const run = randomBytes(3).toString('hex');
const tenant = await createTenant(env.kc, 'push-nsdel', t);
const ns = tenant.namespace;
// The store's remote side and its ServiceAccount token, made by the operator elsewhere.
const scratch = await createNamespace(env.kc, 'push-nsdel-op', t);
const k8s = await kubernetesStore(env, t, scratch, 'nsk8s');
const token = Buffer.from((await env.core.readNamespacedSecret({ namespace: scratch, name: 'nsk8s-token' })).data!.token!, 'base64').toString('utf8');
const storeName = `nsk8s-${run}`;
const storeId = `ClusterSecretStore/${storeName}`;
// A ClusterSecretStore's credential reference without a namespace is read in the namespace
// of the object using it: here the tenant's, which the tenant fills and its deletion empties.
await create(env, undefined, 'clustersecretstores', { ...k8s.store, kind: 'ClusterSecretStore', metadata: { name: storeName } });
t.teardown(() => env.custom.deleteClusterCustomObject({ group: GROUP, version: 'v1', plural: 'clustersecretstores', name: storeName }).catch(() => undefined));
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '0s'], t);

const push = (name: string, remoteKey: string) => tenant.custom.createNamespacedCustomObject({
  group: GROUP, version: 'v1alpha1', namespace: ns, plural: 'pushsecrets',
  body: {
    apiVersion: `${GROUP}/v1alpha1`, kind: 'PushSecret', metadata: { name },
    spec: {
      refreshInterval: '2s', deletionPolicy: 'Delete', secretStoreRefs: [{ kind: 'ClusterSecretStore', name: storeName }],
      selector: { secret: { name: 'db' } }, data: [{ match: { secretKey: 'password', remoteRef: { remoteKey, property: 'password' } } }],
    },
  },
});

const storeEvents = async () => (await env.core.listNamespacedEvent({ namespace: 'default' })).items
  .filter((e) => e.involvedObject.kind === 'ClusterSecretStore' && e.involvedObject.name === storeName);

t.test('the namespace goes; the entries stay in the store and are named in an Event, the log and a counter', async (t) => {
  await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'nsk8s-token' }, stringData: { token } } });
  await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'db' }, stringData: { password: CANARY } } });
  await push('kept', `kept-${run}`);
  await push('db', `db-${run}`);
  await pushReady(env, ns, 'kept', 'True', 'Synced');
  await pushReady(env, ns, 'db', 'True', 'Synced');
  t.same(await remoteData(env, k8s.remote, `db-${run}`), { password: CANARY }, 'pushed');

  // The credential goes first; the store cannot authenticate, which proves nothing about the entries.
  await tenant.core.deleteNamespacedSecret({ namespace: ns, name: 'nsk8s-token' });
  await pushReady(env, ns, 'db', 'False', 'Errored', { message: /cannot read the store's credential Secret/ });

  // Outside a Terminating namespace a deleted PushSecret keeps its finalizer and retries.
  await tenant.custom.deleteNamespacedCustomObject({ group: GROUP, version: 'v1alpha1', namespace: ns, plural: 'pushsecrets', name: 'kept' });
  const held = await pushReady(env, ns, 'kept', 'False', 'Errored', { message: /^deleting: .*cannot read the store's credential Secret/ });
  t.ok(held.metadata.deletionTimestamp && held.metadata.finalizers?.includes('esi.dev/pushsecret-cleanup'), 'the finalizer stays while the namespace lives');
  t.same(await remoteData(env, k8s.remote, `kept-${run}`), { password: CANARY }, 'and the entry is not reported deleted (it is there)');
  t.equal(await ctl.counter('esi_controller_push_entries_left_total', { store: storeId }), 0, 'nothing counted as left yet');

  // `kubectl delete namespace`: the namespace controller deletes the PushSecrets; nothing can
  // bring the credential back, so the finalizers go and the namespace with them.
  await env.core.deleteNamespace({ name: ns });
  await until(`namespace ${ns} deleted`, () => env.core.readNamespace({ name: ns }).then(() => undefined, (e: { code?: number }) => e.code === 404 || undefined), 120_000);
  t.notOk(await getPush(env, ns, 'db'), 'the PushSecrets are gone');

  t.same(await remoteData(env, k8s.remote, `db-${run}`), { password: CANARY }, 'the remote entries stay: never reported deleted when they were not');
  t.same(await remoteData(env, k8s.remote, `kept-${run}`), { password: CANARY });
  const events = await until('DeleteSkipped Events on the ClusterSecretStore', async () => {
    const found = (await storeEvents()).filter((e) => e.reason === 'DeleteSkipped' && e.type === 'Warning');
    return found.length >= 2 ? found : undefined;
  }, 30_000);
  for (const [name, key] of [['db', `db-${run}/password`], ['kept', `kept-${run}/password`]] as const) {
    const ev = events.find((e) => e.message?.includes(`PushSecret "${ns}/${name}"`));
    t.match(ev?.message, `the deletion of namespace "${ns}" removed what ClusterSecretStore "${storeName}" authenticates with; 1 remote entry of PushSecret "${ns}/${name}" left in ClusterSecretStore "${storeName}", not deleted: "${key}"`, `the Event names ${key}`);
  }
  t.equal(await ctl.counter('esi_controller_push_entries_left_total', { store: storeId, reason: 'NamespaceDeleted' }), 2, 'one count per entry left');
  const logs = ctl.output();
  t.match(logs, new RegExp(`"remoteKey":"db-${run}".*remote entry left in the store, not deleted`), 'the log names the entry');
  t.notOk(logs.includes(CANARY), 'no value in the logs');
  t.notOk(events.some((e) => e.message?.includes(CANARY)), 'nor in the Events');
  t.notOk((await ctl.metrics()).includes(CANARY), 'nor in the metrics');
});
