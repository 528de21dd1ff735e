// The conjur provider against the Conjur REST API stand-in on 127.0.0.1
// (test/support/standins/conjur.ts): ESO's documented stores (API key from two Secrets; JWT
// from a token Secret or the pod's own token), ESO's documented ExternalSecrets (a variable
// with a path-like id, find by name regexp), a JSON variable's property and map, find by
// annotations, paging past 100 variables and batches, token reuse and renewal, and no value,
// API key or token in any error.
import t from 'tap';
import { BATCH_SIZE, PAGE_SIZE, provider, variableName } from '../../../../src/providers/conjur/index.js';
import { meta } from '../../../../src/providers/conjur/meta.js';
import { providerNames } from '../../../../src/providers/registry.js';
import type { SecretsClient } from '../../../../src/providers/types.js';
import { testContext, providerError, expectFailures } from '../../../support/provider-context.js';
import { startConjurStandIn, type ConjurVariable } from '../../../support/standins/conjur.js';

const CANARY = 'CANARY-conjur-6f1a2c';
const API_KEY = `${CANARY}-api-key`;
const JWT = `${CANARY}.jwt.sig`;
const STORE = 'SecretStore/team-a/conjur';
const dec = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const strings = (m: Record<string, Uint8Array>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, dec(v)]));

const variables: Record<string, ConjurVariable> = {
  'data/app1/secret00': { value: `${CANARY}-s00` },
  'app1/secret01': { value: 'one', annotations: { team: 'orders', env: 'prod' } },
  'app1/secret02': { value: 'two', annotations: { team: 'orders', env: 'dev' } },
  'app1/config': { value: JSON.stringify({ user: 'orders', port: 5432 }) },
  'app2/other': { value: 'x', annotations: { team: 'billing' } },
};
// Enough variables for a second page of the resource list and a second batch.
for (let i = 0; i < PAGE_SIZE + 10; i++) variables[`bulk/v${String(i).padStart(3, '0')}`] = { value: `b${i}` };
const api = await startConjurStandIn(t, 'conjur', {
  apiKey: { login: 'host/eso/app1', key: API_KEY },
  jwt: { serviceId: 'my-jwt-auth-service', token: JWT },
}, variables, ['app1/hidden']);
variables['app1/hidden'] = { value: 'no' };

/** ESO's documented store: the login and the API key from Secrets. */
const spec = (extra: object = {}) => ({
  url: api.url,
  auth: { apikey: { account: 'conjur', userRef: { name: 'user', key: 'conjur-hostid' }, apiKeyRef: { name: 'apikey', key: 'conjur-apikey' } } },
  ...extra,
});
const jwtSpec = (j: object) => spec({ auth: { jwt: { account: 'conjur', serviceID: 'my-jwt-auth-service', ...j } } });
const credentials = { 'user/conjur-hostid': 'host/eso/app1', 'apikey/conjur-apikey': `${API_KEY}\n`, 'my-jwt-secret/token': JWT };

function client(s: object = spec(), creds: Record<string, string> = credentials, token?: () => Promise<string>): Promise<SecretsClient> {
  return provider.newClient(testContext({ storeId: STORE, spec: s, credentials: creds, ...(token ? { token } : {}) }));
}

t.test('registered; capabilities', async (t) => {
  t.ok(providerNames().includes('conjur'));
  t.same(meta.capabilities.find, { name: true, tags: true, path: false });
  t.equal(meta.capabilities.write, false, 'read-only, as ESO\'s store');
  t.equal(variableName('conjur:variable:data/app1:x'), 'data/app1:x');
});

t.test('ESO\'s documented ExternalSecret: a variable by its id; a property and a map of a JSON variable; one token serves every call', async (t) => {
  const c = await client();
  const before = api.authentications;
  t.equal(dec(await c.getSecret({ key: 'data/app1/secret00' })), `${CANARY}-s00`);
  t.ok(api.seen.some((s) => s.url === '/secrets/conjur/variable/data%2Fapp1%2Fsecret00'), 'the id is one path segment');
  t.equal(dec(await c.getSecret({ key: 'app1/config', property: 'user' })), 'orders');
  t.same(strings(await c.getSecretMap({ key: 'app1/config' })), { user: 'orders', port: '5432' });
  t.equal(api.authentications - before, 1, 'one authentication');
  const auth = api.seen.find((s) => s.url === '/authn/conjur/host%2Feso%2Fapp1/authenticate')!;
  t.equal(auth.body, API_KEY, 'the API key is the body, trimmed');
  t.equal(auth.headers['accept-encoding'], 'base64');
});

t.test('find: ESO\'s documented regexp, annotations as tags, past one page and one batch', async (t) => {
  const c = await client();
  t.same(strings(await c.getAllSecrets({ name: { regexp: '^app1\\/.+$' } })), { 'app1/secret01': 'one', 'app1/secret02': 'two', 'app1/config': JSON.stringify({ user: 'orders', port: 5432 }) },
    'keyed by the variable id; a variable the identity cannot see is not listed');
  t.same(strings(await c.getAllSecrets({ tags: { team: 'orders', env: 'prod' } })), { 'app1/secret01': 'one' }, 'every tag must match an annotation');
  const bulk = await c.getAllSecrets({ name: { regexp: '^bulk/' } });
  t.equal(Object.keys(bulk).length, PAGE_SIZE + 10);
  t.equal(dec(bulk['bulk/v105']!), 'b105');
  t.ok(api.seen.some((s) => s.url.includes(`offset=${PAGE_SIZE}`)), 'the second page was listed');
  t.ok(api.seen.filter((s) => s.url.startsWith('/secrets?variable_ids=')).length >= Math.ceil((PAGE_SIZE + 10) / BATCH_SIZE), 'read in batches');
  t.same(await c.getAllSecrets({ name: { regexp: '^nothing$' } }), {});
});

t.test('jwt: a token Secret (key defaults to token), or the pod\'s own token; a host id in the path', async (t) => {
  const bySecret = await client(jwtSpec({ secretRef: { name: 'my-jwt-secret' } }));
  t.equal(dec(await bySecret.getSecret({ key: 'data/app1/secret00' })), `${CANARY}-s00`);
  const auth = api.seen.filter((s) => s.url === '/authn-jwt/my-jwt-auth-service/conjur/authenticate').at(-1)!;
  t.equal(new URLSearchParams(auth.body).get('jwt'), JWT);
  let asked = 'none';
  const byPod = await client(jwtSpec({ serviceAccountRef: { name: 'app', audiences: ['conjur'] } }), credentials, async () => {
    asked = 'pod';
    return JWT;
  });
  await byPod.validate();
  t.equal(asked, 'pod');
  const withHost = await client(jwtSpec({ secretRef: { name: 'my-jwt-secret' }, hostId: 'host/app' }));
  t.match((await providerError(() => withHost.validate())).message, /Conjur authenticate answered HTTP 401/);
  t.ok(api.seen.some((s) => s.url === '/authn-jwt/my-jwt-auth-service/conjur/host%2Fapp/authenticate'), 'the host id is a path segment');
});

t.test('failures: status and name, never a value, the API key or a token', async (t) => {
  const c = await client();
  const cases: [() => Promise<unknown>, string, RegExp][] = [
    [() => c.getSecret({ key: 'app1/nope' }), 'NotFound', /key "app1\/nope": Conjur retrieve secret answered HTTP 404/],
    [() => c.getSecret({ key: 'app1/hidden' }), 'Forbidden', /key "app1\/hidden": Conjur retrieve secret answered HTTP 403/],
    [async () => (await client(spec(), { ...credentials, 'apikey/conjur-apikey': 'wrong' })).validate(), 'AuthFailed', /Conjur authenticate answered HTTP 401/],
    [async () => (await client(spec(), { 'user/conjur-hostid': 'host/eso/app1', 'apikey/conjur-apikey': ' ' })).validate(), 'AuthFailed', /apiKeyRef: the Secret's value is empty/],
    [() => c.getSecret({ key: 'data/app1/secret00', version: '2' }), 'Unsupported', /remoteRef.version/],
    [() => c.getSecret({ key: 'data/app1/secret00', property: 'x' }), 'Unknown', /not JSON/],
    [() => c.getAllSecrets({ path: 'app1' }), 'Unsupported', /find.path/],
    [() => c.pushSecret(new Uint8Array(), { remoteKey: 'X' }), 'Unsupported', /PushSecret is not supported by the conjur provider/],
  ];
  await expectFailures(t, cases, /CANARY/);
  const refused = provider.newClient({ ...testContext({ storeId: STORE, spec: spec(), credentials }), addresses: { privateAddresses: false, privateHint: 'flag' } });
  t.match((await providerError(async () => (await refused).validate())).message, /127\.0\.0\.1 is a loopback or private address; flag/);
});

t.test('an expired token: a 401, then one new authentication', async (t) => {
  const c = await client();
  await c.validate();
  const before = api.authentications;
  t.equal(dec(await c.getSecret({ key: 'data/app1/secret00' })), `${CANARY}-s00`);
  t.equal(api.authentications, before, 'a valid token is reused');
  api.expireTokens();
  t.equal(dec(await c.getSecret({ key: 'data/app1/secret00' })), `${CANARY}-s00`);
  t.equal(api.authentications, before + 1, 'authenticated once more');
});

t.test('validateSpec and references', async (t) => {
  t.same(meta.validateSpec(spec()), []);
  t.same(meta.validateSpec(jwtSpec({ secretRef: { name: 'my-jwt-secret', key: 'token' } })), []);
  t.match(meta.validateSpec(spec({ url: '' })).join(), /conjur.url must be a URL, e.g. https:\/\/conjur.example.com/);
  t.match(meta.validateSpec(spec({ auth: {} })).join(), /exactly one of apikey or jwt/);
  t.match(meta.validateSpec(spec({ auth: { cert: { account: 'a', serviceID: 's', clientCertRef: { name: 'c' }, clientKeyRef: { name: 'k' } } } })).join(), /conjur.auth.cert is not supported by ESI/);
  t.match(meta.validateSpec(jwtSpec({})).join(), /conjur.auth.jwt must set secretRef or serviceAccountRef/);
  t.match(meta.validateSpec(spec({ auth: { apikey: { account: '', userRef: { name: 'u' }, apiKeyRef: { name: 'a', key: 'k' } } } })).join(), /userRef.key must be a non-empty string[^]*apikey.account must be a non-empty string/);
  t.same(meta.references(spec()).credentials.map((c) => `${c.path}=${c.name}/${c.key}`), ['conjur.auth.apikey.userRef=user/conjur-hostid', 'conjur.auth.apikey.apiKeyRef=apikey/conjur-apikey']);
  t.same(meta.references(jwtSpec({ secretRef: { name: 'my-jwt-secret' } })).credentials, [{ path: 'conjur.auth.jwt.secretRef', kind: 'Secret', name: 'my-jwt-secret', key: 'token' }]);
  t.same(meta.references(jwtSpec({ serviceAccountRef: { name: 'my-sa' } })).serviceAccounts, [{ path: 'conjur.auth.jwt.serviceAccountRef', name: 'my-sa' }]);
});
