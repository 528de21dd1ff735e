// The vault provider against a real Vault-API dev server (OpenBao when built, else
// HashiCorp Vault; test/platform/backends/openbao-install.sh) and, for kubernetes and
// jwt auth, the real kube-apiserver of the shared control plane (logins go through its
// TokenReview). Seeding uses the server's HTTP API with the root token, never the
// provider under test. Run: `npx tap test/providers/vault.test.ts`.
import t from 'tap';
import { CoreV1Api } from '@kubernetes/client-node';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Test } from 'tap';
import { createNamespace, serviceAccountToken } from '../helpers/kube.js';
import { useControlPlane } from '../platform/controlPlane.js';
import { freePort } from '../platform/control-plane-process.js';
import { createToken, enableKubernetesAuth, kvRead, kvWrite, mountKv, startVaultServer, tokenCount, writePolicy, type ApiError } from '../platform/backends/openbao.js';
import { decodeValue } from '../../src/providers/remote-ref.js';
import { provider, validateSpec, type VaultClient } from '../../src/providers/vault/index.js';
import { ProviderError } from '../../src/providers/types.js';
import { runConformance, type CaseName, type ConformanceTarget } from './conformance.js';
import { testContext } from './context.js';

const CANARY = 'vault-canary-7f3e';
const STORE = 'SecretStore/vault-test/vault';
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const json = (m: Record<string, Uint8Array>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, text(v)]));

const server = await startVaultServer(t);

await mountKv(server, 'kv1', 1);
const RW = '{ capabilities = ["create", "read", "update", "delete", "list"] }';
await writePolicy(server, 'esi-rw', `path "secret/*" ${RW}\npath "kv1/*" ${RW}`);
await writePolicy(server, 'esi-narrow', 'path "secret/data/allowed/*" { capabilities = ["read"] }');
const rwToken = await createToken(server, ['esi-rw']);
await server.api('POST', 'sys/auth/approle', { type: 'approle' });
await server.api('POST', 'auth/approle/role/esi', { token_policies: ['esi-rw'], token_ttl: '10m' });
const roleId = ((await server.api('GET', 'auth/approle/role/esi/role-id')).body!.data as { role_id: string }).role_id;
const newSecretId = async (role = 'esi') => ((await server.api('POST', `auth/approle/role/${role}/secret-id`, {})).body!.data as { secret_id: string }).secret_id;
const approleSecretId = await newSecretId();

// ---------------------------------------------------------------- helpers

type Spec = Record<string, unknown>;
type Kv = 'v1' | 'v2';
const MOUNT: Record<Kv, string> = { v1: 'kv1', v2: 'secret' };

function tokenSpec(kv: Kv, extra: Spec = {}): Spec {
  return { server: server.addr, path: MOUNT[kv], version: kv, auth: { tokenSecretRef: { name: 'vault-token', key: 'token' } }, ...extra };
}

async function newClient(spec: Spec, opts: { credentials?: Record<string, string>; token?: () => Promise<string>; timeoutMs?: number } = {}): Promise<VaultClient> {
  const ctx = testContext({ storeId: STORE, spec, namespace: 'vault-test', credentials: { 'vault-token/token': rwToken, ...opts.credentials }, ...(opts.token ? { token: opts.token } : {}), ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}) });
  return (await provider.newClient(ctx)) as VaultClient;
}

/** Seeds / reads a data map directly through the HTTP API (root token). */
const seed = (kv: Kv, key: string, data: Record<string, unknown>, tags?: Record<string, string>) =>
  kvWrite(server, MOUNT[kv], kv === 'v1' ? 1 : 2, key, data, tags);
const rawRead = (kv: Kv, key: string) => kvRead(server, MOUNT[kv], kv === 'v1' ? 1 : 2, key);

const caught = (p: Promise<unknown>): Promise<unknown> => p.then(() => undefined, (err: unknown) => err);

function isError(tt: Test, err: unknown, code: string, opts: { key?: string; match?: RegExp; notContain?: string[] } = {}): void {
  tt.ok(err instanceof ProviderError, `a ProviderError (got ${(err as Error)?.name}: ${(err as Error)?.message})`);
  if (!(err instanceof ProviderError)) return;
  tt.equal(err.code, code, `code ${code}: ${err.message}`);
  tt.match(err.message, STORE, 'names the store');
  if (opts.key) tt.match(err.message, opts.key, 'names the key');
  if (opts.match) tt.match(err.message, opts.match);
  for (const s of [CANARY, ...(opts.notContain ?? [])]) tt.notOk(err.message.includes(s), 'holds no secret');
}

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

const run = `r${Date.now().toString(36)}`;

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

// ---------------------------------------------------------------- auth and errors

await t.test('token auth: a static token works, is not revoked on close, a wrong one is AuthFailed', async (tt) => {
  await seed('v2', `${run}-auth/plain`, { v: CANARY });
  const mine = await createToken(server, ['esi-rw']);
  const c = await newClient(tokenSpec('v2'), { credentials: { 'vault-token/token': mine } });
  tt.equal(text(await c.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY);
  await c.validate();
  await c.close();
  await server.api('GET', 'auth/token/lookup-self', undefined, mine);
  tt.pass('the user-supplied token is still valid after close()');
  isError(tt, await caught(c.getSecret({ key: `${run}-auth/plain` })), 'Unknown', { match: /closed/ });

  const bad = await newClient(tokenSpec('v2'), { credentials: { 'vault-token/token': 'hvs.CAESIwrongwrongwrongwrong' } });
  isError(tt, await caught(bad.getSecret({ key: `${run}-auth/plain` })), 'AuthFailed', { notContain: ['hvs.CAESIwrong'] });
  isError(tt, await caught(bad.validate()), 'AuthFailed');
  const missing = await newClient({ ...tokenSpec('v2'), auth: { tokenSecretRef: { name: 'absent', key: 'token' } } });
  isError(tt, await caught(missing.getSecret({ key: `${run}-auth/plain` })), 'AuthFailed', { match: /absent\/token/ });
});

await t.test('a policy that denies the path is Forbidden (not AuthFailed)', async (tt) => {
  await seed('v2', 'allowed/ok', { v: 'fine' });
  await seed('v2', `${run}-auth/denied`, { v: CANARY });
  const narrow = await createToken(server, ['esi-narrow']);
  const c = await newClient(tokenSpec('v2'), { credentials: { 'vault-token/token': narrow } });
  tt.equal(text(await c.getSecret({ key: 'allowed/ok', property: 'v' })), 'fine');
  isError(tt, await caught(c.getSecret({ key: `${run}-auth/denied` })), 'Forbidden', { key: `${run}-auth/denied`, match: /policy/ });
  isError(tt, await caught(c.getAllSecrets({ path: 'allowed' })), 'Forbidden');
  await c.close();
});

await t.test('appRole auth: roleId or roleRef; a wrong secret id is AuthFailed without echoing it', async (tt) => {
  const spec = (appRole: Spec) => ({ ...tokenSpec('v2'), auth: { appRole } });
  const creds = { 'approle/secret-id': approleSecretId, 'approle/role-id': roleId };
  const a = await newClient(spec({ roleId, secretRef: { name: 'approle', key: 'secret-id' } }), { credentials: creds });
  tt.equal(text(await a.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY);
  const b = await newClient(spec({ path: 'approle', roleRef: { name: 'approle', key: 'role-id' }, secretRef: { name: 'approle', key: 'secret-id' } }), { credentials: creds });
  tt.equal(text(await b.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY);
  const wrongSecret = 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee';
  const bad = await newClient(spec({ roleId, secretRef: { name: 'approle', key: 'secret-id' } }), { credentials: { 'approle/secret-id': wrongSecret } });
  isError(tt, await caught(bad.getSecret({ key: `${run}-auth/plain` })), 'AuthFailed', { match: /appRole login/, notContain: [wrongSecret, roleId] });
  await Promise.all([a.close(), b.close(), bad.close()]);
});

await t.test('token lifecycle: one token per client across renewals and re-logins, revoked on close', async (tt) => {
  // A role whose tokens live 3 s and at most 9 s: over 12 s of reads the client must
  // renew several times and log in again once renewal hits the max TTL.
  await server.api('POST', 'auth/approle/role/short', { token_policies: ['esi-rw'], token_ttl: '3s', token_max_ttl: '9s' });
  const rid = ((await server.api('GET', 'auth/approle/role/short/role-id')).body!.data as { role_id: string }).role_id;
  const sid = await newSecretId('short');
  const before = await tokenCount(server);
  const c = await newClient({ ...tokenSpec('v2'), auth: { appRole: { roleId: rid, secretRef: { name: 'short', key: 'sid' } } } }, { credentials: { 'short/sid': sid } });
  let [reads, wrong, most] = [0, 0, 0];
  const end = Date.now() + 12_000;
  while (Date.now() < end) {
    if (text(await c.getSecret({ key: `${run}-auth/plain`, property: 'v' })) !== CANARY) wrong++;
    reads++;
    if (reads % 10 === 0) most = Math.max(most, (await tokenCount(server)) - before);
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, 300));
  const during = (await tokenCount(server)) - before;
  const stats = c.tokenStats;
  tt.comment(`${reads} reads, ${stats.logins} logins, ${stats.renewals} renewals, at most ${most} extra tokens`);
  tt.ok(reads > 50, 'many reads');
  tt.equal(wrong, 0, 'every read returned the value');
  tt.equal(during, 1, 'exactly one live token for the client after all those reads');
  tt.ok(most <= 2, 'never more than the current token plus one being replaced');
  tt.ok(stats.renewals >= 2, 'the token was renewed before its TTL ended');
  tt.ok(stats.logins >= 2 && stats.logins <= 3, 'a new login only when renewal hit the max TTL');
  await c.close();
  tt.equal(await tokenCount(server), before, 'close() revoked it');
});

await t.test('a token revoked behind the client is replaced by a new login', async (tt) => {
  const c = await newClient({ ...tokenSpec('v2'), auth: { appRole: { roleId, secretRef: { name: 'a', key: 's' } } } }, { credentials: { 'a/s': approleSecretId } });
  await c.getSecret({ key: `${run}-auth/plain`, property: 'v' });
  const keys = ((await server.api('LIST', 'auth/token/accessors')).body!.data as { keys: string[] }).keys;
  // Revoke every approle token of role "esi" (the one this client holds among them).
  for (const accessor of keys) {
    const info = (await server.api('POST', 'auth/token/lookup-accessor', { accessor })).body!.data as { path: string; meta?: Record<string, string> };
    if (info.path === 'auth/approle/login' && info.meta?.role_name === 'esi') await server.api('POST', 'auth/token/revoke-accessor', { accessor });
  }
  tt.equal(text(await c.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY, 'the next read logs in again');
  tt.equal(c.tokenStats.logins, 2);
  await c.close();
});

await t.test('unreachable, slow, and TLS failures', async (tt) => {
  const down = await newClient({ ...tokenSpec('v2'), server: `http://127.0.0.1:${await freePort()}` });
  isError(tt, await caught(down.getSecret({ key: 'x' })), 'Unreachable', { match: /ECONNREFUSED/ });
  const approleDown = await newClient({ ...tokenSpec('v2'), server: `http://127.0.0.1:${await freePort()}`, auth: { appRole: { roleId, secretRef: { name: 'a', key: 's' } } } }, { credentials: { 'a/s': 'x' } });
  isError(tt, await caught(approleDown.getSecret({ key: 'x' })), 'Unreachable', { match: /appRole login/ });

  // A server that accepts connections and never answers.
  const sockets: Socket[] = [];
  const hang = createTcpServer((s) => void sockets.push(s));
  await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
  tt.teardown(() => new Promise((r) => {
    sockets.forEach((s) => s.destroy());
    hang.close(r);
  }));
  const port = (hang.address() as { port: number }).port;
  const slow = await newClient({ ...tokenSpec('v2'), server: `http://127.0.0.1:${port}` }, { timeoutMs: 400 });
  const started = Date.now();
  isError(tt, await caught(slow.getSecret({ key: 'x' })), 'Timeout', { match: /400 ms/ });
  tt.ok(Date.now() - started < 3000, 'gives up at its deadline');
  for (const c of [down, approleDown, slow]) await c.close();
});

await t.test('TLS: caBundle and caProvider verify the server; no CA fails as Unreachable', async (tt) => {
  const tls = await startVaultServer(tt, { tls: true });
  await tls.api('POST', 'secret/data/tls/one', { data: { v: 'over-tls' } });
  const spec = { ...tokenSpec('v2'), server: tls.addr };
  const creds = { 'vault-token/token': tls.rootToken, 'vault-ca/ca.crt': tls.caPem! };
  const withBundle = await newClient({ ...spec, caBundle: Buffer.from(tls.caPem!).toString('base64') }, { credentials: creds });
  tt.equal(text(await withBundle.getSecret({ key: 'tls/one', property: 'v' })), 'over-tls');
  const withProvider = await newClient({ ...spec, caProvider: { type: 'Secret', name: 'vault-ca', key: 'ca.crt' } }, { credentials: creds });
  tt.equal(text(await withProvider.getSecret({ key: 'tls/one', property: 'v' })), 'over-tls', 'caProvider Secret');
  const cmCtx = testContext({ storeId: STORE, spec: { ...spec, caProvider: { type: 'ConfigMap', name: 'vault-ca', key: 'ca.crt' } }, credentials: creds });
  const fromCm = await provider.newClient({ ...cmCtx, readConfigMap: async (ref) => Buffer.from(ref.name === 'vault-ca' && ref.key === 'ca.crt' ? tls.caPem! : '') });
  tt.equal(text(await fromCm.getSecret({ key: 'tls/one', property: 'v' })), 'over-tls', 'caProvider ConfigMap');
  const noCa = await newClient(spec, { credentials: creds });
  isError(tt, await caught(noCa.getSecret({ key: 'tls/one' })), 'Unreachable', { match: /TLS/ });
  for (const c of [withBundle, withProvider, fromCm, noCa]) await c.close();
});

await t.test('namespace, custom headers and forwardInconsistent are sent on every request', async (tt) => {
  // Vault OSS has no namespaces (Enterprise / OpenBao feature): what can be checked here
  // is the wire, so a loopback server records what the provider sends.
  const seen: Record<string, string | string[] | undefined>[] = [];
  const http: Server = createServer((req, res) => {
    seen.push(req.headers);
    res.setHeader('content-type', 'application/json').end('{"data":{"data":{"v":"ns"}}}');
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  tt.teardown(() => new Promise((r) => http.close(r)));
  const c = await newClient({ ...tokenSpec('v2'), server: `http://127.0.0.1:${(http.address() as { port: number }).port}`, namespace: 'team-a/apps', headers: { 'X-Team': 'a' }, forwardInconsistent: true });
  tt.equal(text(await c.getSecret({ key: 'k', property: 'v' })), 'ns');
  tt.match(seen[0], { 'x-vault-namespace': 'team-a/apps', 'x-team': 'a', 'x-vault-inconsistent': 'forward-active-node', 'x-vault-token': rwToken });
  await c.close();
  // The real server with a namespace header. Vault OSS ignores it (namespaces are an
  // Enterprise feature) and serves the root namespace; OpenBao would scope the request.
  const real = await newClient({ ...tokenSpec('v2'), namespace: 'team-a' });
  const err = await caught(real.getSecret({ key: `${run}-auth/plain` }));
  tt.comment(`${server.impl} ${server.version} with namespace "team-a": ${err ? (err as Error).message : 'served from the root namespace'}`);
  await real.close();
});

await t.test('validateSpec', async (tt) => {
  tt.same(validateSpec(tokenSpec('v2')), []);
  tt.match(validateSpec({}).join('\n'), /server[\s\S]*auth/);
  tt.match(validateSpec({ ...tokenSpec('v2'), version: 'v3' }), [/v1 or v2/]);
  tt.match(validateSpec({ ...tokenSpec('v2'), auth: { ldap: { username: 'x' } } }), [/ldap is not supported/]);
  tt.match(validateSpec({ ...tokenSpec('v2'), auth: { appRole: { secretRef: { name: 'a', key: 'b' } } } }), [/roleId or roleRef/]);
  tt.match(validateSpec({ ...tokenSpec('v2'), auth: { tokenSecretRef: { name: 't', key: 'k' }, kubernetes: { role: 'r' } } }), [/exactly one/]);
  tt.match(validateSpec({ ...tokenSpec('v2'), caBundle: 'bm90IHBlbQ==' }), [/caBundle/]);
  tt.match(validateSpec({ ...tokenSpec('v2'), headers: { 'X-Vault-Token': 'x' } }), [/may not set/]);
  tt.match(validateSpec({ ...tokenSpec('v2'), auth: { jwt: { role: 'r' } } }), [/secretRef or kubernetesServiceAccountToken/]);
  isError(tt, await caught(provider.newClient(testContext({ storeId: STORE, spec: { server: 'nope' } }))), 'InvalidSpec');
});

// ---------------------------------------------------------------- kubernetes and jwt auth

await t.test('kubernetes auth against the real apiserver (TokenReview)', async (tt) => {
  const cp = await useControlPlane(tt);
  const ns = await createNamespace(cp.kc, 'vault-k8s', tt);
  for (const sa of ['app', 'intruder']) await cp.kc.makeApiClient(CoreV1Api).createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: sa } } });
  await enableKubernetesAuth(server, cp, { mount: 'kubernetes', reviewerNamespace: ns });
  await server.api('POST', 'auth/kubernetes/role/app', {
    bound_service_account_names: ['app'], bound_service_account_namespaces: [ns], audience: 'vault',
    token_policies: ['esi-rw'], token_ttl: '60s',
  });
  const spec = (k8s: Spec) => ({ ...tokenSpec('v2'), auth: { kubernetes: k8s } });
  let tokenCalls = 0;
  const podToken = async () => {
    tokenCalls++;
    return serviceAccountToken(cp.kc, ns, 'app', ['vault']);
  };

  const before = await tokenCount(server);
  const c = await newClient(spec({ mountPath: 'kubernetes', role: 'app' }), { token: podToken });
  for (let i = 0; i < 5; i++) tt.equal(text(await c.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY);
  tt.equal(tokenCalls, 1, 'the pod token is read once per login, not per read');
  tt.equal(await tokenCount(server), before + 1, 'one Vault token');
  await c.close();
  tt.equal(await tokenCount(server), before, 'revoked on close');

  const jwt = await serviceAccountToken(cp.kc, ns, 'app', ['vault']);
  const viaSecret = await newClient(spec({ role: 'app', secretRef: { name: 'sa-token', key: 'token' } }), { credentials: { 'sa-token/token': jwt } });
  tt.equal(text(await viaSecret.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY, 'a static JWT from secretRef');
  await viaSecret.close();

  const wrongAudience = await newClient(spec({ role: 'app' }), { token: () => serviceAccountToken(cp.kc, ns, 'app', ['not-vault']) });
  isError(tt, await caught(wrongAudience.getSecret({ key: `${run}-auth/plain` })), 'AuthFailed', { match: /kubernetes login/ });
  const intruder = await serviceAccountToken(cp.kc, ns, 'intruder', ['vault']);
  const wrongSa = await newClient(spec({ role: 'app' }), { token: async () => intruder });
  isError(tt, await caught(wrongSa.getSecret({ key: `${run}-auth/plain` })), 'AuthFailed', { notContain: [intruder] });
  const deletedSa = await serviceAccountToken(cp.kc, ns, 'app', ['vault']);
  await cp.kc.makeApiClient(CoreV1Api).deleteNamespacedServiceAccount({ name: 'app', namespace: ns });
  // The token is well-formed and bound correctly: only the apiserver's TokenReview knows
  // its ServiceAccount is gone, so this refusal proves the login went through it.
  const gone = await newClient(spec({ role: 'app' }), { token: async () => deletedSa });
  isError(tt, await caught(gone.getSecret({ key: `${run}-auth/plain` })), 'AuthFailed', { match: /refused/ });
  for (const x of [wrongAudience, wrongSa, gone]) await x.close();
});

await t.test('jwt auth with a service-account token, verified with the apiserver signing key', async (tt) => {
  const cp = await useControlPlane(tt);
  const ns = await createNamespace(cp.kc, 'vault-jwt', tt);
  await cp.kc.makeApiClient(CoreV1Api).createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'app' } } });
  await server.api('POST', 'sys/auth/jwt', { type: 'jwt' });
  await server.api('POST', 'auth/jwt/config', {
    jwt_validation_pubkeys: [await readFile(join(cp.dir, 'sa.pub'), 'utf8')],
    bound_issuer: 'https://kubernetes.default.svc.cluster.local',
  });
  await server.api('POST', 'auth/jwt/role/app', {
    role_type: 'jwt', bound_audiences: ['vault'], user_claim: 'sub', bound_subject: `system:serviceaccount:${ns}:app`,
    token_policies: ['esi-rw'], token_ttl: '60s',
  });
  const jwtSpec = (jwt: Spec) => ({ ...tokenSpec('v2'), auth: { jwt } });
  const c = await newClient(jwtSpec({ path: 'jwt', role: 'app', kubernetesServiceAccountToken: { serviceAccountRef: { name: 'app' }, audiences: ['vault'] } }), {
    token: () => serviceAccountToken(cp.kc, ns, 'app', ['vault']),
  });
  tt.equal(text(await c.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY);
  await c.close();
  const token = await serviceAccountToken(cp.kc, ns, 'app', ['vault']);
  const viaSecret = await newClient(jwtSpec({ role: 'app', secretRef: { name: 'jwt', key: 'token' } }), { credentials: { 'jwt/token': token } });
  tt.equal(text(await viaSecret.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY);
  await viaSecret.close();
  const other = await newClient(jwtSpec({ role: 'app', secretRef: { name: 'jwt', key: 'token' } }), { credentials: { 'jwt/token': await serviceAccountToken(cp.kc, ns, 'app', ['other']) } });
  isError(tt, await caught(other.getSecret({ key: `${run}-auth/plain` })), 'AuthFailed', { match: /jwt login/ });
  await other.close();
});
