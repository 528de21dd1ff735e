// The reconciler on the real control plane with the fake store: ExternalSecret → Secret
// contents, metadata and ownership; status, Events; templates; dataFrom; a changed value
// reaches the Secret; a hand edit is repaired; force-sync; canaries never leak.
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, decoded, externalSecret, fakeStore, getSecret, patchSpec, ready, startController, until } from '../../support/fixtures/controller.js';

const CANARY = 'ctl-canary-5e0a41';
const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'ctl-sync', t);
await create(env, ns, 'secretstores', fakeStore('fake', env.cls, [
  { key: 'db', value: JSON.stringify({ username: 'orders', password: `${CANARY}-pw` }) },
  { key: 'api-token', value: `${CANARY}-token` },
  { key: 'app/one', value: `${CANARY}-one` },
  { key: 'app/two', value: `${CANARY}-two` },
]));
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s'], t);

t.test('creationPolicy Owner (default): data, type, labels, annotations, ownerReference, status, Event', async (t) => {
  await create(env, ns, 'externalsecrets', externalSecret('db', 'fake', {
    data: [
      { secretKey: 'username', remoteRef: { key: 'db', property: 'username' } },
      { secretKey: 'password', remoteRef: { key: 'db', property: 'password' } },
    ],
  }));
  const es = await ready(env, ns, 'db', 'True', 'SecretSynced');
  const s = (await getSecret(env, ns, 'db'))!;
  t.same(decoded(s), { username: 'orders', password: `${CANARY}-pw` });
  t.match(s, {
    type: 'Opaque',
    metadata: {
      labels: { 'esi.dev/managed': 'true', 'esi.dev/store': 'fake', 'esi.dev/store-kind': 'SecretStore' },
      annotations: { 'esi.dev/data-hash': /^[0-9a-f]{40}$/, 'esi.dev/external-secret': 'db', 'esi.dev/source-store': 'SecretStore/fake' },
      ownerReferences: [{ kind: 'ExternalSecret', name: 'db', uid: es.metadata.uid, controller: true }],
    },
  });
  t.match(es.status, { binding: { name: 'db' }, refreshTime: String, syncedResourceVersion: /^1-/, conditions: [{ message: /SecretStore "[^"]+\/fake"/ }] });
  const events = await until('Created event', async () => {
    const list = await env.core.listNamespacedEvent({ namespace: ns });
    return list.items.find((e) => e.involvedObject.name === 'db' && e.reason === 'Created');
  });
  t.match(events.message, /Created Secret "db"/);
});

t.test('target name, template (handlebars opt-in), dataFrom extract/find/rewrite, Orphan', async (t) => {
  await create(env, ns, 'externalsecrets', externalSecret('tpl', 'fake', {
    target: {
      name: 'rendered', creationPolicy: 'Orphan',
      template: { type: 'kubernetes.io/basic-auth', metadata: { labels: { team: 'orders' }, annotations: { note: 'hi' } },
        data: { username: '{{username}}', password: '{{password}}', dsn: 'postgres://{{username}}@db' } },
    },
    dataFrom: [{ extract: { key: 'db' } }],
  }, { annotations: { 'esi.dev/template-engine': 'handlebars' } }));
  await ready(env, ns, 'tpl', 'True');
  const s = await getSecret(env, ns, 'rendered');
  t.equal(s?.type, 'kubernetes.io/basic-auth');
  t.same(decoded(s), { username: 'orders', password: `${CANARY}-pw`, dsn: 'postgres://orders@db' });
  t.equal(s?.metadata?.labels?.team, 'orders');
  t.equal(s?.metadata?.annotations?.note, 'hi');
  t.notOk(s?.metadata?.ownerReferences?.length, 'Orphan: no ownerReference');

  await create(env, ns, 'externalsecrets', externalSecret('found', 'fake', {
    dataFrom: [{ find: { name: { regexp: '^app/' } }, rewrite: [{ regexp: { source: '^app/(.*)$', target: 'app_$1' } }] }],
  }));
  await ready(env, ns, 'found', 'True');
  t.same(decoded(await getSecret(env, ns, 'found')), { app_one: `${CANARY}-one`, app_two: `${CANARY}-two` });
});

t.test('a Go template (ESO engine v2) renders into the Secret; a syntax error is Ready=False naming the line', async (t) => {
  await create(env, ns, 'externalsecrets', externalSecret('gotpl', 'fake', {
    target: { template: { data: { pw: '{{ .password | upper }}' } } },
    dataFrom: [{ extract: { key: 'db' } }],
  }));
  await ready(env, ns, 'gotpl', 'True');
  t.same(decoded(await getSecret(env, ns, 'gotpl')), { pw: `${CANARY}-pw`.toUpperCase() });
  await create(env, ns, 'externalsecrets', externalSecret('gotpl-bad', 'fake', {
    target: { template: { data: { pw: '{{ .password ' } } },
    dataFrom: [{ extract: { key: 'db' } }],
  }));
  const es = await ready(env, ns, 'gotpl-bad', 'False', 'InvalidSpec');
  t.match(es.status?.conditions?.[0]?.message, /target\.template\.data\.pw line 1: unclosed action/);
  t.notOk(await getSecret(env, ns, 'gotpl-bad'));
});

t.test('Merge into an existing Secret; Merge without one; None writes nothing', async (t) => {
  await env.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'shared' }, stringData: { keep: 'me' } } });
  await create(env, ns, 'externalsecrets', externalSecret('merge', 'fake', {
    target: { name: 'shared', creationPolicy: 'Merge' }, data: [{ secretKey: 'token', remoteRef: { key: 'api-token' } }],
  }));
  await ready(env, ns, 'merge', 'True');
  t.same(decoded(await getSecret(env, ns, 'shared')), { keep: 'me', token: `${CANARY}-token` });

  await create(env, ns, 'externalsecrets', externalSecret('merge-missing', 'fake', {
    target: { creationPolicy: 'Merge' }, data: [{ secretKey: 'token', remoteRef: { key: 'api-token' } }],
  }));
  // Not a failure (ESO): the keys are merged once the Secret exists.
  const es = await ready(env, ns, 'merge-missing', 'True', 'SecretMissing');
  t.match(es.status?.conditions?.[0]?.message, /does not exist; creationPolicy Merge/);

  await create(env, ns, 'externalsecrets', externalSecret('none', 'fake', {
    target: { creationPolicy: 'None' }, data: [{ secretKey: 'token', remoteRef: { key: 'api-token' } }],
  }));
  await ready(env, ns, 'none', 'True');
  t.notOk(await getSecret(env, ns, 'none'));
});

t.test('a Secret of another ExternalSecret, or one ESI does not manage, is never taken over', async (t) => {
  await create(env, ns, 'externalsecrets', externalSecret('thief', 'fake', {
    target: { name: 'db' }, data: [{ secretKey: 'token', remoteRef: { key: 'api-token' } }],
  }));
  const es = await ready(env, ns, 'thief', 'False', 'SecretConflict');
  t.match(es.status?.conditions?.[0]?.message, /owned by ExternalSecret "db"/);
  t.same(Object.keys(decoded(await getSecret(env, ns, 'db'))).sort(), ['password', 'username']);

  await env.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'handmade' }, stringData: { a: 'b' } } });
  await create(env, ns, 'externalsecrets', externalSecret('handmade', 'fake', { data: [{ secretKey: 'token', remoteRef: { key: 'api-token' } }] }));
  const es2 = await ready(env, ns, 'handmade', 'False', 'SecretConflict');
  t.match(es2.status?.conditions?.[0]?.message, /not managed by ESI/);
  t.same(decoded(await getSecret(env, ns, 'handmade')), { a: 'b' });
});

t.test('a hand-edited managed Secret is repaired; a deleted one recreated', async (t) => {
  const s = (await getSecret(env, ns, 'db'))!;
  s.data = { ...s.data, password: Buffer.from('tampered').toString('base64') };
  await env.core.replaceNamespacedSecret({ namespace: ns, name: 'db', body: s });
  await until('repair', async () => decoded(await getSecret(env, ns, 'db')).password === `${CANARY}-pw`);
  await env.core.deleteNamespacedSecret({ namespace: ns, name: 'db' });
  await until('recreate', async () => decoded(await getSecret(env, ns, 'db')).password === `${CANARY}-pw`);
  t.pass('repaired and recreated');
});

t.test('a changed remote value reaches the Secret; force-sync refreshes', async (t) => {
  await patchSpec(env, ns, 'secretstores', 'fake', (o) => {
    const data = (o.spec as { provider: { fake: { data: { key: string; value: string }[] } } }).provider.fake.data;
    data.find((d) => d.key === 'api-token')!.value = `${CANARY}-token-2`;
  });
  await until('new value', async () => decoded(await getSecret(env, ns, 'shared')).token === `${CANARY}-token-2`);
  const before = await ctl.counter('esi_controller_provider_calls_total');
  await patchSpec(env, ns, 'externalsecrets', 'found', (o) => {
    (o.metadata as { annotations?: Record<string, string> }).annotations = { 'force-sync': String(Date.now()) };
  });
  await until('force-sync provider call', async () => (await ctl.counter('esi_controller_provider_calls_total')) > before);
  t.pass('changed value and force-sync');
});

t.test('no canary in status, Events, logs or metrics', async (t) => {
  const list = await env.custom.listNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural: 'externalsecrets' });
  const events = await env.core.listNamespacedEvent({ namespace: ns });
  for (const [what, text] of [['status', JSON.stringify(list)], ['events', JSON.stringify(events)], ['logs', ctl.output()], ['metrics', await ctl.metrics()]] as const) {
    t.notOk(text.includes(CANARY), `no canary in ${what}`);
  }
});
