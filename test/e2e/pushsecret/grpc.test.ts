// PushSecret into the gRPC reference plugin (examples/grpc-plugin), read back directly from
// the plugin's backend: the shared scenario of push-matrix.ts (label-selected Secrets and
// stores, properties and whole Secrets, update within one refresh, idle = no write,
// IfNotExists, None) and deletionPolicy Delete of a named Secret's entries while a foreign
// entry with the same prefix survives.
import t from 'tap';
import { generateDevPki } from '../../../examples/grpc-plugin/dev-certs.js';
import { startPluginServer } from '../../../examples/grpc-plugin/server.js';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, startController, until } from '../../support/fixtures/controller.js';
import { createPush, deletePush, getPush, pushReady, putSecret } from '../../support/fixtures/push.js';
import { pushMatrix } from '../../support/cases/push-matrix.js';

const CANARY = 'pushgrpc-canary-0c71e4';
const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'push-grpc', t);
const pki = await generateDevPki(['127.0.0.1', 'localhost'], 'esi-controller');
const plugin = await startPluginServer({ tls: { cert: pki.server.cert, key: pki.server.key } });
t.teardown(() => plugin.stop());
const read = (key: string) => plugin.store.get(key, '').then((b) => JSON.parse(Buffer.from(b).toString('utf8')) as Record<string, unknown>, () => undefined);

await putSecret(env, ns, 'plugin-tls', { 'ca.crt': pki.ca.cert });
await putSecret(env, ns, 'db', { username: 'orders', password: `${CANARY}-pw` });
const store = {
  kind: 'SecretStore', metadata: { name: 'plugin' },
  spec: { controller: env.cls, provider: { grpc: { url: `https://127.0.0.1:${plugin.port}`, tlsSecretRef: { name: 'plugin-tls' } } } },
};
await create(env, ns, 'secretstores', store);
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s'], t);

t.test('the shared scenario', (t) => pushMatrix(t, env, ctl, ns, {
  label: 'gRPC plugin', store, read,
  seed: (key, value) => plugin.store.put(key, Buffer.from(value), 'user'),
}));

t.test('deletionPolicy Delete removes exactly the entries written; a foreign entry with the same prefix survives', async (t) => {
  await plugin.store.put('del/app-foreign', Buffer.from('keep'), 'x');
  await createPush(env, ns, 'del', {
    secretStoreRefs: [{ name: 'plugin' }], selector: { secret: { name: 'db' } }, deletionPolicy: 'Delete',
    data: [{ match: { secretKey: 'password', remoteRef: { remoteKey: 'del/app', property: 'pass' } } }],
  });
  await pushReady(env, ns, 'del', 'True', 'Synced');
  t.same(await read('del/app'), { pass: `${CANARY}-pw` });
  await deletePush(env, ns, 'del');
  await until('PushSecret gone', async () => !(await getPush(env, ns, 'del')));
  t.equal(await read('del/app'), undefined, 'pushed entry deleted');
  t.same(await read('del/app-foreign'), { x: 'keep' }, 'foreign entry survives');
});

t.test('no canary in status, Events, logs or metrics', async (t) => {
  const list = await env.custom.listNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1alpha1', namespace: ns, plural: 'pushsecrets' });
  const events = await env.core.listNamespacedEvent({ namespace: ns });
  for (const [what, text] of [['status', JSON.stringify(list)], ['events', JSON.stringify(events)], ['logs', ctl.output()], ['metrics', await ctl.metrics()]] as const) {
    t.notOk(text.includes(CANARY), `no canary in ${what}`);
  }
});
