// The vault provider against a real Vault-API dev server (OpenBao when built, else
// HashiCorp Vault; test/platform/backends/openbao-install.sh): the shared conformance
// suite on KV v1 and v2, and KV semantics (properties, versions, find, push, delete).
// Auth methods, token lifecycle, errors and TLS are in vault-auth.test.ts; the set-up
// is in vault-fixture.ts. Run: `npx tap test/e2e/providers/vault.test.ts`.
import t from 'tap';
import { LosslessNumber } from 'lossless-json';
import type { Test } from 'tap';
import { freePort } from '../../support/platform/processes.js';
import type { ApiError } from '../../support/platform/backends/openbao.js';
import { decodeValue } from '../../../src/externalsecret/decode.js';
import { provider } from '../../../src/providers/vault/index.js';
import { runConformance, type CaseName, type ConformanceTarget } from '../../support/conformance.js';
import { CANARY, STORE, MOUNT, caught, isError, json, run, text, vaultFixture, type Kv } from '../../support/fixtures/vault.js';

const { server, tokenSpec, newClient, seed, rawRead } = await vaultFixture(t);

// ---------------------------------------------------------------- conformance

/** Cases of the shared suite that assume a plain value stored under a key. */
const MAP_SHAPED = 'a Vault KV entry is a map: without remoteRef.property a read returns the whole map as JSON and a push ' +
  'without property needs a JSON object (ESO semantics), so a plain value cannot be seeded, pushed or read back; ' +
  'the map-shaped equivalent of this case runs below as "vault KV <version>: <case>"';
const PLAIN_VALUE_CASES: CaseName[] = ['get', 'decoding', 'find-name', 'find-tags', 'find-path', 'push', 'delete', 'exists', 'version'];

for (const kv of ['v2', 'v1'] as const) {
  const unsupported: Partial<Record<CaseName, string>> = Object.fromEntries(PLAIN_VALUE_CASES.map((c) => [c, MAP_SHAPED]));
  const target: ConformanceTarget = {
    name: `vault (${server.impl} ${server.version}, KV ${kv})`,
    provider,
    storeId: STORE,
    client: () => newClient(tokenSpec(kv)),
    badAuthClient: () => newClient(tokenSpec(kv), { credentials: { 'vault-token/token': 'hvs.not-a-real-token' } }),
    unreachableClient: async () => newClient({ ...tokenSpec(kv), server: `http://127.0.0.1:${await freePort()}` }),
    seed: async (key, value, opts) => {
      const parsed = JSON.parse(value) as Record<string, unknown>;
      await seed(kv, key, parsed, opts?.tags);
    },
    key: (base) => `conformance/${base}`,
    pathPrefix: 'conformance/',
    unsupported,
  };
  await runConformance(t, target);
}

// ---------------------------------------------------------------- KV semantics (both versions)

async function kvCases(tt: Test, kv: Kv): Promise<void> {
  const c = await newClient(tokenSpec(kv));
  tt.teardown(() => c.close());
  const k = (base: string) => `${run}-${kv}/${base}`;

  await tt.test('get: the whole map as Go-style JSON (sorted keys, HTML escaped), properties by name and path', async (t2) => {
    await seed(kv, k('db'), { username: 'app', password: `${CANARY}<&>`, nested: { port: 5432, tls: true }, 'a.b': 'dotted' });
    t2.equal(text(await c.getSecret({ key: k('db') })),
      `{"a.b":"dotted","nested":{"port":5432,"tls":true},"password":"${CANARY}\\u003c\\u0026\\u003e","username":"app"}`);
    t2.equal(text(await c.getSecret({ key: k('db'), property: 'password' })), `${CANARY}<&>`);
    t2.equal(text(await c.getSecret({ key: k('db'), property: 'nested.port' })), '5432');
    t2.equal(text(await c.getSecret({ key: k('db'), property: 'nested' })), '{"port":5432,"tls":true}');
    t2.equal(text(await c.getSecret({ key: k('db'), property: 'a.b' })), 'dotted', 'an exact key wins over a path');
    isError(t2, await caught(c.getSecret({ key: k('db'), property: 'nope' })), 'NotFound', { key: k('db'), match: /property "nope"/ });
    isError(t2, await caught(c.getSecret({ key: k('absent') })), 'NotFound', { key: k('absent') });
    t2.same(json(await c.getSecretMap({ key: k('db') })), { username: 'app', password: `${CANARY}<&>`, nested: '{"port":5432,"tls":true}', 'a.b': 'dotted' });
    t2.same(json(await c.getSecretMap({ key: k('db'), property: 'nested' })), { port: '5432', tls: 'true' });
    isError(t2, await caught(c.getSecretMap({ key: k('db'), property: 'username' })), 'Unknown', { match: /not a JSON object/ });
  });

  await tt.test('JSON numbers keep the text Vault answers with: map, property, path, extract, JSON fields, pushes', async (t2) => {
    // Seeded as raw JSON text. KV v1 keeps a number's text; KV v2 (OpenBao) answers with its
    // float (12345678901234567000, 1.5, 1000): that text is lost before any client reads it, so
    // ESI passes on what Vault answers. A JSON document in a string field is kept by both.
    const N = (v: string) => new LosslessNumber(v);
    const held = kv === 'v1' ? { id: '12345678901234567890', price: '1.50', big: '1e3', id2: '12345678901234567891' }
      : { id: '12345678901234567000', price: '1.5', big: '1000', id2: '12345678901234567000' };
    const cfg = '{"id": 12345678901234567890, "price": 1.50, "n": {"ids": [12345678901234567891]}}';
    await seed(kv, k('nums'), { id: N('12345678901234567890'), price: N('1.50'), big: N('1e3'), n: { ids: [N('12345678901234567891')] }, cfg });
    t2.equal(text(await c.getSecret({ key: k('nums') })),
      `{"big":${held.big},"cfg":${JSON.stringify(cfg)},"id":${held.id},"n":{"ids":[${held.id2}]},"price":${held.price}}`, 'the whole map');
    t2.same([await c.getSecret({ key: k('nums'), property: 'id' }), await c.getSecret({ key: k('nums'), property: 'price' }),
      await c.getSecret({ key: k('nums'), property: 'big' }), await c.getSecret({ key: k('nums'), property: 'n.ids.0' })].map(text),
    [held.id, held.price, held.big, held.id2], 'properties and a path');
    t2.same(json(await c.getSecretMap({ key: k('nums') })),
      { id: held.id, price: held.price, big: held.big, n: `{"ids":[${held.id2}]}`, cfg }, 'dataFrom.extract');
    t2.same(json(await c.getSecretMap({ key: k('nums'), property: 'cfg' })),
      { id: '12345678901234567890', price: '1.50', n: '{"ids":[12345678901234567891]}' }, 'dataFrom.extract of a JSON field');
    // A pushed map goes out as written (never as a parser's number object).
    await c.pushSecret(Buffer.from('{"id": 12345678901234567890, "price": 1.50}'), { remoteKey: k('nums-pushed') });
    await c.pushSecret(Buffer.from('x'), { remoteKey: k('nums-pushed'), property: 'pw' });
    t2.same([await c.getSecret({ key: k('nums-pushed'), property: 'id' }), await c.getSecret({ key: k('nums-pushed'), property: 'price' })].map(text),
      [held.id, held.price], 'a pushed map, and the fields a pushed property leaves alone');
  });

  await tt.test('keys may repeat the mount (and data/ on KV v2), as ESO; without spec.path the key names the mount', async (t2) => {
    await seed(kv, k('prefixed'), { v: 'p' });
    t2.equal(text(await c.getSecret({ key: `${MOUNT[kv]}/${k('prefixed')}`, property: 'v' })), 'p');
    if (kv === 'v2') t2.equal(text(await c.getSecret({ key: `secret/data/${k('prefixed')}`, property: 'v' })), 'p');
    const noPath = await newClient({ ...tokenSpec(kv), path: undefined });
    t2.equal(text(await noPath.getSecret({ key: `${MOUNT[kv]}/${k('prefixed')}`, property: 'v' })), 'p');
    await noPath.close();
  });

  await tt.test('decoding applies to a property', async (t2) => {
    await seed(kv, k('bin'), { blob: Buffer.from(`${CANARY}-bin`).toString('base64') });
    t2.equal(text(decodeValue('Base64', await c.getSecret({ key: k('bin'), property: 'blob' }))), `${CANARY}-bin`);
  });

  await tt.test('versions (KV v2) / unsupported (KV v1)', async (t2) => {
    if (kv === 'v1') {
      isError(t2, await caught(c.getSecret({ key: k('db'), version: '1' })), 'Unsupported', { key: k('db'), match: /KV v1/ });
      isError(t2, await caught(c.getSecret({ key: k('db'), metadataPolicy: 'Fetch' })), 'Unsupported', { key: k('db') });
      return;
    }
    const v1 = await seed(kv, k('versioned'), { v: 'first' });
    const v2 = await seed(kv, k('versioned'), { v: 'second' });
    t2.equal(text(await c.getSecret({ key: k('versioned'), property: 'v', version: String(v1) })), 'first');
    t2.equal(text(await c.getSecret({ key: k('versioned'), property: 'v', version: String(v2) })), 'second');
    t2.equal(text(await c.getSecret({ key: k('versioned'), property: 'v' })), 'second', 'no version = the latest');
    isError(t2, await caught(c.getSecret({ key: k('versioned'), version: '99' })), 'NotFound', { key: k('versioned'), match: /version "99"/ });
    isError(t2, await caught(c.getSecret({ key: k('versioned'), version: 'latest' })), 'InvalidSpec', { key: k('versioned') });
    await server.api('POST', `secret/metadata/${k('versioned')}`, { custom_metadata: { owner: 'team-a' } });
    t2.equal(text(await c.getSecret({ key: k('versioned'), metadataPolicy: 'Fetch', property: 'owner' })), 'team-a', 'metadataPolicy Fetch reads custom_metadata');
    t2.equal(text(await c.getSecret({ key: k('versioned'), metadataPolicy: 'Fetch', property: 'current_version' })), String(v2));
  });

  await tt.test('find by name, by path (recursive), by tags', async (t2) => {
    await seed(kv, k('find-alpha'), { n: 'A' }, { team: run, env: 'prod' });
    await seed(kv, k('find-beta'), { n: 'B' }, { team: run, env: 'dev' });
    await seed(kv, k('other'), { n: 'C' });
    await seed(kv, k('tree/one'), { n: 'T1' });
    await seed(kv, k('tree/sub/two'), { n: 'T2' });
    const byName = await c.getAllSecrets({ name: { regexp: `^${run}-${kv}/find-` } });
    t2.same(json(byName), { [k('find-alpha')]: '{"n":"A"}', [k('find-beta')]: '{"n":"B"}' }, 'keys relative to the mount, values the whole map');
    t2.same(json(await c.getAllSecrets({ path: k('tree') })), { [k('tree/one')]: '{"n":"T1"}', [k('tree/sub/two')]: '{"n":"T2"}' });
    t2.same(json(await c.getAllSecrets({ path: `${run}-${kv}`, name: { regexp: '(?P<x>tree)/sub' } })), { [k('tree/sub/two')]: '{"n":"T2"}' }, 'Go named groups');
    t2.same(json(await c.getAllSecrets({ path: `${run}-nothing-here` })), {}, 'an empty folder finds nothing');
    isError(t2, await caught(c.getAllSecrets({ name: { regexp: '(' } })), 'InvalidSpec');
    if (kv === 'v1') {
      isError(t2, await caught(c.getAllSecrets({ tags: { team: run } })), 'Unsupported', { match: /KV v2/ });
    } else {
      t2.same(json(await c.getAllSecrets({ path: `${run}-${kv}`, tags: { team: run, env: 'prod' } })), { [k('find-alpha')]: '{"n":"A"}' }, 'every tag must match');
    }
  });

  await tt.test('push: properties merge, a whole JSON object replaces, unchanged values write nothing, unmanaged secrets are refused', async (t2) => {
    const key = k('pushed');
    await c.pushSecret(Buffer.from(`${CANARY}-1`), { remoteKey: key, property: 'password' });
    await c.pushSecret(Buffer.from('app'), { remoteKey: key, property: 'username' });
    t2.same(json(await c.getSecretMap({ key })), { password: `${CANARY}-1`, username: 'app', ...(kv === 'v1' ? { custom_metadata: '{"managed-by":"external-secrets"}' } : {}) },
      'the other property is kept (KV v1 keeps the ownership mark in the data, as ESO)');
    if (kv === 'v2') {
      const before = ((await server.api('GET', `secret/metadata/${key}`)).body!.data as { current_version: number }).current_version;
      await c.pushSecret(Buffer.from('app'), { remoteKey: key, property: 'username' });
      const after = ((await server.api('GET', `secret/metadata/${key}`)).body!.data as { current_version: number; custom_metadata: Record<string, string> });
      t2.equal(after.current_version, before, 'pushing an unchanged value creates no version');
      t2.same(after.custom_metadata, { 'managed-by': 'external-secrets' }, 'ownership in custom_metadata');
    }
    await c.pushSecret(Buffer.from(JSON.stringify({ whole: 'map' })), { remoteKey: key });
    const raw = await rawRead(kv, key);
    t2.same(raw, kv === 'v1' ? { whole: 'map', custom_metadata: { 'managed-by': 'external-secrets' } } : { whole: 'map' }, 'a whole push replaces the map');
    isError(t2, await caught(c.pushSecret(Buffer.from(`${CANARY}-plain`), { remoteKey: key })), 'InvalidSpec', { key, match: /JSON object/ });
    await seed(kv, k('foreign'), { mine: 'no' });
    isError(t2, await caught(c.pushSecret(Buffer.from('x'), { remoteKey: k('foreign'), property: 'p' })), 'Forbidden', { key: k('foreign'), match: /not managed/ });
    t2.same(await rawRead(kv, k('foreign')), { mine: 'no' }, 'an unmanaged secret is untouched');
    const odd = k('odd name #1?&x=y');
    await c.pushSecret(Buffer.from('v'), { remoteKey: odd, property: 'p' });
    t2.equal(text(await c.getSecret({ key: odd, property: 'p' })), 'v', 'keys with spaces, #, ?, & are path-encoded');
  });

  await tt.test('delete and exists', async (t2) => {
    const key = k('deleted');
    t2.equal(await c.secretExists({ remoteKey: key }), false);
    await c.pushSecret(Buffer.from(JSON.stringify({ a: '1', b: '2' })), { remoteKey: key });
    t2.equal(await c.secretExists({ remoteKey: key }), true);
    t2.equal(await c.secretExists({ remoteKey: key, property: 'a' }), true);
    t2.equal(await c.secretExists({ remoteKey: key, property: 'zz' }), false);
    await c.deleteSecret({ remoteKey: key, property: 'a' });
    t2.same(json(await c.getSecretMap({ key })), { b: '2', ...(kv === 'v1' ? { custom_metadata: '{"managed-by":"external-secrets"}' } : {}) }, 'deleting a property keeps the rest');
    await c.deleteSecret({ remoteKey: key, property: 'b' });
    isError(t2, await caught(c.getSecret({ key })), 'NotFound', { key }, );
    await c.pushSecret(Buffer.from(JSON.stringify({ a: '1' })), { remoteKey: key });
    await c.deleteSecret({ remoteKey: key });
    isError(t2, await caught(c.getSecret({ key })), 'NotFound', { key });
    if (kv === 'v2') {
      const meta = await caught(server.api('GET', `secret/metadata/${key}`));
      t2.equal((meta as ApiError)?.status, 404, 'KV v2: the metadata (every version) is gone');
    }
    await c.deleteSecret({ remoteKey: key });
    t2.pass('deleting what is gone is not an error');
    await c.deleteSecret({ remoteKey: k('foreign') });
    t2.same(await rawRead(kv, k('foreign')), { mine: 'no' }, 'an unmanaged secret is not deleted');
  });
}

await t.test('vault KV v2', (tt) => kvCases(tt, 'v2'));
await t.test('vault KV v1', (tt) => kvCases(tt, 'v1'));
