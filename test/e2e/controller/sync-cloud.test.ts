// ExternalSecret → Secret through `esi controller` against the Azure Key Vault backend
// (lowkey-vault or ESI's stand-in, with the Entra token stand-in) and the GCP Secret
// Manager emulator, read back through the API: one `data` entry with a property plus one
// `dataFrom.extract`, and a missing key giving Ready=False naming the store and the key.
// The backends are the test platform's (test/platform/backends); their endpoints reach the
// controller process through its environment, as an operator would set them.
import { ClientSecretCredential } from '@azure/identity';
import { SecretClient } from '@azure/keyvault-secrets';
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { createNamespace } from '../../support/kube.js';
import { startGcpsmEmulator } from '../../support/platform/backends/gcpsm-emulator.js';
import { startKeyVault } from '../../support/platform/backends/lowkey-vault.js';
import { controllerEnv, create, decoded, externalSecret, getSecret, ready, startController, useEnv } from '../../support/fixtures/controller.js';
import { putSecret } from '../../support/fixtures/push.js';

const CANARY = 'ctl-cloud-canary-a7c410';
const DB = { username: 'orders', password: `${CANARY}-pw` };
const PROJECT = 'esi-sync';
const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'ctl-cloud', t);


// Azure Key Vault: a service principal allowed to read, its secret in the store's namespace.
const kv = await startKeyVault(t);
useEnv(t, kv.env());
const admin = new SecretClient(kv.vaultUrl, new ClientSecretCredential(kv.tenantId, kv.admin.clientId, kv.admin.secret, {
  authorityHost: kv.authorityHost, disableInstanceDiscovery: true, tlsOptions: { ca: kv.caPem },
}), { disableChallengeResourceVerification: true, tlsOptions: { ca: kv.caPem } });
const run = `s${randomBytes(3).toString('hex')}`;
await admin.setSecret(`${run}-db`, JSON.stringify(DB));
const sp = { clientId: randomUUID(), secret: `sp-${randomBytes(8).toString('hex')}` };
kv.addServicePrincipal(sp, ['get', 'list']);
await putSecret(env, ns, 'azure-sp', { 'client-id': sp.clientId, 'client-secret': sp.secret });
await create(env, ns, 'secretstores', {
  kind: 'SecretStore', metadata: { name: 'azure' },
  spec: { controller: env.cls, provider: { azurekv: {
    vaultUrl: kv.vaultUrl, tenantId: kv.tenantId, authType: 'ServicePrincipal',
    authSecretRef: { clientId: { name: 'azure-sp', key: 'client-id' }, clientSecret: { name: 'azure-sp', key: 'client-secret' } },
  } } },
});

// GCP Secret Manager: the emulator, a service-account key in the store's namespace.
const emu = await startGcpsmEmulator(t);
useEnv(t, { SECRET_MANAGER_EMULATOR_HOST: emu.endpoint });
const sm = emu.client();
await sm.createSecret({ parent: `projects/${PROJECT}`, secretId: 'orders-db', secret: { replication: { automatic: {} } } });
await sm.addSecretVersion({ parent: `projects/${PROJECT}/secrets/orders-db`, payload: { data: Buffer.from(JSON.stringify(DB)) } });
const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
await putSecret(env, ns, 'gcp-sa', { 'key.json': JSON.stringify({ type: 'service_account', project_id: PROJECT, private_key: pem, client_email: `esi@${PROJECT}.iam.gserviceaccount.com` }) });
await create(env, ns, 'secretstores', {
  kind: 'SecretStore', metadata: { name: 'gcp' },
  spec: { controller: env.cls, provider: { gcpsm: { projectID: PROJECT, auth: { secretRef: { secretAccessKeySecretRef: { name: 'gcp-sa', key: 'key.json' } } } } } },
});

const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s'], t);

/** data (one property) + dataFrom (extract) from `store`, then a key the store lacks. */
async function syncCase(t: Test, store: string, key: string, absent: string): Promise<void> {
  await create(env, ns, 'externalsecrets', externalSecret(store, store, {
    data: [{ secretKey: 'pw', remoteRef: { key, property: 'password' } }],
    dataFrom: [{ extract: { key } }],
  }));
  await ready(env, ns, store, 'True', 'SecretSynced', 90_000);
  t.same(decoded(await getSecret(env, ns, store)), { pw: DB.password, ...DB }, `${store}: data + dataFrom extract in the Secret`);

  const missing = `${store}-missing`;
  await create(env, ns, 'externalsecrets', externalSecret(missing, store, { data: [{ secretKey: 'x', remoteRef: { key: absent } }] }));
  const es = await ready(env, ns, missing, 'False', 'SecretSyncedError', 90_000);
  const msg = es.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';
  t.match(msg, new RegExp(`SecretStore/${ns}/${store} key "${absent}"`), `${store}: the message names the store and the key`);
  t.notOk(await getSecret(env, ns, missing), `${store}: no Secret for the failed ExternalSecret`);
}

t.test(`Azure Key Vault (${kv.label})`, (t) => syncCase(t, 'azure', `${run}-db`, `${run}-nope`));
t.test(`GCP Secret Manager (${emu.name})`, (t) => syncCase(t, 'gcp', 'orders-db', 'orders-nope'));

t.test('no canary in status, Events, logs or metrics', async (t) => {
  const list = await env.custom.listNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural: 'externalsecrets' });
  const events = await env.core.listNamespacedEvent({ namespace: ns });
  for (const [what, text] of [['status', JSON.stringify(list)], ['events', JSON.stringify(events)], ['logs', ctl.output()], ['metrics', await ctl.metrics()]] as const) {
    t.notOk(text.includes(CANARY), `no canary in ${what}`);
  }
});
