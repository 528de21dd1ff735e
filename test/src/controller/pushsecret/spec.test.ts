// The PushSecret spec read without a control plane (src/controller/pushsecret/spec.ts): checks that
// name the field, remote keys per source Secret, status entry keys, the label selector query.
import t from 'tap';
import type { PushSecret } from '../../../../src/api/types.js';
import { entryKey, forSource, pushSpec, selectorQuery } from '../../../../src/controller/pushsecret/spec.js';

function ps(spec: Partial<PushSecret['spec']>, annotations?: Record<string, string>): PushSecret {
  return {
    apiVersion: 'external-secrets.io/v1alpha1', kind: 'PushSecret', metadata: { name: 'p', namespace: 'n', annotations },
    spec: { secretStoreRefs: [{ name: 's' }], selector: { secret: { name: 'src' } }, data: [{ match: { secretKey: 'k', remoteRef: { remoteKey: 'r' } } }], ...spec },
  };
}

t.test('spec checks name the field', async (t) => {
  t.ok(pushSpec(ps({})).spec);
  t.equal(pushSpec(ps({})).spec?.intervalMs, 3_600_000, 'refreshInterval defaults to 1h');
  const bad = pushSpec(ps({ refreshInterval: 'soon', selector: { secret: {} }, secretStoreRefs: [], data: [], updatePolicy: 'Never' as never }));
  t.notOk(bad.spec);
  for (const re of [/spec.refreshInterval "soon"/, /spec.selector.secret needs name or selector/, /spec.secretStoreRefs is empty/, /spec.data and spec.dataTo are empty/, /spec.updatePolicy "Never"/]) {
    t.ok(bad.problems.some((p) => re.test(p)), String(re));
  }
  t.equal(pushSpec(ps({ template: { data: { x: '{{ .k }}' } } })).spec?.engine, 'go', 'Go templates by default, as ESO');
  t.match(pushSpec(ps({ template: { data: { x: '{{ .k | nosuchfunc }}' } } })).problems.join(), /nosuchfunc/);
  t.equal(pushSpec(ps({ template: { data: { x: '{{k}}' } } }, { 'esi.dev/template-engine': 'handlebars' })).spec?.engine, 'handlebars');
  t.match(pushSpec(ps({ selector: { generatorRef: { apiVersion: 'x', kind: 'Password', name: 'g' } } })).problems.join(), /spec\.selector\.generatorRef\.apiVersion must be generators\.external-secrets\.io\/v1alpha1/);
  t.match(pushSpec(ps({ selector: { generatorRef: { kind: 'Password', name: 'g' }, secret: { name: 's' } } })).problems.join(), /set secret or generatorRef, not both/);
  t.same(pushSpec(ps({ selector: { generatorRef: { apiVersion: 'generators.external-secrets.io/v1alpha1', kind: 'Password', name: 'g' } } })).problems, [], 'a generator is a source');
});

t.test('remote keys per source Secret; status entry keys; label selector query', async (t) => {
  const d = forSource({ match: { secretKey: 'url', remoteRef: { remoteKey: 'pub/{{ .Name }}', property: 'p-{{.Name}}' } } }, 'conn-a');
  t.same(d.match.remoteRef, { remoteKey: 'pub/conn-a', property: 'p-conn-a' });
  t.equal(entryKey(d), 'pub/conn-a/p-conn-a');
  t.equal(entryKey({ match: { remoteRef: { remoteKey: 'x' } } }), 'x');
  t.equal(selectorQuery({ matchLabels: { a: 'b' }, matchExpressions: [{ key: 'c', operator: 'In', values: ['1', '2'] }, { key: 'd', operator: 'DoesNotExist' }] }), 'a=b,c in (1,2),!d');
});
