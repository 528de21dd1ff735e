// PushSecret on the real control plane with the `kubernetes` provider: the remote store
// is another namespace, read back directly through the API. Push, update within one
// refresh, idle refresh without remote writes, IfNotExists, a foreign entry left alone,
// properties into one remote secret, whole-Secret pushes, label-selected Secrets and
// stores, deletionPolicy Delete/None (finalizer, source deleted, entry removed), the loop
// refusal, bad PushSecrets, and canaries kept out of status, Events, logs and metrics.
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, externalSecret, fakeStore, patchSpec, ready, startController, until } from '../../support/fixtures/controller.js';
import { createPush, deletePush, getPush, kubernetesStore, patchPush, pushReady, putSecret, remoteData } from '../../support/fixtures/push.js';
import { READ_ONLY_PROVIDER } from '../../support/standins/readonly-provider.js';

const CANARY = 'push-canary-3f9c1d';
const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'push', t);
const k8s = await kubernetesStore(env, t, ns, 'remote', { tier: 'sink' });
const k8s2 = await kubernetesStore(env, t, ns, 'remote2', { tier: 'sink' });
const remote = k8s.remote;
await create(env, ns, 'secretstores', k8s.store);
await create(env, ns, 'secretstores', k8s2.store);
await putSecret(env, ns, 'db', { username: 'orders', password: `${CANARY}-pw` });
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s'], t, { imports: ['test/support/standins/readonly-provider.ts'] });
const written = () => ctl.counter('esi_controller_push_entries_total', { result: 'written' });

t.test('push properties into one remote Secret; status and Event; update within one refresh; idle refresh writes nothing', async (t) => {
  await createPush(env, ns, 'db', {
    secretStoreRefs: [{ name: 'remote', kind: 'SecretStore' }],
    selector: { secret: { name: 'db' } },
    data: [
      { match: { secretKey: 'username', remoteRef: { remoteKey: 'db-copy', property: 'user' } } },
      { match: { secretKey: 'password', remoteRef: { remoteKey: 'db-copy', property: 'pass' } } },
    ],
  });
  const ps = await pushReady(env, ns, 'db', 'True', 'Synced');
  t.same(await remoteData(env, remote, 'db-copy'), { user: 'orders', pass: `${CANARY}-pw` });
  t.same(Object.keys(ps.status?.syncedPushSecrets?.['SecretStore/remote'] ?? {}).sort(), ['db-copy/pass', 'db-copy/user']);
  t.ok(ps.status?.refreshTime);
  t.match(ps.status?.syncedResourceVersion, /^1-/);
  const ev = await until('Synced event', async () => (await env.core.listNamespacedEvent({ namespace: ns })).items.find((e) => e.involvedObject.name === 'db' && e.involvedObject.kind === 'PushSecret' && e.reason === 'Synced'));
  t.match(ev.message, /in sync in SecretStore/);

  await putSecret(env, ns, 'db', { username: 'orders', password: `${CANARY}-pw2` });
  await until('updated remote value', async () => (await remoteData(env, remote, 'db-copy'))?.pass === `${CANARY}-pw2`, 45_000);

  // Idle refreshes (every 2s): the remote is read and found equal, nothing is written.
  await new Promise((r) => setTimeout(r, 1500));
  const before = await written();
  const equalBefore = await ctl.counter('esi_controller_push_skipped_equal_total');
  await new Promise((r) => setTimeout(r, 5000));
  t.equal(await written(), before, 'no remote write on idle refreshes');
  t.ok((await ctl.counter('esi_controller_push_skipped_equal_total')) >= equalBefore + 2, 'equal values counted');
});

t.test('whole Secret as one JSON value; label-selected stores (fan-out)', async (t) => {
  await createPush(env, ns, 'whole', {
    secretStoreRefs: [{ labelSelector: { matchLabels: { tier: 'sink' } }, kind: 'SecretStore' }],
    selector: { secret: { name: 'db' } },
    data: [{ match: { remoteRef: { remoteKey: 'bundle', property: 'all' } } }],
  });
  await pushReady(env, ns, 'whole', 'True', 'Synced');
  for (const r of [k8s.remote, k8s2.remote]) {
    const got = await remoteData(env, r, 'bundle');
    t.same(JSON.parse(got?.all ?? '{}'), { username: 'orders', password: `${CANARY}-pw2` }, `whole Secret in ${r}`);
  }
});

t.test('IfNotExists keeps an existing entry; Replace does not overwrite an entry ESI did not write', async (t) => {
  await putSecret(env, remote, 'preset', { v: 'theirs' });
  await createPush(env, ns, 'ifnot', {
    secretStoreRefs: [{ name: 'remote' }], selector: { secret: { name: 'db' } }, updatePolicy: 'IfNotExists',
    data: [
      { match: { secretKey: 'username', remoteRef: { remoteKey: 'preset', property: 'v' } } },
      { match: { secretKey: 'username', remoteRef: { remoteKey: 'fresh', property: 'v' } } },
    ],
  });
  await pushReady(env, ns, 'ifnot', 'True', 'Synced');
  t.same(await remoteData(env, remote, 'preset'), { v: 'theirs' });
  t.same(await remoteData(env, remote, 'fresh'), { v: 'orders' });

  await createPush(env, ns, 'clobber', {
    secretStoreRefs: [{ name: 'remote' }], selector: { secret: { name: 'db' } },
    data: [{ match: { secretKey: 'username', remoteRef: { remoteKey: 'preset', property: 'v' } } }],
  });
  const ps = await pushReady(env, ns, 'clobber', 'False', 'Errored');
  t.match(ps.status?.conditions?.[0]?.message, /entry "preset\/v": the remote entry exists and was not written by this PushSecret/);
  t.same(await remoteData(env, remote, 'preset'), { v: 'theirs' });
});

t.test('label-selected source Secrets, one remote entry per Secret; an unselected Secret is removed (Delete)', async (t) => {
  await putSecret(env, ns, 'conn-a', { url: 'postgres://a' }, { app: 'db' });
  await putSecret(env, ns, 'conn-b', { url: 'postgres://b' }, { app: 'db' });
  await createPush(env, ns, 'conns', {
    secretStoreRefs: [{ name: 'remote' }], deletionPolicy: 'Delete',
    selector: { secret: { selector: { matchLabels: { app: 'db' } } } },
    data: [{ match: { secretKey: 'url', remoteRef: { remoteKey: 'pub-{{ .Name }}', property: 'url' } } }],
  });
  await pushReady(env, ns, 'conns', 'True', 'Synced');
  t.same(await remoteData(env, remote, 'pub-conn-a'), { url: 'postgres://a' });
  t.same(await remoteData(env, remote, 'pub-conn-b'), { url: 'postgres://b' });
  await putSecret(env, ns, 'conn-b', { url: 'postgres://b' }, { app: 'other' });
  await until('pub-conn-b removed', async () => !(await remoteData(env, remote, 'pub-conn-b')), 45_000);
  t.same(await remoteData(env, remote, 'pub-conn-a'), { url: 'postgres://a' });
});

t.test('deletionPolicy Delete: removed entry, deleted source, deleted PushSecret remove exactly what was written', async (t) => {
  await putSecret(env, remote, 'del-foreign', { x: 'keep' });
  await putSecret(env, ns, 'tmp', { a: 'A', b: 'B' });
  await createPush(env, ns, 'del', {
    secretStoreRefs: [{ name: 'remote' }], deletionPolicy: 'Delete', selector: { secret: { name: 'tmp' } },
    data: [
      { match: { secretKey: 'a', remoteRef: { remoteKey: 'del', property: 'a' } } },
      { match: { secretKey: 'b', remoteRef: { remoteKey: 'del', property: 'b' } } },
    ],
  });
  await pushReady(env, ns, 'del', 'True', 'Synced');
  t.same((await getPush(env, ns, 'del'))?.metadata.finalizers, ['esi.dev/pushsecret-cleanup']);
  t.same(await remoteData(env, remote, 'del'), { a: 'A', b: 'B' });
  await patchPush(env, ns, 'del', (o) => void o.spec.data!.pop());
  await until('entry b removed', async () => JSON.stringify(await remoteData(env, remote, 'del')) === JSON.stringify({ a: 'A' }), 45_000);

  await env.core.deleteNamespacedSecret({ namespace: ns, name: 'tmp' });
  const ps = await pushReady(env, ns, 'del', 'False', 'SourceDeleted', { ms: 45_000 });
  t.match(ps.status?.conditions?.[0]?.message, /Secret "[^"]+\/tmp" was deleted; removed the 1 remote entries/);
  t.notOk(await remoteData(env, remote, 'del'), 'remote entry gone with its source');

  await putSecret(env, ns, 'tmp', { a: 'A2' });
  await until('pushed again', async () => (await remoteData(env, remote, 'del'))?.a === 'A2', 45_000);
  await deletePush(env, ns, 'del');
  await until('PushSecret gone (finalizer done)', async () => !(await getPush(env, ns, 'del')));
  t.notOk(await remoteData(env, remote, 'del'), 'remote entry deleted with the PushSecret');
  t.same(await remoteData(env, remote, 'del-foreign'), { x: 'keep' }, 'foreign entry with the same prefix survives');
});

t.test('deletionPolicy None leaves remote entries', async (t) => {
  await createPush(env, ns, 'keep', {
    secretStoreRefs: [{ name: 'remote' }], selector: { secret: { name: 'db' } },
    data: [{ match: { secretKey: 'username', remoteRef: { remoteKey: 'kept', property: 'u' } } }],
  });
  await pushReady(env, ns, 'keep', 'True');
  t.notOk((await getPush(env, ns, 'keep'))?.metadata.finalizers?.length, 'no finalizer');
  await deletePush(env, ns, 'keep');
  await until('PushSecret gone', async () => !(await getPush(env, ns, 'keep')));
  t.same(await remoteData(env, remote, 'kept'), { u: 'orders' });
});

t.test('loop refusal: a Secret made by an ExternalSecret is not pushed back into its store', async (t) => {
  await create(env, ns, 'secretstores', fakeStore('fake', env.cls, [{ key: 'token', value: `${CANARY}-tok` }]));
  await create(env, ns, 'externalsecrets', externalSecret('from-fake', 'fake', { data: [{ secretKey: 'token', remoteRef: { key: 'token' } }] }));
  await ready(env, ns, 'from-fake', 'True');
  await createPush(env, ns, 'loop', {
    secretStoreRefs: [{ name: 'remote' }, { name: 'fake' }], selector: { secret: { name: 'from-fake' } },
    data: [{ match: { secretKey: 'token', remoteRef: { remoteKey: 'looped', property: 't' } } }],
  });
  const ps = await pushReady(env, ns, 'loop', 'False', 'Errored');
  t.match(ps.status?.conditions?.[0]?.message, /written by an ExternalSecret from SecretStore "[^"]+\/fake".*pushing it back into the store it came from is refused/);
  t.notOk(await remoteData(env, remote, 'looped'), 'nothing pushed to the other store either');
  await patchPush(env, ns, 'loop', (o) => void (o.spec.secretStoreRefs = [{ name: 'remote' }]));
  await until('pushed elsewhere', async () => (await remoteData(env, remote, 'looped'))?.t === `${CANARY}-tok`);
});

t.test('bad PushSecrets end in Ready=False with a clear message, nothing pushed', async (t) => {
  const other = await createNamespace(env.kc, 'push-other', t);
  await create(env, other, 'secretstores', fakeStore('elsewhere', env.cls, []));
  await create(env, undefined, 'clustersecretstores', fakeStore(`${env.cls}-css`, env.cls, [], 'ClusterSecretStore', { conditions: [{ namespaces: ['nobody'] }] }));
  // A store whose provider cannot write (the test-only provider of readonly-provider.ts).
  await create(env, ns, 'secretstores', { kind: 'SecretStore', metadata: { name: 'read-only' }, spec: { controller: env.cls, provider: { [READ_ONLY_PROVIDER]: { host: 'unused' } } } });
  const cases: [string, object, RegExp][] = [
    ['missing-secret', { selector: { secret: { name: 'nope' } } }, /Secret "[^"]+\/nope" not found/],
    ['missing-key', { data: [{ match: { secretKey: 'nokey', remoteRef: { remoteKey: 'bad1', property: 'x' } } }] }, /secretKey "nokey" is not a key of Secret "db"/],
    ['other-ns-store', { secretStoreRefs: [{ name: 'elsewhere' }] }, /SecretStore "[^"]+\/elsewhere" not found/],
    ['css-conditions', { secretStoreRefs: [{ name: `${env.cls}-css`, kind: 'ClusterSecretStore' }] }, /may not be used from namespace "[^"]+": its spec.conditions do not admit/],
    ['go-template', { template: { engineVersion: 'v2', data: { x: '{{ .username | nosuchfunc }}' } } }, /nosuchfunc/],
    ['metadata', { data: [{ match: { secretKey: 'username', remoteRef: { remoteKey: 'bad2', property: 'x' } }, metadata: { labels: { a: 'b' } } }] }, /spec.data\[0\]\.metadata.apiVersion must be kubernetes.external-secrets.io\/v1alpha1/],
    ['read-only', { secretStoreRefs: [{ name: 'remote' }, { name: 'read-only' }] }, /SecretStore "[^"]+\/read-only" is ReadOnly \(provider "passworddepot" cannot write\)/],
  ];
  for (const [name, spec] of cases) {
    await createPush(env, ns, name, {
      secretStoreRefs: [{ name: 'remote' }], selector: { secret: { name: 'db' } },
      data: [{ match: { secretKey: 'username', remoteRef: { remoteKey: `bad-${name}`, property: 'x' } } }], ...spec,
    });
  }
  for (const [name, , msg] of cases) {
    const ps = await pushReady(env, ns, name, 'False', 'Errored');
    t.match(ps.status?.conditions?.[0]?.message, msg, name);
    t.notOk(await remoteData(env, remote, `bad-${name}`), `${name}: nothing pushed`);
  }
});

t.test('a Go template (ESO default) renders before pushing', async (t) => {
  await createPush(env, ns, 'gotpl', {
    secretStoreRefs: [{ name: 'remote' }], selector: { secret: { name: 'db' } },
    template: { data: { dsn: 'postgres://{{ .username | upper }}@db' } },
    data: [{ match: { secretKey: 'dsn', remoteRef: { remoteKey: 'rendered-go', property: 'dsn' } } }],
  });
  await pushReady(env, ns, 'gotpl', 'True');
  t.same(await remoteData(env, remote, 'rendered-go'), { dsn: 'postgres://ORDERS@db' });
});

t.test('a template renders before pushing (handlebars opt-in)', async (t) => {
  await createPush(env, ns, 'tpl', {
    secretStoreRefs: [{ name: 'remote' }], selector: { secret: { name: 'db' } },
    template: { data: { dsn: 'postgres://{{username}}:{{password}}@db' } },
    data: [{ match: { secretKey: 'dsn', remoteRef: { remoteKey: 'rendered', property: 'dsn' } } }],
  }, { annotations: { 'esi.dev/template-engine': 'handlebars' } });
  await pushReady(env, ns, 'tpl', 'True');
  t.same(await remoteData(env, remote, 'rendered'), { dsn: `postgres://orders:${CANARY}-pw2@db` });
});

t.test('a store change does not break the loop: refresh keeps working', async (t) => {
  await patchSpec(env, ns, 'secretstores', 'remote', (o) => void ((o.metadata as { labels: Record<string, string> }).labels.extra = 'x'));
  await putSecret(env, ns, 'db', { username: 'orders2', password: `${CANARY}-pw2` });
  await until('refresh after store change', async () => (await remoteData(env, remote, 'db-copy'))?.user === 'orders2', 45_000);
  t.pass();
});

t.test('no canary in status, Events, logs or metrics', async (t) => {
  const list = await env.custom.listNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1alpha1', namespace: ns, plural: 'pushsecrets' });
  const events = await env.core.listNamespacedEvent({ namespace: ns });
  for (const [what, text] of [['status', JSON.stringify(list)], ['events', JSON.stringify(events)], ['logs', ctl.output()], ['metrics', await ctl.metrics()]] as const) {
    t.notOk(text.includes(CANARY), `no canary in ${what}`);
  }
});
