// Stores as sinks (docs/pushsecret.md): connection details written by some other operator
// into a Secret are published by a label-selected PushSecret to an external store (the
// gRPC reference plugin, read back directly from its backend), and consumed in another
// namespace through an ExternalSecret. A new labelled Secret is published at the next
// refresh; deleting the PushSecret (Delete) removes what it published.
import t from 'tap';
import { generateDevPki } from '../../../examples/grpc-plugin/dev-certs.js';
import { startPluginServer } from '../../../examples/grpc-plugin/server.js';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, decoded, externalSecret, getSecret, ready, startController, until } from '../../support/fixtures/controller.js';
import { createPush, deletePush, getPush, pushReady, putSecret } from '../../support/fixtures/push.js';

const CANARY = 'sink-canary-5b7e02';
const env = await controllerEnv(t);
const producer = await createNamespace(env.kc, 'sink-db', t);
const consumer = await createNamespace(env.kc, 'sink-app', t);
const pki = await generateDevPki(['127.0.0.1', 'localhost'], 'esi-controller');
const plugin = await startPluginServer({ tls: { cert: pki.server.cert, key: pki.server.key } });
t.teardown(() => plugin.stop());
const remote = (key: string) => plugin.store.get(key, '').then((b) => JSON.parse(Buffer.from(b).toString('utf8')) as Record<string, string>, () => undefined);

// The producer and the consumer each have a SecretStore for the same plugin (as two
// teams, or two clusters, would), each with its own copy of the plugin's CA.
const storeName = 'plugin';
for (const ns of [producer, consumer]) {
  await putSecret(env, ns, 'plugin-tls', { 'ca.crt': pki.ca.cert });
  await create(env, ns, 'secretstores', {
    kind: 'SecretStore', metadata: { name: storeName },
    spec: { controller: env.cls, provider: { grpc: { url: `https://127.0.0.1:${plugin.port}`, tlsSecretRef: { name: 'plugin-tls' } } } },
  });
}
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s'], t);
// A controller of another class sees the same PushSecrets (in a cluster, or the other test
// files of a run): it must leave them, their status and their finalizer to their own.
const other = await startController(env.cp.kubeconfigPath, ['--controller-class', `${env.cls}-other`, '--claim-unclassed=false', '--leader-elect=false'], t);

t.test('a label-selected PushSecret publishes connection Secrets; another namespace consumes them', async (t) => {
  const publish = { 'connection.example.com/publish': 'true' };
  await putSecret(env, producer, 'orders-db', { host: 'orders.db.svc', password: `${CANARY}-pw` }, publish);
  await putSecret(env, producer, 'unrelated', { password: `${CANARY}-other` });
  await createPush(env, producer, 'publish-connections', {
    secretStoreRefs: [{ kind: 'SecretStore', name: storeName }], deletionPolicy: 'Delete',
    selector: { secret: { selector: { matchLabels: publish } } },
    data: [{ match: { remoteRef: { remoteKey: `connections/${producer}/{{ .Name }}` } } }],
  });
  await pushReady(env, producer, 'publish-connections', 'True', 'Synced');
  t.same(await remote(`connections/${producer}/orders-db`), { host: 'orders.db.svc', password: `${CANARY}-pw` }, 'published to the plugin store');
  t.notOk(plugin.store.keys().some((k) => k.endsWith('/unrelated')), 'an unlabelled Secret is not published');

  await create(env, consumer, 'externalsecrets', externalSecret('orders-db', storeName, {
    dataFrom: [{ extract: { key: `connections/${producer}/orders-db` } }],
  }));
  await ready(env, consumer, 'orders-db', 'True');
  t.same(decoded(await getSecret(env, consumer, 'orders-db')), { host: 'orders.db.svc', password: `${CANARY}-pw` }, 'consumed in another namespace');

  await putSecret(env, producer, 'payments-db', { host: 'payments.db.svc', password: `${CANARY}-pay` }, publish);
  await until('new Secret published at the next refresh', async () => (await remote(`connections/${producer}/payments-db`))?.host === 'payments.db.svc', 45_000);

  // Delete removes what status records: wait until the new entry is recorded there.
  await until('new entry recorded in status', async () =>
    JSON.stringify((await getPush(env, producer, 'publish-connections'))?.status?.syncedPushSecrets ?? {}).includes('payments-db'), 45_000);
  await deletePush(env, producer, 'publish-connections');
  await until('PushSecret gone', async () => !(await getPush(env, producer, 'publish-connections')));
  const left = plugin.store.keys().filter((k) => k.startsWith(`connections/${producer}/`));
  t.same(left, [], `published entries removed (deletionPolicy Delete); left: ${left.join(', ') || 'none'}`);
  const events = await env.core.listNamespacedEvent({ namespace: producer });
  t.notOk(events.items.some((e) => e.reason === 'DeleteSkipped'), 'no controller skipped the deletion');
});

t.test('no canary in status, Events, logs or metrics', async (t) => {
  const list = await env.custom.listNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1alpha1', namespace: producer, plural: 'pushsecrets' });
  const events = await env.core.listNamespacedEvent({ namespace: producer });
  for (const [what, text] of [['status', JSON.stringify(list)], ['events', JSON.stringify(events)], ['logs', ctl.output() + other.output()], ['metrics', await ctl.metrics()]] as const) {
    t.notOk(text.includes(CANARY), `no canary in ${what}`);
  }
});
