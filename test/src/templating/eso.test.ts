// The reconciler's rendering of `target.template` (renderExternalSecretTemplate with
// metadata): label and annotation values as templates (Go by default, handlebars on
// opt-in), templateFrom configMap/secret sources (Values, KeysAndValues) and targets
// Data/Labels/Annotations, mergePolicy, and value-free refusals of invalid metadata.
// Also the rules of templateFrom references (src/externalsecret/template-sources.ts).
import t from 'tap';
import { loadTemplateSources, MAX_TEMPLATE_SOURCES, templateSourceRefs } from '../../../src/externalsecret/template-sources.js';
import { MAX_GO_TEMPLATE_BYTES } from '../../../src/templating/go/index.js';
import { stopEngine } from '../../../src/templating/go/runner.js';
import { renderExternalSecretTemplate, selectTemplateEngine, TemplateEngine, type TemplateSources } from '../../../src/templating/index.js';
import type { ExternalSecretTemplate } from '../../../src/api/types.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (m: Record<string, Uint8Array>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, new TextDecoder().decode(v)]));
const CANARY = 'CANARY-render-4d2e';
const data = { username: enc('orders'), password: enc(CANARY) };
const engine = new TemplateEngine();
t.teardown(stopEngine);

const go = (template: ExternalSecretTemplate, sources?: TemplateSources, annotations?: Record<string, string>) =>
  renderExternalSecretTemplate(engine, { name: 'db', template, choice: selectTemplateEngine('db', annotations, template) }, data, { metadata: true, sources });

t.test('metadata label and annotation values are templates; keys are not; type is left to the caller', async (t) => {
  const out = go({ metadata: { labels: { team: '{{ .username }}', tier: 'db' }, annotations: { 'example.com/user': 'user={{ .username | upper }}' } } });
  t.same(out.labels, { team: 'orders', tier: 'db' });
  t.same(out.annotations, { 'example.com/user': 'user=ORDERS' });
  t.same(text(out.data), { username: 'orders', password: CANARY }, 'no Data template: fetched data kept');
  const hb = renderExternalSecretTemplate(engine, { name: 'db', template: { metadata: { labels: { team: '{{username}}' } } }, choice: 'handlebars' }, data, { metadata: true });
  t.same(hb.labels, { team: 'orders' }, 'handlebars on the opt-in');
  const plain = renderExternalSecretTemplate(engine, { name: 'db', template: { metadata: { labels: { a: 'b' } } }, choice: 'none' }, data, { metadata: true });
  t.same(plain.labels, { a: 'b' }, 'plain labels copied');
  t.equal(selectTemplateEngine('db', undefined, { metadata: { labels: { a: 'b' } } }), 'none');
  t.throws(() => selectTemplateEngine('db', undefined, { metadata: { annotations: { a: '{{ .x ' } } }), /target\.template\.metadata\.annotations\.a line 1/);
});

t.test('an invalid rendered label is refused without the value', async (t) => {
  const err = t.throws(() => go({ metadata: { labels: { pw: '{{ .password }}!' } } })) as Error;
  t.match(err.message, /metadata\.labels\.pw: the rendered value of label key "pw" is not a valid label value/);
  t.notOk(err.message.includes(CANARY));
  const err2 = t.throws(() => go({ templateFrom: [{ target: 'Annotations', literal: '"{{ .password }} x": v' }] })) as Error;
  t.match(err2.message, /a rendered annotation key is not a valid Kubernetes annotation key/);
  t.notOk(err2.message.includes(CANARY));
});

t.test('templateFrom configMap/secret: Values, KeysAndValues, targets, order and mergePolicy', async (t) => {
  const sources: TemplateSources = {
    configMap: { tpl: { 'dsn': 'postgres://{{ .username }}:{{ .password }}@db', 'more.yaml': 'extra: "{{ .username }}"\nuser: overridden' } },
    secret: { meta: { owner: '{{ .username }}-team' } },
  };
  const out = go({
    templateFrom: [
      { configMap: { name: 'tpl', items: [{ key: 'dsn' }, { key: 'more.yaml', templateAs: 'KeysAndValues' }] } },
      { secret: { name: 'meta', items: [{ key: 'owner' }] }, target: 'Labels' },
      { literal: 'example.com/note: "{{ .username }}"', target: 'Annotations' },
    ],
    data: { user: '{{ .username }}' },
  }, sources);
  t.same(text(out.data), { dsn: `postgres://orders:${CANARY}@db`, extra: 'orders', user: 'orders' }, 'data overrides templateFrom; Replace drops fetched keys');
  t.same(out.labels, { owner: 'orders-team' });
  t.same(out.annotations, { 'example.com/note': 'orders' });
  const merged = go({ mergePolicy: 'Merge', templateFrom: [{ configMap: { name: 'tpl', items: [{ key: 'dsn' }] } }] }, sources);
  t.same(Object.keys(merged.data).sort(), ['dsn', 'password', 'username']);
  const labelsOnly = go({ templateFrom: [{ secret: { name: 'meta', items: [{ key: 'owner' }] }, target: 'Labels' }] }, sources);
  t.same(Object.keys(labelsOnly.data).sort(), ['password', 'username'], 'Labels-only templateFrom keeps the fetched data');
  t.throws(() => go({ templateFrom: [{ configMap: { name: 'tpl', items: [{ key: 'dsn' }] } }] }), /not supported by the agent/, 'no sources (the agent): refused');
  t.throws(() => go({ templateFrom: [{ configMap: { name: 'tpl', items: [{ key: 'nope' }] } }] }, sources), /templateFrom\[0\]\.configMap\.items\[0\]: key "nope" is not in ConfigMap "tpl"/);
  t.throws(() => go({ templateFrom: [{ literal: 'a: b', target: 'Spec' }] }, sources), /target "Spec" is not supported/);
});

t.test('the agent (no metadata) renders what it did before', async (t) => {
  const out = renderExternalSecretTemplate(engine, { name: 'db', template: { templateFrom: [{ literal: 'l: v', target: 'Labels' }, { configMap: { name: 'c' }, target: 'Annotations' }], data: { a: '{{ .username }}' } }, choice: 'go' }, data);
  t.same(text(out.data), { a: 'orders' });
  t.same(out.labels, {});
});

t.test('templateFrom references: own namespace only, items required, bounded', async (t) => {
  t.same(templateSourceRefs({ templateFrom: [{ configMap: { name: 'c', items: [{ key: 'k' }] } }, { literal: 'x: y' }] }, 'ns'), [
    { kind: 'configMap', name: 'c', field: 'spec.target.template.templateFrom[0].configMap', keys: ['k'] },
  ]);
  t.throws(() => templateSourceRefs({ templateFrom: [{ secret: { name: 's', namespace: 'other', items: [{ key: 'k' }] } as never }] }, 'ns'),
    { reason: 'AccessDenied', message: /templateFrom\[0\]\.secret\.namespace "other": template sources are read only from the ExternalSecret's own namespace "ns"/ });
  t.throws(() => templateSourceRefs({ templateFrom: [{ configMap: { name: 'c' } }] }, 'ns'), /configMap\.items must list the keys/);
  const many = Array.from({ length: MAX_TEMPLATE_SOURCES + 1 }, (_, i) => ({ configMap: { name: `c${i}`, items: [{ key: 'k' }] } }));
  t.throws(() => templateSourceRefs({ templateFrom: many }, 'ns'), /at most 16/);

  const reads: string[] = [];
  const read = async (kind: string, ns: string, name: string): Promise<Record<string, string> | undefined> => {
    reads.push(`${kind}/${ns}/${name}`);
    return name === 'big' ? { k: 'x'.repeat(MAX_GO_TEMPLATE_BYTES + 1) } : name === 'c' ? { k: 'tpl', other: 'not kept' } : undefined;
  };
  const refs = templateSourceRefs({ templateFrom: [{ configMap: { name: 'c', items: [{ key: 'k' }] } }, { configMap: { name: 'c', items: [{ key: 'k' }] }, target: 'Labels' }] }, 'ns');
  t.same(await loadTemplateSources(refs, 'ns', read), { configMap: { c: { k: 'tpl' } }, secret: {} });
  t.same(reads, ['configMap/ns/c'], 'read once, from the ExternalSecret namespace');
  await t.rejects(loadTemplateSources(templateSourceRefs({ templateFrom: [{ configMap: { name: 'gone', items: [{ key: 'k' }] } }] }, 'ns'), 'ns', read),
    { reason: 'TemplateSourceNotFound', message: /ConfigMap "ns\/gone" \(spec\.target\.template\.templateFrom\[0\]\.configMap\.name\) not found/ });
  await t.rejects(loadTemplateSources(templateSourceRefs({ templateFrom: [{ configMap: { name: 'big', items: [{ key: 'k' }] } }] }, 'ns'), 'ns', read), /larger than 65536 bytes/);
});
