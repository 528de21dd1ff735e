// Template bombs and leaks in the agent: bounded output and time per template, errors
// that never quote rendered text, `lookup` as strict as a path.
import type { AgentConfig } from '../../src/agent-config/types.js';
import t from 'tap';
import { renderFiles } from '../../injector/render.js';
import { applyExternalSecretTemplate, buildContext, TemplateEngine, TemplateError } from '../../src/templating/index.js';
import { CANARY } from '../support/adversarial/world.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const keys = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, enc(`v${i}`)]));
const ctx = buildContext({ db: { password: enc(CANARY), ...keys } });

function failure(fn: () => unknown): Error {
  try {
    fn();
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a failure');
}

t.test('templateFrom literal keys are never quoted once rendered', async (t) => {
  const engine = new TemplateEngine();
  for (const literal of ['{{password}}/x: 1', '"{{password}} x": 1', '..{{password}}: 1']) {
    const data = { password: enc(CANARY) };
    const err = failure(() => {
      const out = applyExternalSecretTemplate(engine, { name: 'db', template: { templateFrom: [{ literal }] }, choice: 'handlebars' }, data);
      // A key the template accepts must still become a file the writer accepts.
      renderFiles({ secrets: [{ name: 'db', store: 's', data: [], dataFrom: [{}] }], templates: [] } as unknown as AgentConfig,
        new Map([['db', out]]), engine);
    });
    t.notMatch(err.message, CANARY, literal);
    t.match(err.message, /db/, `${literal}: names the ExternalSecret`);
  }
});

t.test('template bombs are bounded in time and output', async (t) => {
  const engine = new TemplateEngine();
  const nested = (depth: number) => '{{#each @root.db}}'.repeat(depth) + 'x' + '{{/each}}'.repeat(depth);
  const bombs: Record<string, string> = {
    'nested each (21^8 iterations)': nested(8),
    'output doubling': `{{#each @root.db}}{{#each @root.db}}{{#each @root.db}}{{indent 1000 "${'y'.repeat(1000)}"}}{{/each}}{{/each}}{{/each}}`,
    'helper output growth': '{{replace "" "xxxxxxxxxxxxxxxx" (replace "" "xxxxxxxxxxxxxxxx" (replace "" "xxxxxxxxxxxxxxxx" (replace "" "xxxxxxxxxxxxxxxx" "abcdefghijklmnop")))}}',
    'inline partials': '{{#*inline "a"}}{{> b}}{{> b}}{{/inline}}{{> a}}',
  };
  for (const [what, src] of Object.entries(bombs)) {
    const started = performance.now();
    const err = failure(() => engine.render('annotation esi.dev/template-bomb', src, ctx));
    const ms = performance.now() - started;
    t.type(err, TemplateError, what);
    t.match(err.message, /limit|not supported/, `${what}: ${err.message.slice(0, 160)}`);
    t.comment(`${what}: stopped after ${ms.toFixed(0)} ms`);
    t.notMatch(err.message, CANARY);
  }
  t.equal(engine.render('ok', '{{#each db}}{{@key}}{{/each}}', ctx).length > 0, true, 'normal templates still render');
});

t.test('lookup is strict', async (t) => {
  const engine = new TemplateEngine();
  for (const src of ['{{lookup db "missing"}}', '{{lookup db "constructor"}}', '{{lookup nosuch "x"}}', '{{lookup db.password "length"}}']) {
    const err = failure(() => engine.render('annotation esi.dev/template-x', src, ctx));
    t.type(err, TemplateError, src);
    t.match(err.message, /lookup/, src);
    t.notMatch(err.message, CANARY, src);
  }
  t.equal(engine.render('x', '{{lookup db "k1"}}', ctx), 'v1');
});
