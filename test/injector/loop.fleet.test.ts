// The agent's side of fleet control (docs/fleet.md):
// the refresh floor stretches the period and never shortens it, a change generation wakes the
// loop at once, the backoff survives a restart (a second runLoop over the same volume), a
// throttled store slows the retries, and the channel files are read with the annotation
// table's own validators.
import t from 'tap';
import pino from 'pino';
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLoop, THROTTLED_BASE_MS, Wakeup } from '../../injector/loop.js';
import { BackoffFile, STATE_FILE } from '../../injector/backoff-state.js';
import { Channel } from '../../injector/channel.js';
import { channelValue } from '../../src/pod-contract/channel.js';
import { parseAnnotations } from '../../src/pod-contract/parse.js';
import { isThrottled } from '../../src/providers/throttle.js';
import { ProviderError } from '../../src/providers/types.js';

const logger = pino({ level: 'silent' });
const mid = () => 0.5;

async function tmp(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'esi-fleet-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** As the kubelet writes a downwardAPI file: whole, by rename. */
async function project(dir: string, file: string, value: string): Promise<void> {
  await writeFile(join(dir, `.${file}.tmp`), value);
  await rename(join(dir, `.${file}.tmp`), join(dir, file));
}

/** Polls `cond` (no fixed sleep). */
function until(cond: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const tick = () => (cond() ? resolve() : setTimeout(tick, 2));
    tick();
  });
}

t.test('the floor stretches the period, never shortens it, and re-times a wait in progress', async (t) => {
  const abort = new AbortController();
  const wakeup = new Wakeup();
  let floor: number | undefined = 0.2;
  const starts: number[] = [];
  const done = runLoop({
    mode: 'native-sidecar', refreshSeconds: 0.05, signal: abort.signal, logger, random: mid, wakeup,
    floorSeconds: () => floor, cycle: async () => void starts.push(performance.now()),
  });
  await until(() => starts.length >= 3);
  const gaps = starts.slice(1).map((s, i) => s - starts[i]!);
  t.ok(gaps.every((g) => g >= 190), `the floor (200 ms) sets the period over the own 50 ms (gaps ${gaps.map(Math.round)})`);
  floor = 10;
  wakeup.wake('floor');
  const n = starts.length;
  floor = 0.01;
  wakeup.wake('floor');
  await until(() => starts.length >= n + 2);
  const last = starts.at(-1)! - starts.at(-2)!;
  t.ok(last >= 45, `a floor below the own period leaves the own period (gap ${Math.round(last)} ms)`);
  abort.abort();
  t.equal(await done, 0);
});

t.test('a change generation runs a cycle at once, not at the end of the period', async (t) => {
  const abort = new AbortController();
  const wakeup = new Wakeup();
  let n = 0;
  const done = runLoop({ mode: 'native-sidecar', refreshSeconds: 3600, signal: abort.signal, logger, wakeup, cycle: async () => void n++ });
  await until(() => n === 1);
  wakeup.wake('change');
  await until(() => n === 2);
  t.equal(n, 2, 'the change fetched long before the hour');
  abort.abort();
  await done;
});

t.test('the backoff survives a restart of the container', async (t) => {
  const dir = await tmp(t);
  const fail = async () => Promise.reject(new Error('store down'));
  let clock = 1_000_000;
  const now = () => clock;
  t.equal(await runLoop({ mode: 'init-only', refreshSeconds: 60, signal: new AbortController().signal, logger, random: mid, cycle: fail, state: new BackoffFile(dir), now }), 1);
  t.same(JSON.parse(await readFile(join(dir, STATE_FILE), 'utf8')), { failures: 1, nextAttemptAt: clock + 1000 }, 'the first failure is kept in the volume');
  clock += 1000;
  t.equal(await runLoop({ mode: 'init-only', refreshSeconds: 60, signal: new AbortController().signal, logger, random: mid, cycle: fail, state: new BackoffFile(dir), now }), 1);
  t.same(JSON.parse(await readFile(join(dir, STATE_FILE), 'utf8')), { failures: 2, nextAttemptAt: clock + 2000 }, 'the second start counts on: 2 failures, 2 s');
  clock += 2000;
  t.equal(await runLoop({ mode: 'init-only', refreshSeconds: 60, signal: new AbortController().signal, logger, random: mid, cycle: async () => undefined, state: new BackoffFile(dir), now }), 0);
  t.same(JSON.parse(await readFile(join(dir, STATE_FILE), 'utf8')), { failures: 0, nextAttemptAt: 0 }, 'a success clears it');
  await writeFile(join(dir, STATE_FILE), '{"failures": "lots"}');
  t.same(await new BackoffFile(dir).load(), { failures: 0, nextAttemptAt: 0 }, 'a garbled file counts as none');
});

t.test('a restarted agent waits out the remainder of its backoff before trying', async (t) => {
  const dir = await tmp(t);
  const due = Date.now() + 150;
  await writeFile(join(dir, STATE_FILE), JSON.stringify({ failures: 5, nextAttemptAt: due }));
  let at = 0;
  t.equal(await runLoop({ mode: 'init-only', refreshSeconds: 60, signal: new AbortController().signal, logger, state: new BackoffFile(dir), cycle: async () => void (at = Date.now()) }), 0);
  t.ok(at >= due, 'the first attempt came no sooner than the next attempt the previous start stored');
});

t.test('a store that throttles slows the retries', async (t) => {
  const dir = await tmp(t);
  const throttled = new ProviderError('Unknown', 'SecretStore/ns/s', 'the Kubernetes API answered 429 TooManyRequests to get secret "db"');
  t.ok(isThrottled(throttled));
  t.ok(isThrottled(new Error('ExternalSecret "db" store x: failed', { cause: new ProviderError('Unreachable', 's', 'quota exhausted (RESOURCE_EXHAUSTED)') })));
  t.notOk(isThrottled(new ProviderError('Forbidden', 's', 'may not get secret "quota-429"')), 'a denial is no throttling, whatever the name');
  t.notOk(isThrottled(new Error('connection refused')));
  const clock = 5_000;
  await runLoop({ mode: 'init-only', refreshSeconds: 60, signal: new AbortController().signal, logger, random: mid, throttled: isThrottled, state: new BackoffFile(dir), now: () => clock, cycle: async () => Promise.reject(throttled) });
  t.same(JSON.parse(await readFile(join(dir, STATE_FILE), 'utf8')), { failures: 1, nextAttemptAt: clock + THROTTLED_BASE_MS }, 'the first retry of a throttled read is 30 s away, not 1 s');
});

t.test('the channel files are parsed by the annotation table: what the webhook admits, the agent accepts', async (t) => {
  const admitted = parseAnnotations({ 'esi.dev/secrets': 'db', 'esi.dev/refresh-floor': '90s', 'esi.dev/change-generation': 'a1b2c3' });
  t.ok(admitted.ok, 'the webhook admits a pod carrying the channel annotations');
  if (admitted.ok) t.match(admitted.request, { refreshFloorSeconds: 90, changeGeneration: 'a1b2c3' });
  t.equal(channelValue('refresh-floor', '90s'), 90);
  t.equal(channelValue('change-generation', 'a1b2c3\n'), 'a1b2c3');
  t.equal(channelValue('refresh-floor', ''), undefined, 'an unset annotation is an empty file');
  const refused = parseAnnotations({ 'esi.dev/secrets': 'db', 'esi.dev/refresh-floor': '2s', 'esi.dev/change-generation': 'S3CRET value' });
  t.notOk(refused.ok, 'the webhook refuses what the agent would');
  t.throws(() => channelValue('refresh-floor', '2s'), /at least 10s/);
  t.throws(() => channelValue('change-generation', 'S3CRET value'), /lowercase letters and digits/);

  const dir = await tmp(t);
  await project(dir, 'refresh-floor', '');
  await project(dir, 'change-generation', 'g1');
  const floors: (number | undefined)[] = [];
  const changes: string[] = [];
  const ch = new Channel({ dir, logger, pollMs: 5, onFloor: (s) => floors.push(s), onChange: (g) => changes.push(g) });
  await ch.start();
  t.teardown(() => ch.stop());
  t.same(changes, [], 'the generation the agent starts with is no change');
  await project(dir, 'refresh-floor', '2m');
  await project(dir, 'change-generation', 'g2');
  await until(() => floors.length > 0 && changes.length > 0);
  t.same(floors, [120]);
  t.same(changes, ['g2']);
  await project(dir, 'refresh-floor', 'soon');
  await ch.poll();
  t.equal(ch.floorSeconds, 120, 'a value the table refuses is ignored (logged once), the last good floor stays');
});

t.test('a projected change is seen when the directory changes, not at the next poll', async (t) => {
  // The kubelet's way: a new timestamped directory, then the `..data` link swapped by rename.
  const dir = await tmp(t);
  const { mkdir, symlink } = await import('node:fs/promises');
  const swap = async (n: number, generation: string) => {
    await mkdir(join(dir, `..v${n}`));
    await writeFile(join(dir, `..v${n}`, 'change-generation'), generation);
    await symlink(`..v${n}`, join(dir, '..data_tmp'));
    await rename(join(dir, '..data_tmp'), join(dir, '..data'));
  };
  await swap(1, 'g1');
  await symlink('..data/change-generation', join(dir, 'change-generation'));
  const changes: string[] = [];
  // An hour between polls: only the directory's change can tell the agent.
  const ch = new Channel({ dir, logger, pollMs: 3_600_000, onFloor: () => undefined, onChange: (g) => changes.push(g) });
  await ch.start();
  t.teardown(() => ch.stop());
  await swap(2, 'g2');
  await until(() => changes.length > 0);
  t.same(changes, ['g2']);
});
