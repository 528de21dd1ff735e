// The onepassword provider against the 1Password Connect stand-in on 127.0.0.1
// (test/support/standins/onepassword.ts): ESO's meaning of key/property, vault order,
// documents, find, PushSecret, the token read per call, and no value in any error.
import t from 'tap';
import { meta } from '../../../../src/providers/onepassword/meta.js';
import { provider } from '../../../../src/providers/onepassword/index.js';
import type { AddressPolicy } from '../../../../src/egress/policy.js';
import type { SecretsClient } from '../../../../src/providers/types.js';
import { testContext, providerError } from '../../../support/provider-context.js';
import { startOnePasswordStandIn } from '../../../support/standins/onepassword.js';

const CANARY = 'CANARY-op-2d9e61';
const TOKEN = 'op-connect-token-CANARY-7a1';
const STORE = 'SecretStore/team-a/onepassword';
const dec = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const strings = (m: Record<string, Uint8Array>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, dec(v)]));

const op = await startOnePasswordStandIn(t, TOKEN, {
  production: [
    { title: 'db', fields: [{ label: 'username', value: 'orders' }, { label: 'password', value: `${CANARY}-prod` }] },
    { title: 'dup', fields: [{ label: 'password', value: 'a' }, { label: 'password', value: CANARY }] },
    { title: 'tls', category: 'DOCUMENT', files: [{ name: 'tls.crt', content: 'CERT' }, { name: 'tls.key', content: `${CANARY}-key` }] },
  ],
  staging: [
    { title: 'db', fields: [{ label: 'password', value: 'staging-pw' }] },
    { title: 'api', fields: [{ label: 'token', value: 'staging-token' }, { label: 'url', value: 'https://api' }] },
  ],
});

/** ESO's documented store: vaults in priority order, the Connect token from a Secret. */
const spec = (vaults: Record<string, number> = { staging: 1, production: 2 }) => ({
  connectHost: op.url,
  vaults,
  auth: { secretRef: { connectTokenSecretRef: { name: 'onepassword-connect-token-staging', key: 'token' } } },
});

function client(s: object = spec(), opts: { token?: string; addresses?: AddressPolicy } = {}): Promise<SecretsClient> {
  const ctx = testContext({ storeId: STORE, spec: s, namespace: 'team-a', credentials: { 'onepassword-connect-token-staging/token': opts.token ?? TOKEN } });
  return provider.newClient({ ...ctx, ...(opts.addresses ? { addresses: opts.addresses } : {}) });
}

const failure = providerError;

t.test('key = item title, property = field label (default password); the first vault in order wins', async (t) => {
  const c = await client();
  t.equal(dec(await c.getSecret({ key: 'db' })), 'staging-pw', 'staging (1) before production (2)');
  const prodFirst = await client(spec({ production: 1, staging: 2 }));
  t.equal(dec(await prodFirst.getSecret({ key: 'db' })), `${CANARY}-prod`);
  t.equal(dec(await prodFirst.getSecret({ key: 'db', property: 'username' })), 'orders');
  t.same(strings(await prodFirst.getSecretMap({ key: 'db' })), { username: 'orders', password: `${CANARY}-prod` });
  t.same(strings(await c.getSecretMap({ key: 'api', property: 'url' })), { url: 'https://api' });
  t.equal(dec(await c.getSecret({ key: 'tls' })), 'CERT', 'a DOCUMENT: its first file');
  t.equal(dec(await c.getSecret({ key: 'tls', property: 'tls.key' })), `${CANARY}-key`);
  t.same(Object.keys(await c.getSecretMap({ key: 'tls' })).sort(), ['tls.crt', 'tls.key']);
  await c.validate();
});

t.test('find: path = an item title, name = a regexp on labels; first vault wins per label', async (t) => {
  const c = await client();
  t.same(strings(await c.getAllSecrets({ path: 'api' })), { token: 'staging-token', url: 'https://api' });
  const tokens = strings(await c.getAllSecrets({ name: { regexp: '^(token|username)$' } }));
  t.same(tokens, { token: 'staging-token', username: 'orders' });
  t.equal((await failure(c.getAllSecrets({ tags: { a: 'b' } }))).code, 'Unsupported');
});

t.test('failures name the store, item and status; never a value or the token', async (t) => {
  const c = await client();
  const cases: [() => Promise<unknown>, string, RegExp][] = [
    [() => c.getSecret({ key: 'nope' }), 'NotFound', /no 1Password item titled "nope" in vaults staging, production/],
    [() => c.getSecret({ key: 'db', property: 'missing' }), 'NotFound', /expected one field labelled "missing" in item "db", found 0/],
    [async () => (await client(spec({ production: 1 }))).getSecret({ key: 'dup' }), 'Unknown', /found 2/],
    [() => c.getSecret({ key: 'db', version: '2' }), 'Unsupported', /remoteRef.version/],
    [async () => (await client(spec({ nowhere: 1 }))).validate(), 'NotFound', /found 0 1Password vaults named "nowhere"/],
    [async () => (await client(spec(), { token: 'wrong' })).getSecret({ key: 'db' }), 'AuthFailed', /1Password Connect list vaults answered HTTP 401/],
  ];
  for (const [p, code, message] of cases) {
    const e = await failure(p());
    t.equal(e.code, code, e.message);
    t.match(e.message, message);
    t.match(e.message, STORE);
    t.notMatch(JSON.stringify({ m: e.message, e }), /CANARY/);
  }
  const refused = await failure((await client(spec(), { addresses: { privateAddresses: false } })).validate());
  t.equal(refused.code, 'Forbidden', 'the address policy applies to connectHost');
});

t.test('PushSecret: creates the item in the first vault, updates one field, deletes field then item', async (t) => {
  const c = await client();
  await c.pushSecret(Buffer.from(`${CANARY}-pushed`), { remoteKey: 'new-item' });
  const created = op.items('staging').find((i) => i.title === 'new-item');
  t.match(created, { category: 'SERVER', fields: [{ label: 'password', value: `${CANARY}-pushed`, type: 'CONCEALED' }] });
  t.ok(await c.secretExists({ remoteKey: 'new-item' }));
  await c.pushSecret(Buffer.from('user'), { remoteKey: 'new-item', property: 'username' });
  await c.pushSecret(Buffer.from('pw2'), { remoteKey: 'new-item' });
  t.same(strings(await c.getSecretMap({ key: 'new-item' })), { password: 'pw2', username: 'user' });
  await c.deleteSecret({ remoteKey: 'new-item', property: 'username' });
  t.same(strings(await c.getSecretMap({ key: 'new-item' })), { password: 'pw2' });
  t.notOk(await c.secretExists({ remoteKey: 'new-item', property: 'username' }));
  await c.deleteSecret({ remoteKey: 'new-item' });
  t.notOk(op.items('staging').some((i) => i.title === 'new-item'), 'the emptied item is deleted');
  await c.deleteSecret({ remoteKey: 'new-item' });
  t.pass('deleting what is gone is a no-op');
});

t.test('the token is read for every call: a rotated token works at once', async (t) => {
  let token = TOKEN;
  const ctx = testContext({ storeId: STORE, spec: spec(), credentials: {} });
  const c = await provider.newClient({ ...ctx, readCredential: async () => Buffer.from(`${token}\n`) });
  t.equal(dec(await c.getSecret({ key: 'api', property: 'url' })), 'https://api');
  op.setToken('rotated');
  token = 'rotated';
  t.equal(dec(await c.getSecret({ key: 'api', property: 'url' })), 'https://api');
  op.setToken(TOKEN);
});

t.test('validateSpec and references', async (t) => {
  t.same(meta.validateSpec(spec()), []);
  t.match(meta.validateSpec({ ...spec(), vaults: { a: 1, b: 1 } }).join(), /unique/);
  t.match(meta.validateSpec({ ...spec(), vaults: {} }).join(), /at least one vault/);
  t.match(meta.validateSpec({ ...spec(), connectHost: 'onepassword-connect' }).join(), /onepassword.connectHost "onepassword-connect" is not a URL/);
  t.match(meta.validateSpec({ ...spec(), auth: { secretRef: {} } }).join(), /connectTokenSecretRef must be an object with name and key/);
  t.same(meta.references(spec()).credentials, [{ path: 'onepassword.auth.secretRef.connectTokenSecretRef', kind: 'Secret', name: 'onepassword-connect-token-staging', key: 'token' }]);
});
