// The agent with the stores reached over HTTP (their documented APIs), in-process, with their real
// providers: the store's credentials are files the webhook mounted (credentialsDir), the
// store a server on 127.0.0.1. The files on disk hold the values; the log holds none.
// The agent calls from the pod's own network position: no address policy applies.
import t from 'tap';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runAgent } from '../../injector/agent.js';
import type { AgentConfig } from '../../src/agent-config/types.js';
import { startAkeylessStandIn } from '../support/standins/akeyless.js';
import { startBitwardenStandIn } from '../support/standins/bitwarden.js';
import { startDopplerStandIn } from '../support/standins/doppler.js';
import { startInfisicalStandIn } from '../support/standins/infisical.js';
import { json, serve } from '../support/standins/http.js';
import { startOnePasswordStandIn } from '../support/standins/onepassword.js';
import { startConjurStandIn } from '../support/standins/conjur.js';
import { assertNoCanary, CANARY_PASSWORD, CANARY_TOKEN, captureLogger, fakeConfig, tempRoot } from '../support/fixtures/agent.js';

const out = (root: string, rel: string): string => join(root, 'var/run/esi/secrets', rel);

async function mount(root: string, files: Record<string, string>): Promise<void> {
  for (const [rel, value] of Object.entries(files)) {
    await mkdir(join(root, 'var/run/esi/creds', rel, '..'), { recursive: true });
    await writeFile(join(root, 'var/run/esi/creds', rel), value);
  }
}

function withStore(id: string, provider: object, secrets: AgentConfig['secrets'], templates: AgentConfig['templates'] = []): AgentConfig {
  const config = fakeConfig({ mode: 'init-only', templates, secrets });
  config.stores = { [id]: { kind: 'SecretStore', name: id.split('/')[2]!, provider, credentialsDir: '/var/run/esi/creds' } };
  return config;
}

t.test('webhook: ESO\'s documented store, credentials from mounted files, a file template', async (t) => {
  const srv = await serve(t, (req, res) => {
    const u = new URL(req.url!, 'http://x');
    if (req.headers.authorization !== `Basic ${Buffer.from(`test:${CANARY_TOKEN}`).toString('base64')}`) return json(res, 401, {});
    if (u.pathname === '/get') return json(res, 200, { args: Object.fromEntries(u.searchParams) });
    json(res, 200, { data: { username: 'app_user', password: CANARY_PASSWORD } });
  });
  const root = await tempRoot(t);
  await mount(root, { 'webhook-credentials/username': 'test', 'webhook-credentials/password': CANARY_TOKEN });
  const store = 'SecretStore/team-a/webhook-backend';
  const headers = { 'Content-Type': 'application/json', Authorization: 'Basic {{ print .auth.username ":" .auth.password | b64enc }}' };
  const secrets = [{ name: 'auth', secretRef: { name: 'webhook-credentials' } }];
  const config = withStore(store, { webhook: { url: `${srv.url}/get?parameter={{ .remoteRef.key }}`, result: { jsonPath: '$.args.parameter' }, headers, secrets } }, [
    { name: 'echo', store, data: [{ secretKey: 'foobar', remoteRef: { key: 'secret' } }], dataFrom: [] },
  ]);
  config.stores['SecretStore/team-a/webhook-doc'] = {
    kind: 'SecretStore', name: 'webhook-doc', credentialsDir: '/var/run/esi/creds',
    provider: { webhook: { url: `${srv.url}/doc/{{ .remoteRef.key }}`, result: { jsonPath: '$.data' }, headers, secrets } },
  };
  config.secrets.push({ name: 'db', store: 'SecretStore/team-a/webhook-doc', data: [], dataFrom: [{ extract: { key: 'db' } }] });
  config.templates = [{ file: 'app.conf', template: 'url=postgres://{{db.username}}:{{db.password}}@db/app\n' }];
  const { logger, text } = captureLogger();
  t.equal(await runAgent({ config, root, logger }), 0, text());
  t.equal(await readFile(out(root, 'echo/foobar'), 'utf8'), 'secret');
  t.equal(await readFile(out(root, 'db/password'), 'utf8'), CANARY_PASSWORD);
  t.equal(await readFile(out(root, 'app.conf'), 'utf8'), `url=postgres://app_user:${CANARY_PASSWORD}@db/app\n`);
  assertNoCanary(t, text(), 'logs');

  // A credential the webhook did not mount: the agent fails naming it, still without values.
  const bare = await tempRoot(t);
  const failed = captureLogger();
  t.equal(await runAgent({ config, root: bare, logger: failed.logger }), 1);
  t.match(failed.text(), /credential webhook-credentials\/(password|username) is not mounted/);
  assertNoCanary(t, failed.text(), 'logs');
});

t.test('onepassword and doppler: a field, a whole item, a Doppler secret and a find', async (t) => {
  const op = await startOnePasswordStandIn(t, CANARY_TOKEN, {
    staging: [{ title: 'db', fields: [{ label: 'username', value: 'app_user' }, { label: 'password', value: CANARY_PASSWORD }] }],
  });
  const doppler = await startDopplerStandIn(t, CANARY_TOKEN, { project: 'p', config: 'prd', secrets: { API_TOKEN: CANARY_PASSWORD, API_URL: 'https://api' } });
  const saved = process.env.DOPPLER_BASE_URL;
  process.env.DOPPLER_BASE_URL = doppler.url;
  t.teardown(() => (saved === undefined ? delete process.env.DOPPLER_BASE_URL : (process.env.DOPPLER_BASE_URL = saved)));
  const root = await tempRoot(t);
  await mount(root, { 'op-token/token': CANARY_TOKEN, 'dp-token/dopplerToken': CANARY_TOKEN });
  const opStore = 'SecretStore/team-a/onepassword';
  const dpStore = 'SecretStore/team-a/doppler';
  const config = withStore(opStore, { onepassword: { connectHost: op.url, vaults: { staging: 1 }, auth: { secretRef: { connectTokenSecretRef: { name: 'op-token', key: 'token' } } } } }, [
    { name: 'db', store: opStore, data: [{ secretKey: 'pw', remoteRef: { key: 'db' } }], dataFrom: [{ extract: { key: 'db' } }] },
    { name: 'api', store: dpStore, data: [{ secretKey: 'token', remoteRef: { key: 'API_TOKEN' } }], dataFrom: [{ find: { path: 'API_' } }] },
  ]);
  config.stores[dpStore] = { kind: 'SecretStore', name: 'doppler', credentialsDir: '/var/run/esi/creds', provider: { doppler: { auth: { secretRef: { dopplerToken: { name: 'dp-token' } } } } } };
  const { logger, text } = captureLogger();
  t.equal(await runAgent({ config, root, logger }), 0, text());
  t.equal(await readFile(out(root, 'db/pw'), 'utf8'), CANARY_PASSWORD);
  t.equal(await readFile(out(root, 'db/username'), 'utf8'), 'app_user');
  t.equal(await readFile(out(root, 'api/token'), 'utf8'), CANARY_PASSWORD);
  t.equal(await readFile(out(root, 'api/API_URL'), 'utf8'), 'https://api');
  assertNoCanary(t, text(), 'logs');
});

t.test('bitwardensecretsmanager: a secret by name through the SDK server over TLS', async (t) => {
  const org = '3f9c8e2a-1b7d-4c5e-9a6f-0d2e4b6c8a10';
  const project = '7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
  const bw = await startBitwardenStandIn(t, CANARY_TOKEN, org, [{ key: 'db-password', value: CANARY_PASSWORD, projectId: project }]);
  const root = await tempRoot(t);
  await mount(root, { 'bitwarden-access-token/token': CANARY_TOKEN });
  const store = 'SecretStore/team-a/bitwarden';
  const config = withStore(store, {
    bitwardensecretsmanager: {
      bitwardenServerSDKURL: bw.url, caBundle: Buffer.from(bw.caPem).toString('base64'), organizationID: org, projectID: project,
      auth: { secretRef: { credentials: { name: 'bitwarden-access-token', key: 'token' } } },
    },
  }, [{ name: 'bw', store, data: [{ secretKey: 'password', remoteRef: { key: 'db-password' } }], dataFrom: [] }]);
  const { logger, text } = captureLogger();
  t.equal(await runAgent({ config, root, logger }), 0, text());
  t.equal(await readFile(out(root, 'bw/password'), 'utf8'), CANARY_PASSWORD);
  assertNoCanary(t, text(), 'logs');
});

t.test('infisical: universal auth from mounted files, a secret, a property and the scope', async (t) => {
  const inf = await startInfisicalStandIn(t, { universal: { clientId: 'machine-id', clientSecret: CANARY_TOKEN } }, {
    slug: 'first-project-fujh', environment: 'dev',
    folders: { '/': { DB_PASSWORD: CANARY_PASSWORD, DB_USER: 'app_user', CONFIG: JSON.stringify({ port: '5432' }) } },
  });
  const root = await tempRoot(t);
  await mount(root, { 'universal-auth-credentials/clientId': 'machine-id', 'universal-auth-credentials/clientSecret': CANARY_TOKEN });
  const store = 'SecretStore/team-a/infisical';
  const config = withStore(store, {
    infisical: {
      auth: { universalAuthCredentials: { clientId: { key: 'clientId', name: 'universal-auth-credentials' }, clientSecret: { key: 'clientSecret', name: 'universal-auth-credentials' } } },
      secretsScope: { projectSlug: 'first-project-fujh', environmentSlug: 'dev' },
      hostAPI: `${inf.url}/api`,
    },
  }, [{ name: 'db', store, data: [{ secretKey: 'pw', remoteRef: { key: 'DB_PASSWORD' } }, { secretKey: 'port', remoteRef: { key: 'CONFIG', property: 'port' } }], dataFrom: [{ find: { path: 'DB_' } }] }]);
  const { logger, text } = captureLogger();
  t.equal(await runAgent({ config, root, logger }), 0, text());
  t.equal(await readFile(out(root, 'db/pw'), 'utf8'), CANARY_PASSWORD);
  t.equal(await readFile(out(root, 'db/port'), 'utf8'), '5432');
  t.equal(await readFile(out(root, 'db/DB_USER'), 'utf8'), 'app_user');
  assertNoCanary(t, text(), 'logs');
});

t.test('akeyless: Kubernetes auth with a mounted token Secret, a static and a rotated secret', async (t) => {
  const jwt = `${CANARY_TOKEN}.jwt`;
  const ak = await startAkeylessStandIn(t, { k8s: { accessId: 'p-k8s456', confName: 'my-conf-name', jwt } }, {
    '/app/db-password': { type: 'STATIC_SECRET', versions: [CANARY_PASSWORD] },
    '/app/rotated': { type: 'ROTATED_SECRET', value: { username: 'svc', password: CANARY_PASSWORD } },
  });
  const root = await tempRoot(t);
  await mount(root, { 'akeyless-jwt/token': jwt });
  const store = 'SecretStore/team-a/akeyless';
  const config = withStore(store, {
    akeyless: { akeylessGWApiURL: ak.url, authSecretRef: { kubernetesAuth: { accessID: 'p-k8s456', k8sConfName: 'my-conf-name', secretRef: { name: 'akeyless-jwt' } } } },
  }, [{ name: 'ak', store, data: [{ secretKey: 'pw', remoteRef: { key: '/app/db-password' } }, { secretKey: 'user', remoteRef: { key: '/app/rotated', property: 'username' } }], dataFrom: [] }]);
  const { logger, text } = captureLogger();
  t.equal(await runAgent({ config, root, logger }), 0, text());
  t.equal(await readFile(out(root, 'ak/pw'), 'utf8'), CANARY_PASSWORD);
  t.equal(await readFile(out(root, 'ak/user'), 'utf8'), 'svc');
  assertNoCanary(t, text(), 'logs');
});

t.test('conjur: ESO\'s documented store (API key from mounted files), a variable by id and a find by regexp', async (t) => {
  const cj = await startConjurStandIn(t, 'conjur', { apiKey: { login: 'host/eso/app1', key: CANARY_TOKEN } }, {
    'data/app1/secret00': { value: CANARY_PASSWORD },
    'app1/secret01': { value: 'one' },
  });
  const root = await tempRoot(t);
  await mount(root, { 'user/conjur-hostid': 'host/eso/app1', 'apikey/conjur-apikey': CANARY_TOKEN });
  const store = 'SecretStore/team-a/conjur';
  const config = withStore(store, {
    conjur: { url: cj.url, auth: { apikey: { account: 'conjur', userRef: { name: 'user', key: 'conjur-hostid' }, apiKeyRef: { name: 'apikey', key: 'conjur-apikey' } } } },
  }, [{ name: 'conjur', store, data: [{ secretKey: 'secret00', remoteRef: { key: 'data/app1/secret00' } }], dataFrom: [{ find: { name: { regexp: '^app1\\/.+$' } } }] }]);
  const { logger, text } = captureLogger();
  t.equal(await runAgent({ config, root, logger }), 0, text());
  t.equal(await readFile(out(root, 'conjur/secret00'), 'utf8'), CANARY_PASSWORD);
  t.equal(await readFile(out(root, 'conjur/app1_secret01'), 'utf8'), 'one');
  assertNoCanary(t, text(), 'logs');
});
