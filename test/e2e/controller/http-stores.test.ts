// The stores reached over HTTP (webhook, onepassword, doppler, bitwardensecretsmanager, infisical, akeyless, conjur) in `esi controller` on a real
// apiserver, every object written by a tenant (test/support/tenant.ts): ESO's documented
// manifests (only the URL pointed at the stand-in on 127.0.0.1 and spec.controller added,
// so tests sharing the control plane keep apart). The address policy first: a SecretStore
// may not call a loopback address until the operator restarts the controller with
// --allow-private-store-addresses. No canary in status, Events or the controller's log.
import t from 'tap';
import { createTenant } from '../../support/tenant.js';
import { json, serve } from '../../support/standins/http.js';
import { startAkeylessStandIn } from '../../support/standins/akeyless.js';
import { startBitwardenStandIn } from '../../support/standins/bitwarden.js';
import { startConjurStandIn } from '../../support/standins/conjur.js';
import { startDopplerStandIn } from '../../support/standins/doppler.js';
import { startInfisicalStandIn } from '../../support/standins/infisical.js';
import { startOnePasswordStandIn } from '../../support/standins/onepassword.js';
import { controllerEnv, decoded, getSecret, ready, startController, useEnv } from '../../support/fixtures/controller.js';
import { pushReady } from '../../support/fixtures/push.js';

const CANARY = 'ctl-http-canary-b41c07';
const env = await controllerEnv(t);
const tenant = await createTenant(env.kc, 'ctl-http', t);
const ns = tenant.namespace;
const GROUP = { group: 'external-secrets.io', version: 'v1' };

// httpbin's /get (the query arguments back as JSON) and a JSON document for dataFrom.
const httpbin = await serve(t, (req, res) => {
  const u = new URL(req.url!, 'http://x');
  if (u.pathname === '/get') return json(res, 200, { args: Object.fromEntries(u.searchParams) });
  if (u.pathname === '/doc/db') return json(res, 200, { data: { username: 'orders', password: `${CANARY}-pw` } });
  json(res, 404, { error: 'no such path' });
});

const asTenant = async (plural: string, body: object, version = 'v1') =>
  tenant.custom.createNamespacedCustomObject({ group: GROUP.group, version, namespace: ns, plural, body: { apiVersion: `external-secrets.io/${version}`, ...body } });

// ESO's documented webhook store (external-secrets.io, provider/webhook), as written there.
await tenant.core.createNamespacedSecret({
  namespace: ns,
  body: { metadata: { name: 'webhook-credentials', labels: { 'external-secrets.io/type': 'webhook' } }, data: { username: 'dGVzdA==', password: Buffer.from(CANARY).toString('base64') } },
});
await asTenant('secretstores', {
  kind: 'SecretStore', metadata: { name: 'webhook-backend' },
  spec: {
    controller: env.cls,
    provider: {
      webhook: {
        url: `${httpbin.url}/get?parameter={{ .remoteRef.key }}`,
        result: { jsonPath: '$.args.parameter' },
        headers: { 'Content-Type': 'application/json', Authorization: 'Basic {{ print .auth.username ":" .auth.password | b64enc }}' },
        secrets: [{ name: 'auth', secretRef: { name: 'webhook-credentials' } }],
      },
    },
  },
});
await asTenant('externalsecrets', {
  kind: 'ExternalSecret', metadata: { name: 'webhook-example' },
  spec: { refreshInterval: '15s', secretStoreRef: { name: 'webhook-backend', kind: 'SecretStore' }, target: { name: 'example-sync' }, data: [{ secretKey: 'foobar', remoteRef: { key: 'secret' } }] },
});
// dataFrom.extract through result.jsonPath.
await asTenant('secretstores', {
  kind: 'SecretStore', metadata: { name: 'webhook-doc' },
  spec: { controller: env.cls, provider: { webhook: { url: `${httpbin.url}/doc/{{ .remoteRef.key }}`, result: { jsonPath: '$.data' } } } },
});
await asTenant('externalsecrets', {
  kind: 'ExternalSecret', metadata: { name: 'db' },
  spec: { refreshInterval: '15s', secretStoreRef: { name: 'webhook-doc', kind: 'SecretStore' }, target: { name: 'db' }, dataFrom: [{ extract: { key: 'db' } }] },
});

// 1Password Connect (the stand-in of test/support/standins/onepassword.ts): ESO's documented
// store, an ExternalSecret reading a field and extracting the item, a PushSecret writing one.
const OP_TOKEN = `${CANARY}-op-token`;
const op = await startOnePasswordStandIn(t, OP_TOKEN, {
  staging: [{ title: 'my-item', fields: [{ label: 'username', value: 'orders' }, { label: 'password', value: `${CANARY}-op-pw` }] }],
  production: [],
});
await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'onepassword-connect-token-staging' }, stringData: { token: OP_TOKEN } } });
await asTenant('secretstores', {
  kind: 'SecretStore', metadata: { name: 'onepassword' },
  spec: { controller: env.cls, provider: { onepassword: { connectHost: op.url, vaults: { staging: 1, production: 2 }, auth: { secretRef: { connectTokenSecretRef: { name: 'onepassword-connect-token-staging', key: 'token' } } } } } },
});
await asTenant('externalsecrets', {
  kind: 'ExternalSecret', metadata: { name: 'op-item' },
  spec: {
    refreshInterval: '15s', secretStoreRef: { kind: 'SecretStore', name: 'onepassword' }, target: { creationPolicy: 'Owner' },
    data: [{ secretKey: 'key', remoteRef: { key: 'my-item', property: 'password' } }], dataFrom: [{ extract: { key: 'my-item' } }],
  },
});
await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'to-push' }, stringData: { api: `${CANARY}-pushed` } } });
await asTenant('pushsecrets', {
  kind: 'PushSecret', metadata: { name: 'op-push' },
  spec: {
    refreshInterval: '15s', secretStoreRefs: [{ name: 'onepassword', kind: 'SecretStore' }], selector: { secret: { name: 'to-push' } },
    data: [{ match: { secretKey: 'api', remoteRef: { remoteKey: 'pushed-item', property: 'api-key' } } }],
  },
}, 'v1alpha1');

// Doppler: the API host is the operator's (DOPPLER_BASE_URL in the controller's environment,
// as ESO), not the tenant's, so the address policy does not apply and it syncs at once.
const DP_TOKEN = `dp.st.prd.${CANARY}`;
const doppler = await startDopplerStandIn(t, DP_TOKEN, { project: 'auth-api', config: 'prd', secrets: { DB_USER: 'orders', DB_PASSWORD: `${CANARY}-dp-pw`, OTHER: 'x' } });
useEnv(t, { DOPPLER_BASE_URL: doppler.url });
await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'doppler-token-auth-api' }, stringData: { dopplerToken: DP_TOKEN } } });
await asTenant('secretstores', {
  kind: 'SecretStore', metadata: { name: 'doppler-auth-api' },
  spec: { controller: env.cls, provider: { doppler: { auth: { secretRef: { dopplerToken: { name: 'doppler-token-auth-api' } } } } } },
});
await asTenant('externalsecrets', {
  kind: 'ExternalSecret', metadata: { name: 'auth-api-db-url' },
  spec: {
    refreshInterval: '15s', secretStoreRef: { kind: 'SecretStore', name: 'doppler-auth-api' }, target: { name: 'auth-api-db-url' },
    data: [{ secretKey: 'DB_PASSWORD', remoteRef: { key: 'DB_PASSWORD' } }], dataFrom: [{ find: { path: 'DB_' } }],
  },
});

// Bitwarden Secrets Manager through the SDK server stand-in (TLS, its CA in caBundle).
const BW_TOKEN = `0.machine.${CANARY}`;
const BW_ORG = '3f9c8e2a-1b7d-4c5e-9a6f-0d2e4b6c8a10';
const BW_PROJECT = '7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
const bw = await startBitwardenStandIn(t, BW_TOKEN, BW_ORG, [{ key: 'db-password', value: `${CANARY}-bw`, projectId: BW_PROJECT }]);
await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'bitwarden-access-token' }, stringData: { token: BW_TOKEN } } });
await asTenant('secretstores', {
  kind: 'SecretStore', metadata: { name: 'bitwarden-secretsmanager' },
  spec: {
    controller: env.cls,
    provider: {
      bitwardensecretsmanager: {
        apiURL: 'https://api.bitwarden.com', identityURL: 'https://identity.bitwarden.com', bitwardenServerSDKURL: bw.url,
        caBundle: Buffer.from(bw.caPem).toString('base64'), organizationID: BW_ORG, projectID: BW_PROJECT,
        auth: { secretRef: { credentials: { name: 'bitwarden-access-token', key: 'token' } } },
      },
    },
  },
});
await asTenant('externalsecrets', {
  kind: 'ExternalSecret', metadata: { name: 'bitwarden' },
  spec: { refreshInterval: '15s', secretStoreRef: { kind: 'SecretStore', name: 'bitwarden-secretsmanager' }, data: [{ secretKey: 'test', remoteRef: { key: 'db-password' } }] },
});

// Infisical (the stand-in of test/support/standins/infisical.ts): ESO's documented store
// (universal auth) and ExternalSecret (a name, a JSON property, an absolute path).
const INF_SECRET = `${CANARY}-inf-client-secret`;
const inf = await startInfisicalStandIn(t, { universal: { clientId: 'machine-id', clientSecret: INF_SECRET } }, {
  slug: 'first-project-fujh', environment: 'dev',
  folders: { '/': { API_KEY: `${CANARY}-inf-api`, JSON_BLOB: JSON.stringify({ key: 'json-value' }) }, '/nested': { PASSWORD: `${CANARY}-inf-pw` } },
});
await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'universal-auth-credentials' }, stringData: { clientId: 'machine-id', clientSecret: INF_SECRET } } });
await asTenant('secretstores', {
  kind: 'SecretStore', metadata: { name: 'infisical' },
  spec: {
    controller: env.cls,
    provider: {
      infisical: {
        auth: { universalAuthCredentials: { clientId: { key: 'clientId', name: 'universal-auth-credentials' }, clientSecret: { key: 'clientSecret', name: 'universal-auth-credentials' } } },
        secretsScope: { projectSlug: 'first-project-fujh', environmentSlug: 'dev' },
        hostAPI: `${inf.url}/api`,
      },
    },
  },
});
await asTenant('externalsecrets', {
  kind: 'ExternalSecret', metadata: { name: 'infisical-managed-secrets' },
  spec: {
    refreshInterval: '15s', secretStoreRef: { kind: 'SecretStore', name: 'infisical' }, target: { name: 'auth-api' },
    data: [
      { secretKey: 'API_KEY', remoteRef: { key: 'API_KEY' } },
      { secretKey: 'JSON_KEY', remoteRef: { key: 'JSON_BLOB', property: 'key' } },
      { secretKey: 'PASSWORD', remoteRef: { key: '/nested/PASSWORD' } },
    ],
  },
});

// Akeyless (the stand-in of test/support/standins/akeyless.ts): ESO's documented store (access
// ID, type and key from one Secret) and ExternalSecrets (a secret, a JSON secret extracted).
const AK_KEY = `${CANARY}-ak-access-key`;
const ak = await startAkeylessStandIn(t, { accessKey: { accessId: 'p-abc123', accessKey: AK_KEY } }, {
  'database-credentials': { type: 'STATIC_SECRET', versions: [`${CANARY}-ak-pw`] },
  'database-credentials-json': { type: 'STATIC_SECRET', versions: [JSON.stringify({ username: 'orders', host: 'db.example' })] },
});
await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'akeylss-secret-creds' }, stringData: { accessId: 'p-abc123', accessType: 'api_key', accessTypeParam: AK_KEY } } });
const akRef = (key: string) => ({ name: 'akeylss-secret-creds', key });
await asTenant('secretstores', {
  kind: 'SecretStore', metadata: { name: 'akeyless-secret-store' },
  spec: { controller: env.cls, provider: { akeyless: { akeylessGWApiURL: ak.url, authSecretRef: { secretRef: { accessID: akRef('accessId'), accessType: akRef('accessType'), accessTypeParam: akRef('accessTypeParam') } } } } },
});
await asTenant('externalsecrets', {
  kind: 'ExternalSecret', metadata: { name: 'database-credentials' },
  spec: {
    refreshInterval: '15s', secretStoreRef: { kind: 'SecretStore', name: 'akeyless-secret-store' }, target: { name: 'database-credentials', creationPolicy: 'Owner' },
    data: [{ secretKey: 'password', remoteRef: { key: 'database-credentials' } }], dataFrom: [{ extract: { key: 'database-credentials-json' } }],
  },
});

// CyberArk Conjur (test/support/standins/conjur.ts): ESO's documented store (API key) and
// ExternalSecrets (a variable by its id; find by name regexp).
const CJ_KEY = `${CANARY}-cj-api-key`;
const cj = await startConjurStandIn(t, 'conjur', { apiKey: { login: 'host/eso/app1', key: CJ_KEY } }, {
  'data/app1/secret00': { value: `${CANARY}-cj-s00` }, 'app1/secret01': { value: 'one' }, 'app2/other': { value: 'x' },
});
await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'user' }, stringData: { 'conjur-hostid': 'host/eso/app1' } } });
await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'apikey' }, stringData: { 'conjur-apikey': CJ_KEY } } });
await asTenant('secretstores', {
  kind: 'SecretStore', metadata: { name: 'conjur' },
  spec: { controller: env.cls, provider: { conjur: { url: cj.url, auth: { apikey: { account: 'conjur', userRef: { name: 'user', key: 'conjur-hostid' }, apiKeyRef: { name: 'apikey', key: 'conjur-apikey' } } } } } },
});
await asTenant('externalsecrets', {
  kind: 'ExternalSecret', metadata: { name: 'conjur' },
  spec: { refreshInterval: '15s', secretStoreRef: { name: 'conjur', kind: 'SecretStore' }, data: [{ secretKey: 'secret00', remoteRef: { key: 'data/app1/secret00' } }] },
});
await asTenant('externalsecrets', {
  kind: 'ExternalSecret', metadata: { name: 'conjur-find-by-name' },
  spec: { refreshInterval: '15s', secretStoreRef: { name: 'conjur', kind: 'SecretStore' }, target: { name: 'k8s-secret-to-be-created' }, dataFrom: [{ find: { name: { regexp: '^app1\\/.+$' } } }] },
});

const args = ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s'];
const logs: string[] = [];

t.test('without --allow-private-store-addresses a SecretStore may not call 127.0.0.1', async (t) => {
  const ctl = await startController(env.cp.kubeconfigPath, [...args, '--egress-allow='], t);
  // The store's validation already checks the address: the store is not ready, and says why.
  const es = await ready(env, ns, 'webhook-example', 'False', 'StoreNotReady', 90_000);
  const msg = es.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';
  t.match(msg, /127\.0\.0\.1 is a loopback or private address/, msg);
  t.match(msg, /--allow-private-store-addresses/);
  t.equal(httpbin.seen.length, 0, 'no request reached the server');
  const opEs = await ready(env, ns, 'op-item', 'False', undefined, 90_000);
  t.match(opEs.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '', /loopback or private address/);
  t.equal(op.seen.length, 0, 'no request reached 1Password Connect');
  await ready(env, ns, 'auth-api-db-url', 'True', 'SecretSynced', 90_000);
  await ready(env, ns, 'bitwarden', 'False', undefined, 90_000);
  t.equal(bw.seen.length, 0, 'no request reached the Bitwarden SDK server');
  await ready(env, ns, 'infisical-managed-secrets', 'False', undefined, 90_000);
  t.equal(inf.seen.length, 0, 'no request reached Infisical');
  await ready(env, ns, 'database-credentials', 'False', undefined, 90_000);
  t.equal(ak.seen.length, 0, 'no request reached Akeyless');
  await ready(env, ns, 'conjur', 'False', undefined, 90_000);
  t.equal(cj.seen.length, 0, 'no request reached Conjur');
  t.same(decoded(await getSecret(env, ns, 'auth-api-db-url')), { DB_PASSWORD: `${CANARY}-dp-pw`, DB_USER: 'orders' }, 'Doppler: one secret and a find by prefix');
  t.notOk(await getSecret(env, ns, 'example-sync'));
  await ctl.stop();
  logs.push(ctl.output());
});

t.test('with it, ESO\'s documented store syncs; dataFrom.extract through result.jsonPath', async (t) => {
  const ctl = await startController(env.cp.kubeconfigPath, [...args, '--allow-private-store-addresses=true'], t);
  await ready(env, ns, 'webhook-example', 'True', 'SecretSynced', 120_000);
  t.same(decoded(await getSecret(env, ns, 'example-sync')), { foobar: 'secret' });
  const call = httpbin.seen.find((s) => s.url === '/get?parameter=secret');
  t.equal(call?.headers.authorization, `Basic ${Buffer.from(`test:${CANARY}`).toString('base64')}`, "credentials from the tenant's Secret");
  await ready(env, ns, 'db', 'True', 'SecretSynced', 90_000);
  t.same(decoded(await getSecret(env, ns, 'db')), { username: 'orders', password: `${CANARY}-pw` });
  await ready(env, ns, 'op-item', 'True', 'SecretSynced', 90_000);
  t.same(decoded(await getSecret(env, ns, 'op-item')), { key: `${CANARY}-op-pw`, username: 'orders', password: `${CANARY}-op-pw` }, '1Password: a field and the whole item');
  await ready(env, ns, 'bitwarden', 'True', 'SecretSynced', 90_000);
  t.same(decoded(await getSecret(env, ns, 'bitwarden')), { test: `${CANARY}-bw` }, 'Bitwarden: a secret by name in the project');
  await ready(env, ns, 'infisical-managed-secrets', 'True', 'SecretSynced', 90_000);
  t.same(decoded(await getSecret(env, ns, 'auth-api')), { API_KEY: `${CANARY}-inf-api`, JSON_KEY: 'json-value', PASSWORD: `${CANARY}-inf-pw` }, 'Infisical: a name, a property, an absolute path');
  await ready(env, ns, 'database-credentials', 'True', 'SecretSynced', 90_000);
  t.same(decoded(await getSecret(env, ns, 'database-credentials')), { password: `${CANARY}-ak-pw`, username: 'orders', host: 'db.example' }, 'Akeyless: a secret, a JSON secret extracted');
  await ready(env, ns, 'conjur', 'True', 'SecretSynced', 90_000);
  t.same(decoded(await getSecret(env, ns, 'conjur')), { secret00: `${CANARY}-cj-s00` }, 'Conjur: a variable by its id');
  await ready(env, ns, 'conjur-find-by-name', 'True', 'SecretSynced', 90_000);
  t.same(decoded(await getSecret(env, ns, 'k8s-secret-to-be-created')), { app1_secret01: 'one' }, 'Conjur: find by name regexp, keyed by the variable id (/ converted as ESO does)');
  await pushReady(env, ns, 'op-push', 'True', undefined, { ms: 90_000 });
  t.match(op.items('staging').find((i) => i.title === 'pushed-item'), { fields: [{ label: 'api-key', value: `${CANARY}-pushed` }] }, 'the PushSecret wrote the item');
  logs.push(ctl.output());
});

t.test('no canary in status, Events or the controller log', async (t) => {
  const list = await env.custom.listNamespacedCustomObject({ ...GROUP, namespace: ns, plural: 'externalsecrets' });
  const stores = await env.custom.listNamespacedCustomObject({ ...GROUP, namespace: ns, plural: 'secretstores' });
  const events = await env.core.listNamespacedEvent({ namespace: ns });
  for (const [what, text] of [['ExternalSecret status', JSON.stringify(list)], ['SecretStore status', JSON.stringify((stores as { items: { status?: unknown }[] }).items.map((s) => s.status))], ['events', JSON.stringify(events)], ['logs', logs.join('\n')]] as const) {
    t.notOk(text.includes(CANARY), `no canary in ${what}`);
  }
});
