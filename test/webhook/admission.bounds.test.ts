// Bounded admission: inputs a pod creator controls (annotations up to the apiserver's
// 256 KiB, odd pod shapes) cost bounded CPU, never throw, and are refused with short
// messages that name the annotation or object.
import type { V1Pod } from '@kubernetes/client-node';
import t from 'tap';
import { admit } from '../../webhook/admission.js';
import { MAX_DENIAL_LENGTH } from '../../src/pod-contract/parse.js';
import { admitContext, NS, labelledPod } from '../support/adversarial/world.js';

const deny = (pod: V1Pod): string => {
  const r = admit(pod, admitContext());
  return r.kind === 'denied' ? r.message : `not denied: ${r.kind}`;
};

function timed<T>(fn: () => T): [T, number] {
  const started = performance.now();
  const out = fn();
  return [out, performance.now() - started];
}

t.test('templates that stall handlebars\' parser are refused in linear time', async (t) => {
  const shapes: Record<string, string> = {
    'unbalanced sub-expressions': `{{x ${'(a '.repeat(2700)}`,
    'unclosed blocks': '{{#if a}}'.repeat(1000),
    'deep balanced blocks': '{{#if a}}'.repeat(200) + '{{/if}}'.repeat(200),
    'long parameter list': `{{x ${'a '.repeat(4000)}}}`,
  };
  for (const [what, template] of Object.entries(shapes)) {
    const [message, ms] = timed(() => deny(labelledPod({ 'esi.dev/secrets': 'db', 'esi.dev/template-app.conf': template })));
    t.match(message, /esi\.dev\/template-app\.conf: /, `${what}: the denial names the annotation`);
    // The time is reported, not asserted (a busy machine is slow, not wrong): the shapes are
    // refused at parse, before any render; bench:admission measures the cost.
    t.comment(`${what}: decided in ${ms.toFixed(1)} ms`);
  }
});

t.test('template size is bounded per template and per pod', async (t) => {
  const big = `{{db.password}}${'x'.repeat(40 * 1024)}`;
  t.match(deny(labelledPod({ 'esi.dev/secrets': 'db', 'esi.dev/template-a': big })), /esi\.dev\/template-a: .*limit is 32768/);
  const ann: Record<string, string> = { 'esi.dev/secrets': 'db' };
  for (let i = 0; i < 4; i++) ann[`esi.dev/template-f${i}`] = 'x'.repeat(30 * 1024);
  t.match(deny(labelledPod(ann)), /esi\.dev\/template-\*: the templates total .* the limit is 65536/);
});

t.test('denials are short even for megabyte-sized values', async (t) => {
  const huge = 'A'.repeat(200 * 1024);
  const message = deny(labelledPod({ 'esi.dev/secrets': 'db', 'esi.dev/mode': huge, 'esi.dev/file-mode': huge, 'esi.dev/template-x': `{{${huge}` }));
  t.ok(message.length <= MAX_DENIAL_LENGTH, `message is ${message.length} characters`);
  t.match(message, /esi\.dev\/mode: must be one of/);
  const many: Record<string, string> = { 'esi.dev/secrets': 'db' };
  for (let i = 0; i < 5000; i++) many[`esi.dev/unknown-${i}`] = 'x';
  const m2 = deny(labelledPod(many));
  t.ok(m2.length <= MAX_DENIAL_LENGTH, `5000 unknown annotations: ${m2.length} characters`);
  t.match(m2, /and \d+ more problems/);
});

t.test('non-string annotation values and malformed pod shapes are refused, not thrown', async (t) => {
  const bad = labelledPod({ 'esi.dev/secrets': 'db' });
  (bad.metadata!.annotations as Record<string, unknown>)['esi.dev/mode'] = 5;
  (bad.metadata!.annotations as Record<string, unknown>)['esi.dev/template-x'] = { a: 1 };
  const m = deny(bad);
  t.match(m, /esi\.dev\/mode: must be a string/);
  t.match(m, /esi\.dev\/template-x: must be a string/);
  const shapes: unknown[] = [
    { metadata: { labels: { 'esi.dev/inject': 'true' }, annotations: ['x'] } },
    { metadata: { labels: { 'esi.dev/inject': 'true' }, annotations: { 'esi.dev/secrets': 'db' } }, spec: { containers: 'app' } },
    { metadata: { labels: { 'esi.dev/inject': 'true' }, annotations: { 'esi.dev/secrets': 'db' } }, spec: { containers: [null] } },
    { metadata: { labels: { 'esi.dev/inject': 'true' }, annotations: { 'esi.dev/secrets': 'db' } }, spec: { containers: [{ name: 'a', volumeMounts: 7 }] } },
    { metadata: { labels: { 'esi.dev/inject': 'true' }, annotations: { 'esi.dev/secrets': 'db' }, name: 7 }, spec: { containers: [{ name: 'a' }], volumes: {} } },
  ];
  for (const shape of shapes) {
    let message = '';
    t.doesNotThrow(() => (message = deny(shape as V1Pod)), JSON.stringify(shape));
    t.match(message, /^ESI cannot inject secrets into pod .*(metadata|spec)/, JSON.stringify(shape));
  }
});

t.test('credential references are checked at admission', async (t) => {
  for (const [store, pattern] of [['dotdot-name', /references Secret "\.\.\/x".* is not a valid Secret name/], ['dotdot-key', /key "\.\.\/token" is not a valid key/]] as const) {
    t.match(deny(labelledPod({ 'esi.dev/secrets': `es-${store}` })), pattern, store);
  }
});

t.test('the mount path cannot shadow the agent\'s own mounts', async (t) => {
  for (const path of ['/var/run/esi/credentials', '/var/run/esi', '/var/run/esi/tokens/x', '/var']) {
    t.match(deny(labelledPod({ 'esi.dev/secrets': 'db', 'esi.dev/mount-path': path })), /esi\.dev\/mount-path: .*agent/, path);
  }
});

t.test('the world used here admits a plain pod', async (t) => {
  t.equal(admit(labelledPod({ 'esi.dev/secrets': 'db' }), admitContext()).kind, 'mutated', NS);
});
