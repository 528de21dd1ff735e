// Writing to the store (src/controller/pushsecret/remote.ts): per-key serialization, compare
// before write, ownership, metadata.
import t from 'tap';
import { FakeClient } from '../../../../src/providers/fake/index.js';
import type { PushOptions, PushRemoteRef, SecretsClient } from '../../../../src/providers/types.js';
import { KeyedMutex, NotOwned, pushEntry, sameMetadata } from '../../../../src/controller/pushsecret/remote.js';

const enc = (s: string) => new TextEncoder().encode(s);

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

t.test('KeyedMutex serializes per key, not across keys', async (t) => {
  const m = new KeyedMutex();
  const log: string[] = [];
  const step = (k: string, id: string, ms: number) => m.run(k, async () => {
    log.push(`${id}+`);
    await new Promise((r) => setTimeout(r, ms));
    log.push(`${id}-`);
  });
  await Promise.all([step('a', 'a1', 30), step('a', 'a2', 1), step('b', 'b1', 5)]);
  t.ok(log.indexOf('a1-') < log.indexOf('a2+'), 'same key: one after the other');
  t.ok(log.indexOf('b1+') < log.indexOf('a1-'), 'other key: concurrent');
  t.equal(m.size, 0, 'no leftover chains');
});

t.test('pushEntry: compare before write, IfNotExists, ownership without a provider mark', async (t) => {
  const client = new FakeClient('SecretStore/n/fake', [{ key: 'theirs', value: 'x' }]);
  const base = { client, provider: 'fake', updatePolicy: 'Replace' as const, recorded: false };
  t.equal(await pushEntry({ ...base, ref: { remoteKey: 'mine' }, value: enc('v1') }), 'written');
  t.equal(await pushEntry({ ...base, ref: { remoteKey: 'mine' }, value: enc('v1'), recorded: true }), 'equal');
  t.equal(await pushEntry({ ...base, ref: { remoteKey: 'mine' }, value: enc('v2'), recorded: true }), 'written');
  t.equal(text(await client.getSecret({ key: 'mine' })), 'v2');
  const refused = await pushEntry({ ...base, ref: { remoteKey: 'theirs' }, value: enc('y') }).catch((e: unknown) => e);
  t.ok(refused instanceof NotOwned, 'refused');
  t.match((refused as Error).message, /was not written by this PushSecret; the fake provider keeps no ownership mark/);
  t.equal(text(await client.getSecret({ key: 'theirs' })), 'x', 'foreign entry untouched');
  t.equal(await pushEntry({ ...base, ref: { remoteKey: 'theirs' }, value: enc('y'), updatePolicy: 'IfNotExists' }), 'exists');
  t.equal(await pushEntry({ ...base, ref: { remoteKey: 'theirs' }, value: enc('x') }), 'equal', 'equal foreign value: no write, no refusal');
});

t.test('pushEntry: changed metadata is pushed even for an equal value, with the metadata', async (t) => {
  const client = new FakeClient('SecretStore/n/fake', []);
  const seen: unknown[] = [];
  const push = client.pushSecret.bind(client);
  (client as SecretsClient).pushSecret = (v: Uint8Array, r: PushRemoteRef, o?: PushOptions) => (seen.push(o?.metadata), push(v, r));
  const base = { client, provider: 'fake', updatePolicy: 'Replace' as const, recorded: true, ref: { remoteKey: 'k' }, value: enc('v') };
  t.equal(await pushEntry(base), 'written');
  t.equal(await pushEntry({ ...base, metadata: { tags: { a: 'b' } }, metadataChanged: false }), 'equal', 'same metadata: no write');
  t.equal(await pushEntry({ ...base, metadata: { tags: { a: 'c' } }, metadataChanged: true }), 'written', 'changed metadata: written');
  t.same(seen, [undefined, { tags: { a: 'c' } }]);
  t.ok(sameMetadata({ spec: { a: 1, b: 2 } }, { spec: { b: 2, a: 1 } }), 'key order aside');
  t.notOk(sameMetadata(undefined, { spec: {} }));
});
