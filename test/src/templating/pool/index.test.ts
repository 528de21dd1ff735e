// The render pool (src/templating/pool/) on its own, with handlebars (no Go engine needed):
// renders run off the main thread (its event loop keeps turning), a render past the deadline
// has its thread terminated and replaced, the next render works, a namespace whose render ran
// out of time is held to one render at a time while another namespace's renders go ahead.
import t from 'tap';
import { PooledRenderer, RenderBusy, RenderFailed } from '../../../../src/templating/pool/index.js';

const enc = new TextEncoder();
const dec = new TextDecoder();
const data = Object.fromEntries(['a', 'b', 'c', 'd', 'e'].map((k) => [k, enc.encode(`value-${k}`)]));
const BOMB = '{{#each @root}}'.repeat(12) + 'x' + '{{/each}}'.repeat(12);
const target = (name: string, tpl: string) => ({ name, template: { data: { password: tpl } }, choice: 'handlebars' as const });
const outcome = (p: Promise<unknown>) => p.then(() => 'ok', (e: Error) => (e instanceof RenderBusy ? 'busy' : e instanceof RenderFailed && e.timedOut ? 'timeout' : `error: ${e.message}`));

t.test('a render past the deadline is killed, the thread replaced; others go ahead', async (t) => {
  let killed = 0;
  // The engine's own limit far above the pool's: the pool's deadline alone stops the bomb.
  const r = new PooledRenderer({ workers: 2, timeoutMs: 500, engineTimeoutMs: 60_000, maxQueued: 16, onKill: () => killed++ });
  t.teardown(() => r.close());
  let ticks = 0;
  const timer = setInterval(() => ticks++, 50);
  const started = performance.now();
  const bombs = Array.from({ length: 5 }, (_, i) => outcome(r.render({ tenant: 'evil', key: `bomb-${i}` }, target(`bomb-${i}`, BOMB), data, { metadata: true })));
  const good = await r.render({ tenant: 'good', key: 'good' }, target('good', '{{a}}/{{b}}'), data, { metadata: true });
  t.equal(dec.decode(good.data.password), 'value-a/value-b', 'the other namespace rendered');
  const results = await Promise.all(bombs);
  clearInterval(timer);
  t.ok(results.includes('timeout'), `the bombs: ${results.join(', ')}`);
  t.ok(results.includes('busy'), 'the suspect namespace was held to one render at a time');
  const busy = await r.render({ tenant: 'evil', key: 'bomb-y' }, target('bomb-y', BOMB), data, { metadata: true }).then(() => undefined, (e: Error) => e);
  if (busy instanceof RenderBusy) t.ok(busy.retryAfterMs >= 1000, `a refusal says when to retry (${busy.retryAfterMs} ms)`);
  t.ok(killed >= 1, `${killed} thread(s) killed`);
  t.ok(ticks >= (performance.now() - started) / 50 / 3, `the main thread kept turning (${ticks} ticks)`);
  const err = await r.render({ tenant: 'evil', key: 'bomb-x' }, target('bomb-x', BOMB), data, { metadata: true }).catch((e: Error) => e);
  t.match(String(err), /bomb-x target\.template\.data\.password/, 'the message names the template');
  t.notMatch(String(err), /value-/, 'and no value');
  const again = await r.render({ tenant: 'good', key: 'good' }, target('good', '{{c}}'), data, { metadata: true });
  t.equal(dec.decode(again.data.password), 'value-c', 'a replaced thread renders');
});

t.test('keys named like Object.prototype members stay keys', async (t) => {
  const r = new PooledRenderer({ workers: 1, timeoutMs: 2000, maxQueued: 4 });
  t.teardown(() => r.close());
  // JSON.parse: a `__proto__` key in an object literal would set the prototype instead.
  const template = JSON.parse('{"data": {"__proto__": "{{a}}", "constructor": "{{b}}"}}') as { data: Record<string, string> };
  const out = await r.render({ tenant: 'ns', key: 'p' }, { name: 'p', template, choice: 'handlebars' }, data, { metadata: true });
  t.same(Object.keys(out.data).sort(), ['__proto__', 'constructor']);
  t.equal(Object.getPrototypeOf(out.data), null);
});
