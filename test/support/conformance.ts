// The provider conformance suite: the same cases run against every provider and its
// real backend. A target describes how to reach the backend and how to put data into
// it directly (not through the provider under test, where the backend allows it); a
// case a store cannot support is marked with the reason, never silently skipped.
import type { Test } from 'tap';
import { clientFrom, invoke } from '../../src/providers/client.js';
import { ProviderError, type Provider, type SecretsClient } from '../../src/providers/types.js';

export const CASES = [
  'get', 'property', 'property-safety', 'version', 'decoding', 'map', 'find-name', 'find-tags', 'find-path',
  'push', 'push-property', 'delete', 'exists', 'not-found', 'auth-failure', 'unreachable',
] as const;
export type CaseName = (typeof CASES)[number];

export interface ConformanceTarget {
  /** Shown in test names, e.g. "vault (OpenBao, KV v2)". */
  name: string;
  provider: Provider;
  /** The store id the clients use in their errors (e.g. `SecretStore/ns/vault`). */
  storeId: string;
  /** A client with working credentials. */
  client(): Promise<SecretsClient>;
  /** A client whose credentials the backend rejects. */
  badAuthClient?(): Promise<SecretsClient>;
  /** A client pointed at an endpoint that refuses or never answers. */
  unreachableClient?(): Promise<SecretsClient>;
  /** Writes `value` under `key` directly in the backend (tags where supported). */
  seed(key: string, value: string, opts?: { tags?: Record<string, string> }): Promise<void>;
  /** Writes a second version of `key`; returns the version ids of both values. */
  seedVersions?(key: string, first: string, second: string): Promise<[string, string]>;
  /** Turns a base name into a key valid for the store (paths, allowed characters). */
  key(base: string): string;
  /** The path prefix under which `key()` places keys, for find-by-path. */
  pathPrefix?: string;
  /** Cases the store cannot support, with the reason. */
  unsupported?: Partial<Record<CaseName, string>>;
}

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const CANARY = 'conformance-canary-5e1f';

function expectProviderError(t: Test, err: unknown, target: ConformanceTarget, codes: string[], key?: string) {
  t.ok(err instanceof ProviderError, `a ProviderError (got ${(err as Error)?.name}: ${(err as Error)?.message})`);
  if (!(err instanceof ProviderError)) return;
  t.ok(codes.includes(err.code), `code ${err.code} is one of ${codes.join(', ')}`);
  t.match(err.message, target.storeId, 'the message names the store');
  if (key) t.match(err.message, key, 'the message names the key');
  t.notMatch(err.message, CANARY, 'the message holds no secret value');
}

async function caught(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return err;
  }
}

type CaseFn = (t: Test, target: ConformanceTarget, client: SecretsClient, run: string) => Promise<void>;

const cases: Record<CaseName, CaseFn> = {
  get: async (t, target, client, run) => {
    const key = target.key(`${run}-plain`);
    await target.seed(key, `${CANARY}-plain`);
    t.equal(text(await client.getSecret({ key })), `${CANARY}-plain`);
  },
  property: async (t, target, client, run) => {
    const key = target.key(`${run}-json`);
    await target.seed(key, JSON.stringify({ username: 'app', password: `${CANARY}-pw`, nested: { port: 5432 } }));
    t.equal(text(await client.getSecret({ key, property: 'password' })), `${CANARY}-pw`);
    t.equal(text(await client.getSecret({ key, property: 'nested.port' })), '5432', 'dotted property paths');
    expectProviderError(t, await caught(client.getSecret({ key, property: 'missing' })), target, ['NotFound'], key);
  },
  // Every provider reads and writes `property` through src/providers/json-path.ts, which
  // refuses prototype segments: no store can be made to touch Object.prototype.
  'property-safety': async (t, target, client, run) => {
    const key = target.key(`${run}-proto`);
    await target.seed(key, JSON.stringify({ a: { b: 'x' } }));
    const unsafe = ['__proto__', 'constructor', 'prototype', 'a.__proto__', '__proto__.polluted', 'constructor.prototype'];
    for (const property of unsafe) {
      expectProviderError(t, await caught(client.getSecret({ key, property })), target, ['InvalidSpec'], key);
      expectProviderError(t, await caught(client.getSecretMap({ key, property })), target, ['InvalidSpec'], key);
    }
    if (target.provider.capabilities.write) {
      const remoteKey = target.key(`${run}-proto-push`);
      for (const property of ['__proto__.polluted', 'constructor', '__proto__']) {
        expectProviderError(t, await caught(client.pushSecret(Buffer.from('x'), { remoteKey, property })), target, ['InvalidSpec'], remoteKey);
        expectProviderError(t, await caught(client.secretExists({ remoteKey: key, property })), target, ['InvalidSpec'], key);
      }
    }
    t.equal(({} as Record<string, unknown>).polluted, undefined, 'Object.prototype is untouched');
  },
  version: async (t, target, client, run) => {
    const key = target.key(`${run}-versioned`);
    const [v1, v2] = await target.seedVersions!(key, 'first', 'second');
    t.equal(text(await client.getSecret({ key, version: v1 })), 'first', 'an older version by id');
    t.equal(text(await client.getSecret({ key, version: v2 })), 'second');
    t.equal(text(await client.getSecret({ key })), 'second', 'no version = the latest');
  },
  decoding: async (t, target, client, run) => {
    const key = target.key(`${run}-b64`);
    await target.seed(key, Buffer.from(`${CANARY}-bin`).toString('base64'));
    const { decodeValue } = await import('../../src/externalsecret/decode.js');
    const raw = await client.getSecret({ key, decodingStrategy: 'Base64' });
    t.equal(text(decodeValue('Base64', raw)), `${CANARY}-bin`, 'Base64 decoding of the fetched value');
    t.equal(text(decodeValue('Auto', raw)), `${CANARY}-bin`, 'Auto detects base64');
    t.equal(text(decodeValue('None', raw)), Buffer.from(`${CANARY}-bin`).toString('base64'), 'None keeps it');
  },
  map: async (t, target, client, run) => {
    const key = target.key(`${run}-map`);
    await target.seed(key, JSON.stringify({ a: '1', b: `${CANARY}-b` }));
    const map = await client.getSecretMap({ key });
    t.same(Object.fromEntries(Object.entries(map).map(([k, v]) => [k, text(v)])), { a: '1', b: `${CANARY}-b` });
  },
  'find-name': async (t, target, client, run) => {
    await target.seed(target.key(`${run}-find-alpha`), 'A');
    await target.seed(target.key(`${run}-find-beta`), 'B');
    await target.seed(target.key(`${run}-other`), 'C');
    const found = await client.getAllSecrets({ name: { regexp: `${run}-find-` } });
    t.same(Object.values(found).map(text).sort(), ['A', 'B'], 'exactly the matching secrets');
  },
  'find-tags': async (t, target, client, run) => {
    await target.seed(target.key(`${run}-tag-1`), 'T1', { tags: { team: run, env: 'prod' } });
    await target.seed(target.key(`${run}-tag-2`), 'T2', { tags: { team: run, env: 'dev' } });
    const found = await client.getAllSecrets({ tags: { team: run, env: 'prod' } });
    t.same(Object.values(found).map(text), ['T1'], 'only secrets with every tag');
  },
  'find-path': async (t, target, client, run) => {
    await target.seed(target.key(`${run}-p/one`), 'P1');
    await target.seed(target.key(`${run}-p/two`), 'P2');
    const found = await client.getAllSecrets({ path: target.key(`${run}-p/`) });
    t.same(Object.values(found).map(text).sort(), ['P1', 'P2']);
  },
  push: async (t, target, client, run) => {
    const remoteKey = target.key(`${run}-pushed`);
    await client.pushSecret(Buffer.from(`${CANARY}-pushed`), { remoteKey });
    t.equal(text(await client.getSecret({ key: remoteKey })), `${CANARY}-pushed`, 'read back what was pushed');
    await client.pushSecret(Buffer.from('v2'), { remoteKey });
    t.equal(text(await client.getSecret({ key: remoteKey })), 'v2', 'a second push replaces the value');
  },
  // What a pushed `property` means is the provider's declared mode (ESO's per-provider
  // semantics): a dotted path into nested objects, or one flat key.
  'push-property': async (t, target, client, run) => {
    const remoteKey = target.key(`${run}-pushprop`);
    await client.pushSecret(Buffer.from(`${CANARY}-deep`), { remoteKey, property: 'a.b' });
    t.equal(text(await client.getSecret({ key: remoteKey, property: 'a.b' })), `${CANARY}-deep`, 'read back by the same property');
    const keys = Object.keys(await client.getSecretMap({ key: remoteKey }));
    if (target.provider.capabilities.pushProperty === 'path') {
      t.ok(keys.includes('a') && !keys.includes('a.b'), `a nested object "a" (keys: ${keys.join(', ')})`);
    } else {
      t.ok(keys.includes('a.b') && !keys.includes('a'), `one flat key "a.b" (keys: ${keys.join(', ')})`);
    }
    t.equal(await client.secretExists({ remoteKey, property: 'a.b' }), true);
    await client.deleteSecret({ remoteKey, property: 'a.b' });
    t.equal(await client.secretExists({ remoteKey, property: 'a.b' }), false, 'the property is gone');
  },
  delete: async (t, target, client, run) => {
    const remoteKey = target.key(`${run}-deleted`);
    await client.pushSecret(Buffer.from('x'), { remoteKey });
    await client.deleteSecret({ remoteKey });
    expectProviderError(t, await caught(client.getSecret({ key: remoteKey })), target, ['NotFound'], remoteKey);
    await client.deleteSecret({ remoteKey });
    t.pass('deleting what is gone is not an error');
  },
  exists: async (t, target, client, run) => {
    const remoteKey = target.key(`${run}-exists`);
    t.equal(await client.secretExists({ remoteKey }), false);
    await client.pushSecret(Buffer.from('x'), { remoteKey });
    t.equal(await client.secretExists({ remoteKey }), true);
  },
  'not-found': async (t, target, client, run) => {
    const key = target.key(`${run}-absent`);
    expectProviderError(t, await caught(client.getSecret({ key })), target, ['NotFound'], key);
  },
  'auth-failure': async (t, target, _client, run) => {
    const bad = await target.badAuthClient!();
    const key = target.key(`${run}-plain`);
    expectProviderError(t, await caught(bad.getSecret({ key })), target, ['AuthFailed', 'Forbidden']);
    await bad.close();
  },
  unreachable: async (t, target, _client, run) => {
    const down = await target.unreachableClient!();
    const started = Date.now();
    expectProviderError(t, await caught(down.getSecret({ key: target.key(`${run}-plain`) })), target, ['Unreachable', 'Timeout']);
    t.ok(Date.now() - started < 60_000, 'gives up within its deadline');
    await down.close();
  },
};

/** A client created on first use, so a case can seed the backend before connecting
 *  (the fake store's backend is the spec the client is built from). */
function lazyClient(make: () => Promise<SecretsClient>): SecretsClient {
  let real: Promise<SecretsClient> | undefined;
  const get = () => (real ??= make());
  return clientFrom(async (name, args) => invoke(await get(), name, args), async () => {
    if (real) await (await real).close();
  });
}

/** Runs every case against the target, each with its own client; unsupported cases are
 *  reported with the reason. */
export async function runConformance(t: Test, target: ConformanceTarget): Promise<void> {
  const run = `c${Date.now().toString(36)}`;
  for (const name of CASES) {
    const reason = target.unsupported?.[name];
    const missingHook = (name === 'version' && !target.seedVersions) || (name === 'auth-failure' && !target.badAuthClient) ||
      (name === 'unreachable' && !target.unreachableClient);
    if (reason) {
      t.test(`${target.name}: ${name}`, { skip: `unsupported by this store: ${reason}` }, async () => {});
      continue;
    }
    if (missingHook) {
      t.fail(`${target.name}: ${name}: the target has no hook for this case and gives no reason`);
      continue;
    }
    await t.test(`${target.name}: ${name}`, async (tt) => {
      const client = lazyClient(() => target.client());
      try {
        await cases[name](tt, target, client, run);
      } finally {
        await client.close();
      }
    });
  }
}
