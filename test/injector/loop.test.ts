// The refresh loop: jitter bounds, capped exponential backoff, init-only exit codes,
// readiness only after the first success, last-good semantics on failures.
import t from 'tap';
import pino from 'pino';
import { backoffDelay, jittered, runLoop } from '../../injector/loop.js';

const logger = pino({ level: 'silent' });

t.test('jitter stays within ±10% and spreads', async (tt) => {
  tt.equal(jittered(1000, 0.1, () => 0), 900);
  tt.equal(jittered(1000, 0.1, () => 1), 1100);
  tt.equal(jittered(1000, 0.1, () => 0.5), 1000);
  const seen = new Set<number>();
  for (let i = 0; i < 200; i++) {
    const d = jittered(60_000, 0.1);
    tt.ok(d >= 54_000 && d <= 66_000);
    seen.add(Math.round(d / 1000));
  }
  tt.ok(seen.size > 5, 'not in lockstep');
});

t.test('backoff doubles and is capped', async (tt) => {
  const mid = (): number => 0.5;
  tt.same([1, 2, 3, 4, 5, 6, 7, 8].map((n) => backoffDelay(n, 1000, 30_000, mid)), [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  tt.equal(backoffDelay(100, 1000, 30_000, () => 1), 30_000, 'jitter never exceeds the cap');
  tt.equal(backoffDelay(1, 1000, 30_000, () => 0), 900);
});

t.test('init-only: one cycle, exit code from its outcome', async (tt) => {
  const signal = new AbortController().signal;
  let calls = 0;
  tt.equal(await runLoop({ mode: 'init-only', refreshSeconds: 1, signal, logger, cycle: async () => void calls++ }), 0);
  tt.equal(calls, 1);
  tt.equal(await runLoop({ mode: 'init-only', refreshSeconds: 1, signal, logger, cycle: async () => Promise.reject(new Error('x')) }), 1);
});

t.test('sidecar: retries the first render, then ready, then refreshes; failures back off', async (tt) => {
  const abort = new AbortController();
  const events: string[] = [];
  let n = 0;
  const outcomes = [false, false, true, true, false, false, true, true];
  const code = await runLoop({
    mode: 'native-sidecar',
    refreshSeconds: 0.02, // 20 ms period (the config enforces >= 1 s; the loop does not care)
    backoffBaseMs: 5,
    signal: abort.signal,
    logger,
    onReady: () => events.push('ready'),
    cycle: async () => {
      const ok = outcomes[n++];
      events.push(ok ? 'ok' : 'fail');
      if (n >= outcomes.length) abort.abort();
      if (!ok) throw new Error('boom');
    },
  });
  tt.equal(code, 0, 'abort is a clean exit');
  tt.same(events, ['fail', 'fail', 'ok', 'ready', 'ok', 'fail', 'fail', 'ok', 'ok']);
});

t.test('sidecar: abort while waiting for the first render', async (tt) => {
  const abort = new AbortController();
  setTimeout(() => abort.abort(), 30);
  let ready = false;
  const code = await runLoop({
    mode: 'sidecar',
    refreshSeconds: 60,
    backoffBaseMs: 5,
    signal: abort.signal,
    logger,
    onReady: () => (ready = true),
    cycle: async () => Promise.reject(new Error('store down')),
  });
  tt.equal(code, 0);
  tt.notOk(ready, 'never ready without a render');
});
