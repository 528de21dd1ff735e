// ExternalSecret → Secret through `esi controller` against real backends, read back through
// the API: moto (AWS Secrets Manager and SSM Parameter Store), ESI's reference gRPC plugin,
// and the kubernetes provider (another namespace of the same control plane, read as a
// ServiceAccount). Each store: one `data` entry with a property plus one `dataFrom.extract`,
// and a missing key giving Ready=False with a message naming the store and the key.
// OpenBao has its own file (vault.test.ts); Azure Key Vault and GCP Secret Manager are in
// sync-cloud.test.ts.
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import t, { type Test } from 'tap';
import { generateDevPki } from '../../../examples/grpc-plugin/dev-certs.js';
import { startPluginServer } from '../../../examples/grpc-plugin/server.js';
import { createNamespace } from '../../support/kube.js';
import { startMoto, useMotoEndpoint } from '../../support/platform/backends/moto.js';
import { controllerEnv, create, decoded, externalSecret, getSecret, ready, startController, type Env } from '../../support/fixtures/controller.js';
import { kubernetesStore, putSecret } from '../../support/fixtures/push.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const CANARY = 'ctl-bk-canary-3f8d21';
const DB = { username: 'orders', password: `${CANARY}-pw` };
const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'ctl-bk', t);

// moto: the endpoint reaches the controller as an operator sets it, in its environment.
const moto = await startMoto(t);
useMotoEndpoint(t, moto); // inherited by processes the test starts
const seedCreds = { accessKeyId: 'seed', secretAccessKey: 'seed' };
const sm = new SecretsManagerClient({ region: moto.region, endpoint: moto.endpoint, credentials: seedCreds });
const ssm = new SSMClient({ region: moto.region, endpoint: moto.endpoint, credentials: seedCreds });
t.teardown(() => {
  sm.destroy();
  ssm.destroy();
});
await sm.send(new CreateSecretCommand({ Name: 'orders/db', SecretString: JSON.stringify(DB) }));
await ssm.send(new PutParameterCommand({ Name: '/orders/db', Type: 'SecureString', Value: JSON.stringify(DB) }));
await putSecret(env, ns, 'aws-creds', { id: 'AKIACTLTEST', secret: 'ctl-test-secret' });
const awsAuth = { secretRef: { accessKeyIDSecretRef: { name: 'aws-creds', key: 'id' }, secretAccessKeySecretRef: { name: 'aws-creds', key: 'secret' } } };
for (const [name, service] of [['aws-sm', 'SecretsManager'], ['aws-ps', 'ParameterStore']] as const) {
  await create(env, ns, 'secretstores', { kind: 'SecretStore', metadata: { name }, spec: { controller: env.cls, provider: { aws: { service, region: moto.region, auth: awsAuth } } } });
}

// The reference gRPC plugin over TLS, its CA in a Secret of the store's namespace.
const pki = await generateDevPki(['127.0.0.1', 'localhost'], 'esi-controller');
const plugin = await startPluginServer({ tls: { cert: pki.server.cert, key: pki.server.key }, data: { 'orders/db': DB } });
t.teardown(() => plugin.stop());
await putSecret(env, ns, 'plugin-tls', { 'ca.crt': pki.ca.cert });
await create(env, ns, 'secretstores', {
  kind: 'SecretStore', metadata: { name: 'plugin' },
  spec: { controller: env.cls, provider: { grpc: { url: `https://127.0.0.1:${plugin.port}`, tlsSecretRef: { name: 'plugin-tls' } } } },
});

// kubernetes: the remote Secret lives in another namespace, read with a ServiceAccount's token.
const k8s = await kubernetesStore(env, t, ns, 'k8s');
await create(env, ns, 'secretstores', k8s.store);
await putSecret(env, k8s.remote, 'orders-db', DB);

const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s'], t);

/** data (one property) + dataFrom (extract) from `store`, then a key the store lacks. */
async function syncCase(t: Test, e: Env, store: string, key: string, absent = 'orders/nope'): Promise<void> {
  await create(e, ns, 'externalsecrets', externalSecret(store, store, {
    data: [{ secretKey: 'pw', remoteRef: { key, property: 'password' } }],
    dataFrom: [{ extract: { key } }],
  }));
  await ready(e, ns, store, 'True', 'SecretSynced', 90_000);
  t.same(decoded(await getSecret(e, ns, store)), { pw: DB.password, ...DB }, `${store}: data + dataFrom extract in the Secret`);

  const missing = `${store}-missing`;
  await create(e, ns, 'externalsecrets', externalSecret(missing, store, { data: [{ secretKey: 'x', remoteRef: { key: absent } }] }));
  const es = await ready(e, ns, missing, 'False', 'SecretSyncedError', 90_000);
  const msg = es.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';
  t.match(msg, new RegExp(`SecretStore/${ns}/${store} key "${absent}"`), `${store}: the message names the store and the key`);
  t.notOk(await getSecret(e, ns, missing), `${store}: no Secret for the failed ExternalSecret`);
}

t.test('moto Secrets Manager', (t) => syncCase(t, env, 'aws-sm', 'orders/db'));
t.test('moto Parameter Store', (t) => syncCase(t, env, 'aws-ps', '/orders/db'));
t.test('gRPC reference plugin', (t) => syncCase(t, env, 'plugin', 'orders/db'));
t.test('kubernetes provider', (t) => syncCase(t, env, 'k8s', 'orders-db', 'nope'));

t.test('no canary in status, Events, logs or metrics', async (t) => {
  const list = await env.custom.listNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural: 'externalsecrets' });
  const events = await env.core.listNamespacedEvent({ namespace: ns });
  for (const [what, text] of [['status', JSON.stringify(list)], ['events', JSON.stringify(events)], ['logs', ctl.output()], ['metrics', await ctl.metrics()]] as const) {
    t.notOk(text.includes(CANARY), `no canary in ${what}`);
  }
});
