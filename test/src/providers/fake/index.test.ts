// The fake provider (spec.provider.fake), as ESO defines it: key + version lookups,
// JSON properties, maps, find by name, and writes against an in-memory copy.
import t from 'tap';
import pino from 'pino';
import { provider, validateSpec } from '../../../../src/providers/fake/index.js';
import { loadProvider, providerNameOf } from '../../../../src/providers/registry.js';
import { ProviderError, type ProviderContext, type SecretsClient } from '../../../../src/providers/types.js';

const dec = (b: Uint8Array): string => new TextDecoder().decode(b);
const enc = (s: string): Uint8Array => new TextEncoder().encode(s);

const spec = {
  data: [
    { key: '/db/creds', value: '{"user":"bob","password":"pw","nested":{"a.b":"dot","deep":{"x":1}},"list":["l0","l1"],"n":null}' },
    { key: '/db/creds', version: 'v1', value: '{"user":"old"}' },
    { key: '/api/token', value: 'tokval-XYZ' },
    { key: 'legacy', valueMap: { a: '1', b: '2' } },
  ],
};

function ctx(s: unknown = spec): ProviderContext {
  return {
    storeId: 'SecretStore/ns/fake',
    namespace: 'ns',
    spec: s,
    readCredential: async () => {
      throw new Error('unused');
    },
    serviceAccountToken: async () => 'unused',
    logger: pino({ level: 'silent' }),
    timeoutMs: 1000,
  };
}

async function client(): Promise<SecretsClient> {
  return provider.newClient(ctx());
}

t.test('registry loads the fake provider lazily and rejects unknown names', async (tt) => {
  const p = await loadProvider('fake');
  tt.equal(p, provider);
  tt.equal(p.name, 'fake');
  await tt.rejects(loadProvider('nosuch'), /provider "nosuch": is not supported by ESI/);
  tt.equal(providerNameOf({ fake: spec }), 'fake');
  tt.throws(() => providerNameOf({}), /names no provider/);
  tt.throws(() => providerNameOf({ fake: spec, vault: {} as never }), /exactly one provider, found fake, vault/);
});

t.test('getSecret: value, property, version, not found', async (tt) => {
  const c = await client();
  tt.equal(dec(await c.getSecret({ key: '/api/token' })), 'tokval-XYZ');
  tt.equal(dec(await c.getSecret({ key: '/db/creds', property: 'user' })), 'bob');
  tt.equal(dec(await c.getSecret({ key: '/db/creds', version: 'v1', property: 'user' })), 'old');
  tt.equal(dec(await c.getSecret({ key: '/db/creds', property: 'nested.deep' })), '{"x":1}');
  tt.equal(dec(await c.getSecret({ key: '/db/creds', property: 'nested.a\\.b' })), 'dot');
  tt.equal(dec(await c.getSecret({ key: '/db/creds', property: 'list.1' })), 'l1');
  tt.equal(dec(await c.getSecret({ key: '/db/creds', property: 'n' })), '');
  const notFound = async (p: Promise<unknown>, re: RegExp): Promise<void> => {
    const err = await p.then(() => undefined, (e: unknown) => e);
    tt.type(err, ProviderError);
    tt.equal((err as ProviderError).code, 'NotFound');
    tt.match((err as Error).message, re);
  };
  await notFound(c.getSecret({ key: '/nope' }), /SecretStore\/ns\/fake key "\/nope": secret not found/);
  await notFound(c.getSecret({ key: '/db/creds', version: 'v9' }), /version "v9" not found/);
  await notFound(c.getSecret({ key: '/db/creds', property: 'nope' }), /property "nope" not found/);
  const notJson = await c.getSecret({ key: '/api/token', property: 'x' }).catch((e: Error) => e);
  tt.match((notJson as Error).message, /value is not JSON/);
  tt.notMatch((notJson as Error).message, /tokval/, 'no value in the error');
  await tt.rejects(c.getSecret({ key: '/api/token', metadataPolicy: 'Fetch' }), /metadataPolicy Fetch is not supported/);
});

t.test('getSecretMap: JSON object, property, valueMap', async (tt) => {
  const c = await client();
  const m = await c.getSecretMap({ key: '/db/creds' });
  tt.same(Object.keys(m).sort(), ['list', 'n', 'nested', 'password', 'user']);
  tt.equal(dec(m.user!), 'bob');
  tt.equal(dec(m.list!), '["l0","l1"]');
  tt.same(Object.keys(await c.getSecretMap({ key: '/db/creds', property: 'nested' })).sort(), ['a.b', 'deep']);
  const legacy = await c.getSecretMap({ key: 'legacy' });
  tt.equal(dec(legacy.b!), '2');
  await tt.rejects(c.getSecretMap({ key: '/api/token' }), /value is not JSON/);
});

t.test('JSON numbers: a selected one as gjson writes it (as ESO), extract and objects as written, writes untouched', async (tt) => {
  // JSON.parse would give 12345678901234567000: an ID past 2^53 loses digits. A selected
  // non-integer is gjson's Result.String(): the shortest float64 digits, no exponent.
  const value = '{"id": 12345678901234567890, "price": 1.50, "big": 1e3, "neg": -0, "nested": {"ids": [12345678901234567891, 2.50]}, "pw": "x"}';
  const c = await provider.newClient(ctx({ data: [{ key: 'nums', value }] }));
  const prop = async (property: string) => dec(await c.getSecret({ key: 'nums', property }));
  tt.equal(await prop('id'), '12345678901234567890');
  tt.equal(await prop('price'), '1.5');
  tt.equal(await prop('big'), '1000');
  tt.equal(await prop('neg'), '-0');
  tt.equal(await prop('nested.ids.0'), '12345678901234567891');
  tt.equal(await prop('nested'), '{"ids":[12345678901234567891,2.50]}', 'an object value keeps its numbers');
  const m = await c.getSecretMap({ key: 'nums' });
  tt.same(Object.fromEntries(Object.entries(m).map(([k, v]) => [k, dec(v)])), {
    id: '12345678901234567890', price: '1.50', big: '1e3', neg: '-0', nested: '{"ids":[12345678901234567891,2.50]}', pw: 'x',
  }, 'dataFrom.extract');
  tt.same(dec((await c.getSecretMap({ key: 'nums', property: 'nested' })).ids!), '[12345678901234567891,2.50]');
  await c.pushSecret(enc(value), { remoteKey: 'pushed' });
  await c.pushSecret(enc('y'), { remoteKey: 'pushed', property: 'pw' });
  tt.equal(dec(await c.getSecret({ key: 'pushed' })), '{"id":12345678901234567890,"price":1.50,"big":1e3,"neg":-0,"nested":{"ids":[12345678901234567891,2.50]},"pw":"y"}',
    'a pushed property leaves the other fields\' numbers as they were');
});

t.test('getAllSecrets: by name regexp and path; tags unsupported', async (tt) => {
  const c = await client();
  tt.same(Object.keys(await c.getAllSecrets({ name: { regexp: '^/db/' } })), ['/db/creds']);
  tt.same(Object.keys(await c.getAllSecrets({ path: '/api' })), ['/api/token']);
  tt.equal(Object.keys(await c.getAllSecrets({})).length, 3, 'unversioned entries only');
  await tt.rejects(c.getAllSecrets({ tags: { a: 'b' } }), /tags is not supported/);
  await tt.rejects(c.getAllSecrets({ name: { regexp: '(' } }), /invalid find\.name\.regexp/);
});

t.test('writes go to the client in-memory copy', async (tt) => {
  const c = await client();
  await c.pushSecret(enc('new'), { remoteKey: '/pushed' });
  tt.equal(dec(await c.getSecret({ key: '/pushed' })), 'new');
  tt.ok(await c.secretExists({ remoteKey: '/pushed' }));
  await c.pushSecret(enc('v'), { remoteKey: '/obj', property: 'p' });
  await c.pushSecret(enc('w'), { remoteKey: '/obj', property: 'q' });
  tt.equal(dec(await c.getSecret({ key: '/obj', property: 'q' })), 'w');
  tt.ok(await c.secretExists({ remoteKey: '/obj', property: 'p' }));
  await c.deleteSecret({ remoteKey: '/obj', property: 'p' });
  tt.notOk(await c.secretExists({ remoteKey: '/obj', property: 'p' }));
  await c.deleteSecret({ remoteKey: '/pushed' });
  tt.notOk(await c.secretExists({ remoteKey: '/pushed' }));
  await c.deleteSecret({ remoteKey: '/never-existed' });
  const other = await client();
  tt.notOk(await other.secretExists({ remoteKey: '/obj' }), 'another client does not see the writes');
  tt.equal(spec.data.length, 4, 'the spec is not modified');
  await c.validate();
  await c.close();
  await tt.rejects(c.getSecret({ key: '/api/token' }), /client is closed/);
});

t.test('spec validation', async (tt) => {
  tt.same(validateSpec(spec), []);
  tt.same(validateSpec({}), ['fake.data must be a list']);
  tt.same(validateSpec({ data: [{ key: '' }, { key: 'a', value: 1 }] }), [
    'fake.data[0].key must be a non-empty string',
    'fake.data[1].value must be a string',
  ]);
  await tt.rejects(provider.newClient(ctx({ data: 'x' })), /InvalidSpec|fake\.data must be a list/);
});
