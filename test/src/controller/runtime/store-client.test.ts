// The reconciler's one decorator around a provider client (src/controller/runtime/store-client.ts):
// identical reads coalesce within the window of their *requested* times, real reads are
// counted and wait for the store's rate limit, writes do neither, and every call ends at the
// per-call deadline even when the provider ignores the signal.
import t from 'tap';
import { clientFrom } from '../../../../src/providers/client.js';
import type { CallOptions, Provider, SecretsClient } from '../../../../src/providers/types.js';
import { StoreClient } from '../../../../src/controller/runtime/store-client.js';

const STORE = 'SecretStore/ns/s';
const WINDOW = 60_000;

function recording(answer: (name: string, args: unknown[]) => Promise<unknown> = async (name) => `value of ${name}`) {
  const calls: { name: string; signal?: AbortSignal }[] = [];
  const raw = clientFrom((name, args) => {
    calls.push({ name, signal: (args.at(-1) as CallOptions | undefined)?.signal });
    return answer(name, args);
  }, async () => undefined);
  const counts = { onCall: 0, takes: 0 };
  const client = new StoreClient({} as Provider, raw, {
    storeId: STORE, timeoutMs: 60_000, windowMs: WINDOW,
    rateLimit: { take: async () => void counts.takes++ },
    onCall: () => void counts.onCall++,
  });
  return { client, calls, counts };
}

const read = (c: SecretsClient, key = 'k') => c.getSecret({ key });

t.test('shared reads coalesce; fresh reads do not; each real read is counted and rate limited', async (t) => {
  const { client, calls, counts } = recording();
  t.same(await Promise.all([read(client.shared), read(client.shared), read(client.shared, 'other')]), ['value of getSecret', 'value of getSecret', 'value of getSecret']);
  t.equal(calls.length, 2, 'two distinct keys, two provider calls');
  await read(client.fresh);
  await read(client.fresh);
  t.equal(calls.length, 4, 'fresh reads always reach the store');
  t.same(counts, { onCall: 4, takes: 4 }, 'every real read counted and rate limited, no coalesced one');
  await client.fresh.pushSecret({ data: {} } as never, { remoteKey: 'k' });
  t.same(counts, { onCall: 4, takes: 4 }, 'a write is neither counted as a read nor rate limited');
  t.equal(calls.length, 5);
});

t.test('the window is measured between the times reads were requested', async (t) => {
  const { client, calls } = recording();
  const at = 1_000_000;
  await read(client.sharedAsOf(at));
  await read(client.sharedAsOf(at + WINDOW - 1));
  t.equal(calls.length, 1, 'requested within the window of the first: shared, however late it runs');
  await read(client.sharedAsOf(at + WINDOW));
  t.equal(calls.length, 2, 'requested a window later: a new call');
  await read(client.shared);
  t.equal(calls.length, 3, 'a read timed now is not within the window of one requested long ago');
});

t.test('a failed read is not shared: the next reader tries again', async (t) => {
  let fail = true;
  const { client, calls } = recording(async () => {
    if (fail) throw new Error('store down');
    return 'v';
  });
  await t.rejects(read(client.shared), /store down/);
  fail = false;
  t.equal(await read(client.shared), 'v');
  t.equal(calls.length, 2);
});

t.test('every call runs under the per-call deadline, joined with the caller\'s signal', async (t) => {
  // AbortSignal.timeout's timer does not keep the process alive; a store connection would.
  const alive = setInterval(() => undefined, 1000);
  t.teardown(() => clearInterval(alive));
  const calls: { name: string; signal?: AbortSignal }[] = [];
  const raw = clientFrom((name, args) => {
    calls.push({ name, signal: (args.at(-1) as CallOptions | undefined)?.signal });
    return new Promise(() => undefined); // never answers, ignores the signal
  }, async () => undefined);
  const client = new StoreClient({} as Provider, raw, { storeId: STORE, timeoutMs: 50, windowMs: WINDOW, rateLimit: { take: async () => undefined } });
  await t.rejects(read(client.shared), { code: 'Timeout', message: /SecretStore\/ns\/s.*deadline/ }, 'a read ends at the deadline');
  await t.rejects(client.fresh.validate(), { code: 'Timeout' }, 'so does a call without options');
  await t.rejects(client.fresh.pushSecret({ data: {} } as never, { remoteKey: 'k' }), { code: 'Timeout' }, 'and a write');
  t.ok(calls.every((c) => c.signal instanceof AbortSignal), 'the provider is handed the deadline as its signal');
  const caller = new AbortController();
  caller.abort();
  await t.rejects(client.fresh.getSecret({ key: 'k' }, { signal: caller.signal }), { code: 'Timeout' }, "the caller's own deadline still counts");
});
