// The doppler provider against the Doppler API stand-in on 127.0.0.1
// (test/support/standins/doppler.ts), reached as ESO reaches another host: DOPPLER_BASE_URL
// in the process environment. Secrets, JSON maps, the whole config with find, the name
// transformer and `format`, and no value or token in any error.
import t from 'tap';
import { BASE_URL_ENV, provider } from '../../../../src/providers/doppler/index.js';
import { meta } from '../../../../src/providers/doppler/meta.js';
import { type SecretsClient } from '../../../../src/providers/types.js';
import { testContext, providerError, expectFailures } from '../../../support/provider-context.js';
import { startDopplerStandIn } from '../../../support/standins/doppler.js';

const CANARY = 'CANARY-doppler-5c0b8e';
const TOKEN = 'dp.st.prd.CANARY-token-19';
const STORE = 'SecretStore/team-a/doppler-auth-api';
const dec = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const strings = (m: Record<string, Uint8Array>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, dec(v)]));

const api = await startDopplerStandIn(t, TOKEN, {
  project: 'auth-api',
  config: 'prd',
  secrets: { DB_PASSWORD: `${CANARY}-db`, DB_USER: 'orders', API_KEY: 'k1', APP_CONFIG: JSON.stringify({ port: 8080, name: 'auth', tls: { on: true } }) },
});
const saved = process.env[BASE_URL_ENV];
process.env[BASE_URL_ENV] = api.url;
t.teardown(() => {
  if (saved === undefined) delete process.env[BASE_URL_ENV];
  else process.env[BASE_URL_ENV] = saved;
});

/** ESO's documented store: a service token in a Secret (key defaults to dopplerToken). */
const spec = (extra: object = {}) => ({ auth: { secretRef: { dopplerToken: { name: 'doppler-token-auth-api' } } }, ...extra });

function client(s: object = spec(), token = TOKEN): Promise<SecretsClient> {
  return provider.newClient(testContext({ storeId: STORE, spec: s, credentials: { 'doppler-token-auth-api/dopplerToken': `${token}\n` } }));
}

const failure = providerError;

t.test('one secret (its computed value); a JSON secret as a map; validate', async (t) => {
  const c = await client();
  t.equal(dec(await c.getSecret({ key: 'DB_PASSWORD' })), `${CANARY}-db`);
  t.same(strings(await c.getSecretMap({ key: 'APP_CONFIG' })), { port: '8080', name: 'auth', tls: '{"on":true}' });
  await c.validate();
  t.match(api.seen.at(-1), { url: '/v3/me' });
  const scoped = await client(spec({ project: 'auth-api', config: 'prd' }));
  t.equal(dec(await scoped.getSecret({ key: 'DB_USER' })), 'orders');
  t.match(api.seen.at(-1)!.url, /project=auth-api&config=prd&name=DB_USER/);
});

t.test('the whole config: find by name and prefix, nameTransformer, format', async (t) => {
  const c = await client();
  t.same(Object.keys(await c.getAllSecrets({})).sort(), ['API_KEY', 'APP_CONFIG', 'DB_PASSWORD', 'DB_USER']);
  t.same(strings(await c.getAllSecrets({ path: 'DB_' })), { DB_PASSWORD: `${CANARY}-db`, DB_USER: 'orders' });
  t.same(Object.keys(await c.getAllSecrets({ name: { regexp: 'KEY$' } })), ['API_KEY']);
  const camel = await client(spec({ nameTransformer: 'upper-camel' }));
  t.same(Object.keys(await camel.getAllSecrets({})).sort(), ['ApiKey', 'AppConfig', 'DbPassword', 'DbUser']);
  const env = await client(spec({ format: 'env' }));
  const file = strings(await env.getAllSecrets({}));
  t.same(Object.keys(file), ['DOPPLER_SECRETS_FILE']);
  t.match(file.DOPPLER_SECRETS_FILE, /^API_KEY="k1"$/m);
  t.equal((await failure(() => c.getAllSecrets({ tags: { a: 'b' } }))).code, 'Unsupported');
});

t.test('failures: status and name, never a value or the token', async (t) => {
  const c = await client();
  const cases: [() => Promise<unknown>, string, RegExp][] = [
    [() => c.getSecret({ key: 'NOPE' }), 'NotFound', /key "NOPE": Doppler get secret answered HTTP 404/],
    [async () => (await client(spec(), 'dp.st.wrong')).validate(), 'AuthFailed', /HTTP 401/],
    [async () => (await client(spec({ project: 'other', config: 'prd' }))).getSecret({ key: 'DB_USER' }), 'Forbidden', /HTTP 403/],
    [() => c.getSecretMap({ key: 'DB_PASSWORD' }), 'Unknown', /not JSON/],
    [() => c.getSecret({ key: 'DB_USER', version: '2' }), 'Unsupported', /remoteRef.version/],
    [() => c.pushSecret(new Uint8Array(), { remoteKey: 'X' }), 'Unsupported', /PushSecret/],
  ];
  await expectFailures(t, cases, /CANARY/);
});

t.test('validateSpec and references', async (t) => {
  t.same(meta.validateSpec(spec()), []);
  t.match(meta.validateSpec({ auth: { oidcConfig: { identity: 'x', serviceAccountRef: { name: 'sa' } } } }).join(), /oidcConfig is not supported/);
  t.match(meta.validateSpec(spec({ format: 'xml' })).join(), /doppler.format must be one of/);
  t.match(meta.validateSpec(spec({ nameTransformer: 'SCREAMING' })).join(), /doppler.nameTransformer must be one of/);
  t.same(meta.references(spec()).credentials, [{ path: 'doppler.auth.secretRef.dopplerToken', kind: 'Secret', name: 'doppler-token-auth-api', key: 'dopplerToken' }]);
});
