// Long intervals never become a hot loop: Node fires a timer longer than 2^31-1 ms after
// 1 ms, so the annotation caps the refresh interval and the agent clamps every delay.
import pino from 'pino';
import t from 'tap';
import { MAX_TIMER_MS, runLoop } from '../../injector/loop.js';
import { parseAnnotations } from '../../src/pod-contract/parse.js';

const logger = pino({ level: 'silent' });

t.test('the annotation caps the refresh interval', async (t) => {
  for (const value of ['720h', '597h', '25h']) {
    const r = parseAnnotations({ 'esi.dev/secrets': 'db', 'esi.dev/refresh-interval': value });
    t.notOk(r.ok, value);
    t.match(r.ok ? '' : r.problems.join(';'), /esi\.dev\/refresh-interval: must be at most 24h/, value);
  }
  t.ok(parseAnnotations({ 'esi.dev/secrets': 'db', 'esi.dev/refresh-interval': '24h' }).ok);
});

t.test('the agent clamps a period beyond the timer limit instead of spinning', async (t) => {
  t.equal(MAX_TIMER_MS, 2 ** 31 - 1);
  const abort = new AbortController();
  let cycles = 0;
  const warnings: unknown[] = [];
  const onWarning = (w: Error) => warnings.push(w.name);
  process.on('warning', onWarning);
  const done = runLoop({ mode: 'native-sidecar', refreshSeconds: 40 * 24 * 3600, signal: abort.signal, logger, cycle: async () => void cycles++ });
  await new Promise((r) => setTimeout(r, 300));
  abort.abort();
  t.equal(await done, 0);
  process.off('warning', onWarning);
  t.equal(cycles, 1, 'one cycle, then a (clamped) long wait');
  t.notOk(warnings.includes('TimeoutOverflowWarning'), 'no timer overflowed');
});
