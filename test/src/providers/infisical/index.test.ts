// The infisical provider against the Infisical API stand-in on 127.0.0.1
// (test/support/standins/infisical.ts): ESO's documented store (universal auth, a project and
// environment scope), a secret by name and by absolute path, a JSON secret's property and
// map, the scope's secrets with find, imports and recursion, token renewal and revocation, the
// other auth kinds, PushSecret as ESO's store does it (the project's id by its slug, create,
// update only on change, a property path, delete), and no value, client secret or token in any error.
import t from 'tap';
import { apiBase, provider, secretAddress } from '../../../../src/providers/infisical/index.js';
import { meta } from '../../../../src/providers/infisical/meta.js';
import { providerNames } from '../../../../src/providers/registry.js';
import { type SecretsClient } from '../../../../src/providers/types.js';
import { testContext, providerError, expectFailures } from '../../../support/provider-context.js';
import { startInfisicalStandIn, type InfisicalProject } from '../../../support/standins/infisical.js';

const CANARY = 'CANARY-infisical-7d21a4';
const CLIENT_SECRET = `${CANARY}-client-secret`;
const STORE = 'SecretStore/team-a/infisical';
const dec = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const strings = (m: Record<string, Uint8Array>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, dec(v)]));

const project: InfisicalProject = {
  slug: 'first-project-fujh', environment: 'dev',
  folders: {
    '/': { API_KEY: `${CANARY}-api`, DB_USER: 'orders', DB_URL: 'postgres://${DB_USER}@db', JSON_BLOB: JSON.stringify({ key: `${CANARY}-json`, port: 5432 }) },
    '/nested': {},
    '/nested/deeper': { PASSWORD: `${CANARY}-deep` },
    '/shared': { SHARED_TOKEN: 'from-import', API_KEY: 'shadowed' },
  },
  imports: { '/': ['/shared'] },
};
const api = await startInfisicalStandIn(t, {
  universal: { clientId: 'machine-id-1', clientSecret: CLIENT_SECRET },
  jwt: { identityId: 'identity-2', jwt: `${CANARY}-jwt` },
  accessToken: `${CANARY}-static-token`,
}, project);

/** ESO's documented store: universal auth from one Secret, the project and environment. */
const spec = (extra: object = {}, scope: object = {}) => ({
  auth: { universalAuthCredentials: { clientId: { key: 'clientId', name: 'universal-auth-credentials' }, clientSecret: { key: 'clientSecret', name: 'universal-auth-credentials' } } },
  secretsScope: { projectSlug: 'first-project-fujh', environmentSlug: 'dev', ...scope },
  hostAPI: `${api.url}/api`,
  ...extra,
});
const credentials = {
  'universal-auth-credentials/clientId': 'machine-id-1', 'universal-auth-credentials/clientSecret': `${CLIENT_SECRET}\n`,
  'infisical-token/token': `${CANARY}-static-token`, 'jwt-auth/identityId': 'identity-2', 'jwt-auth/jwt': `${CANARY}-jwt`,
};

function client(s: object = spec(), creds: Record<string, string> = credentials): Promise<SecretsClient> {
  return provider.newClient(testContext({ storeId: STORE, spec: s, credentials: creds }));
}

t.test('registered, lazily: the registry lists it; its meta is light', async (t) => {
  t.ok(providerNames().includes('infisical'));
  t.same(meta.capabilities.find, { name: true, tags: false, path: true });
  t.equal(meta.capabilities.write, true);
  t.equal(meta.capabilities.pushProperty, 'path');
});

t.test('a secret by name, by absolute path, a property and a map; references expanded', async (t) => {
  const c = await client();
  t.equal(dec(await c.getSecret({ key: 'API_KEY' })), `${CANARY}-api`);
  t.equal(dec(await c.getSecret({ key: 'DB_URL' })), 'postgres://orders@db', 'expandSecretReferences defaults to true');
  t.equal(dec(await c.getSecret({ key: '/nested/deeper/PASSWORD' })), `${CANARY}-deep`);
  t.equal(dec(await c.getSecret({ key: 'SHARED_TOKEN' })), 'from-import', 'imports are included');
  t.equal(dec(await c.getSecret({ key: 'JSON_BLOB', property: 'key' })), `${CANARY}-json`);
  t.same(strings(await c.getSecretMap({ key: 'JSON_BLOB' })), { key: `${CANARY}-json`, port: '5432' });
  const seen = api.seen.find((s) => s.url.startsWith('/api/v3/secrets/raw/PASSWORD'))!;
  t.match(seen.url, /workspaceSlug=first-project-fujh&environment=dev&secretPath=%2Fnested%2Fdeeper/);
  t.equal(api.logins, 1, 'one login serves every call');
  const raw = await client(spec({}, { expandSecretReferences: false }));
  t.equal(dec(await raw.getSecret({ key: 'DB_URL' })), 'postgres://${DB_USER}@db');
});

t.test('the scope\'s secrets: imports (own secrets win), find by name and prefix, recursive, secretsPath', async (t) => {
  const c = await client();
  t.same(strings(await c.getAllSecrets({})), { SHARED_TOKEN: 'from-import', API_KEY: `${CANARY}-api`, DB_USER: 'orders', DB_URL: 'postgres://orders@db', JSON_BLOB: JSON.stringify({ key: `${CANARY}-json`, port: 5432 }) });
  t.same(Object.keys(await c.getAllSecrets({ path: 'DB_' })).sort(), ['DB_URL', 'DB_USER']);
  t.same(Object.keys(await c.getAllSecrets({ name: { regexp: '^API' } })), ['API_KEY']);
  const nested = await client(spec({}, { secretsPath: '/nested', recursive: true }));
  t.same(strings(await nested.getAllSecrets({})), { PASSWORD: `${CANARY}-deep` });
  t.equal(dec(await nested.getSecret({ key: '/shared/SHARED_TOKEN' })), 'from-import');
  t.equal((await providerError(c.getAllSecrets({ tags: { team: 'a' } }))).code, 'Unsupported');
});

t.test('token auth and JWT auth; an expired token is renewed; close revokes only a login\'s token', async (t) => {
  const token = await client(spec({ auth: { tokenAuthCredentials: { accessToken: { name: 'infisical-token', key: 'token' } } } }));
  t.equal(dec(await token.getSecret({ key: 'DB_USER' })), 'orders');
  await token.close();
  t.same(api.revoked, [], 'the store\'s own access token is not revoked');
  const jwt = await client(spec({ auth: { jwtAuthCredentials: { identityId: { name: 'jwt-auth', key: 'identityId' }, jwt: { name: 'jwt-auth', key: 'jwt' } } } }));
  await jwt.validate();
  t.match(api.seen.find((s) => s.url === '/api/v1/auth/jwt-auth/login'), { method: 'POST' });
  await jwt.close();
  t.equal(api.revoked.length, 1, 'the login\'s token is revoked on close');
  // A token the server no longer accepts (revoked, expired early): one new login, then the call.
  const c = await client();
  await c.validate();
  const before = api.logins;
  await fetch(`${api.url}/api/v1/auth/token/revoke`, { method: 'POST', headers: { Authorization: `Bearer ${CANARY}-static-token` }, body: JSON.stringify({ accessToken: `inf-access-${before}` }) });
  t.equal(dec(await c.getSecret({ key: 'DB_USER' })), 'orders');
  t.equal(api.logins, before + 1);
});

t.test('failures: status and name, never a value, the client secret or a token', async (t) => {
  const c = await client();
  const cases: [() => Promise<unknown>, string, RegExp][] = [
    [() => c.getSecret({ key: 'NOPE' }), 'NotFound', /key "NOPE": Infisical get secret answered HTTP 404/],
    [async () => (await client(spec(), { ...credentials, 'universal-auth-credentials/clientSecret': 'wrong' })).validate(), 'AuthFailed', /Infisical login \(universalAuthCredentials\) answered HTTP 401/],
    [async () => (await client(spec({}, { projectSlug: 'other' }))).getSecret({ key: 'API_KEY' }), 'NotFound', /HTTP 404/],
    [() => c.getSecret({ key: 'nested/PASSWORD' }), 'InvalidSpec', /must be an absolute path/],
    [() => c.getSecret({ key: '/nested/' }), 'InvalidSpec', /names a folder, not a secret/],
    [() => c.getSecret({ key: 'API_KEY', property: 'x' }), 'Unknown', /not JSON/],
    [() => c.getSecret({ key: 'JSON_BLOB', property: 'missing' }), 'NotFound', /property "missing" not found/],
    [() => c.getSecretMap({ key: 'API_KEY' }), 'Unknown', /not JSON/],
    [() => c.getSecret({ key: 'API_KEY', version: '2' }), 'Unsupported', /remoteRef.version/],
    [() => c.pushSecret(new TextEncoder().encode('x'), { remoteKey: '/missing-folder/X' }), 'NotFound', /key "\/missing-folder\/X": Infisical create secret answered HTTP 404/],
    [() => c.pushSecret(new TextEncoder().encode('x'), { remoteKey: 'API_KEY', property: 'k' }), 'Unknown', /not JSON/],
    [async () => (await client(spec({ hostAPI: 'http://127.0.0.1:1/api' }))).validate(), 'Unreachable', /cannot connect/],
  ];
  await expectFailures(t, cases, /CANARY/);
  const refused = provider.newClient({ ...testContext({ storeId: STORE, spec: spec(), credentials }), addresses: { privateAddresses: false, privateHint: 'flag' } });
  const e = await providerError(async () => (await refused).validate());
  t.match(e.message, /127\.0\.0\.1 is a loopback or private address; flag/);
});

t.test('validateSpec, references, the API base and key addresses', async (t) => {
  t.same(meta.validateSpec(spec()), []);
  t.match(meta.validateSpec(spec({ auth: { kubernetesAuthCredentials: { identityId: { name: 'a', key: 'b' } } } })).join(), /infisical.auth.kubernetesAuthCredentials is not supported by ESI/);
  t.match(meta.validateSpec(spec({ auth: {} })).join(), /must set exactly one of universalAuthCredentials/);
  t.match(meta.validateSpec(spec({}, { projectSlug: '' })).join(), /secretsScope.projectSlug must be a non-empty string/);
  t.match(meta.validateSpec(spec({}, { secretsPath: 'relative' })).join(), /secretsPath must be an absolute folder path/);
  t.match(meta.validateSpec(spec({ auth: { universalAuthCredentials: { clientId: { name: 'x' } } } })).join(), /clientId.key must be a non-empty string[^]*clientSecret must be an object/);
  t.same(meta.references(spec()).credentials.map((c) => `${c.path}=${c.name}/${c.key}`), [
    'infisical.auth.universalAuthCredentials.clientId=universal-auth-credentials/clientId',
    'infisical.auth.universalAuthCredentials.clientSecret=universal-auth-credentials/clientSecret',
  ]);
  t.equal(apiBase(undefined), 'https://app.infisical.com/api');
  t.equal(apiBase('https://infisical.corp.example/'), 'https://infisical.corp.example/api');
  t.equal(apiBase('https://infisical.corp.example/api/'), 'https://infisical.corp.example/api');
  t.same(secretAddress('/app', 'KEY'), { path: '/app', name: 'KEY' });
  t.same(secretAddress('/app', '/KEY'), { path: '/', name: 'KEY' });
});

t.test('PushSecret: created, updated only on change, a property path, an absolute path, exists, delete', async (t) => {
  const c = await client();
  const lookups = () => api.seen.filter((s) => s.url.startsWith('/api/v1/projects/slug/')).length;
  const lookupsBefore = lookups();
  const enc = (v: string) => new TextEncoder().encode(v);
  await c.pushSecret(enc(`${CANARY}-pushed`), { remoteKey: 'PUSHED' });
  t.equal(project.folders['/']!.PUSHED, `${CANARY}-pushed`, 'created in the scope\'s folder');
  const create = api.seen.find((s) => s.method === 'POST' && s.url === '/api/v3/secrets/raw/PUSHED')!;
  t.match(JSON.parse(create.body), { workspaceId: 'proj-first-project-fujh', environment: 'dev', secretPath: '/', type: 'shared', skipMultilineEncoding: true });
  const writes = () => api.seen.filter((s) => s.method === 'PATCH' || s.method === 'POST' && s.url.startsWith('/api/v3/')).length;
  const before = writes();
  await c.pushSecret(enc(`${CANARY}-pushed`), { remoteKey: 'PUSHED' });
  t.equal(writes(), before, 'an unchanged value is not written');
  await c.pushSecret(enc('v2'), { remoteKey: 'PUSHED' });
  t.equal(project.folders['/']!.PUSHED, 'v2');
  await c.pushSecret(enc('orders'), { remoteKey: '/nested/deeper/DB', property: 'db.user' });
  await c.pushSecret(enc('5432'), { remoteKey: '/nested/deeper/DB', property: 'port' });
  t.same(JSON.parse(project.folders['/nested/deeper']!.DB!), { db: { user: 'orders' }, port: '5432' }, 'a property is a dotted path into the JSON value');
  t.equal(await c.secretExists({ remoteKey: '/nested/deeper/DB', property: 'db.user' }), true);
  t.equal(await c.secretExists({ remoteKey: '/nested/deeper/DB', property: 'db.pass' }), false);
  t.equal(await c.secretExists({ remoteKey: 'SHARED_TOKEN' }), false, 'an imported secret is not this folder\'s');
  await c.deleteSecret({ remoteKey: '/nested/deeper/DB', property: 'db.user' });
  t.same(JSON.parse(project.folders['/nested/deeper']!.DB!), { port: '5432' });
  await c.deleteSecret({ remoteKey: '/nested/deeper/DB', property: 'port' });
  t.notOk(Object.hasOwn(project.folders['/nested/deeper']!, 'DB'), 'the last property gone: the secret is deleted');
  await c.deleteSecret({ remoteKey: 'PUSHED' });
  t.notOk(Object.hasOwn(project.folders['/']!, 'PUSHED'));
  await c.deleteSecret({ remoteKey: 'PUSHED' });
  t.equal(lookups() - lookupsBefore, 1, 'the project\'s id is looked up once per client');
});
