// An ExternalSecret that uses a feature ESI does not serve, created where no webhook is in
// the path (the reconciler only), ends Ready=False with the message the webhook would give
// (one validator: src/externalsecret/checks.ts): the field and what ESI supports instead;
// no Secret is written. Read back through the API, as a user would.
import t from 'tap';
import { describeSpecProblem, externalSecretSpecProblems } from '../../../src/externalsecret/checks.js';
import type { ExternalSecretSpec } from '../../../src/api/types.js';
import { stopEngine } from '../../../src/templating/go/runner.js';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, externalSecret, fakeStore, getSecret, ready, startController } from '../../support/fixtures/controller.js';

t.teardown(stopEngine);
const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'ctl-unserved', t);
await create(env, ns, 'secretstores', fakeStore('fake', env.cls, [{ key: 'db', value: '{"a":"1"}' }]));
await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false'], t);

const data = [{ secretKey: 'a', remoteRef: { key: 'db', property: 'a' } }];
const cases: { name: string; spec: ExternalSecretSpec; expected: RegExp }[] = [
  { name: 'sync-windows', spec: { data, syncWindows: { kind: 'allow', windows: Array.from({ length: 17 }, () => ({ schedule: '0 2 * * *', duration: '1h' })) } },
    expected: /spec\.syncWindows\.windows has 17 entries; ESI allows at most 16/ },
  { name: 'generator', spec: { dataFrom: [{ sourceRef: { generatorRef: { apiVersion: 'generators.external-secrets.io/v1alpha1', kind: 'Grafana', name: 'p' } } }] },
    expected: /spec\.dataFrom\[0\]\.sourceRef\.generatorRef\.kind "Grafana" is not a generator ESI runs/ },
  { name: 'template-target', spec: { data, target: { template: { templateFrom: [{ literal: 'a: b', target: 'Spec' }] } } },
    expected: /spec\.target\.template\.templateFrom\[0\]\.target Spec is not supported by ESI; use Data, Labels or Annotations/ },
  { name: 'token-type', spec: { data, target: { template: { type: 'bootstrap.kubernetes.io/token' } } },
    expected: /spec\.target\.template\.type "bootstrap\.kubernetes\.io\/token" is not allowed/ },
  { name: 'manifest', spec: { data, target: { manifest: { apiVersion: 'v1', kind: 'ConfigMap' } } },
    expected: /spec\.target\.manifest \(ConfigMap\) is not enabled in this controller: its operator starts it with --allow-configmap-targets \(chart: controller\.configMapTargets\)/ },
  { name: 'manifest-kind', spec: { data, target: { manifest: { apiVersion: 'argoproj.io/v1alpha1', kind: 'Application' } } },
    expected: /spec\.target\.manifest \(argoproj\.io\/v1alpha1 Application\) is not served by ESI: its reconciler writes Secrets and, where the operator enabled it, ConfigMaps/ },
  { name: 'create-or-merge', spec: { data, target: { creationPolicy: 'CreateOrMerge' } },
    expected: /spec\.target\.creationPolicy CreateOrMerge is not supported by ESI; use Owner .* or Merge/ },
  { name: 'transform-syntax', spec: { dataFrom: [{ extract: { key: 'db' }, rewrite: [{ transform: { template: '{{ .value | nope }}' } }] }] },
    expected: /spec\.dataFrom\[0\]\.rewrite\[0\]\.transform\.template line 1: function "nope" not defined/ },
];

t.test('each unserved feature: Ready=False naming the field and the alternative, no Secret', async (t) => {
  for (const c of cases) await create(env, ns, 'externalsecrets', externalSecret(c.name, 'fake', c.spec));
  for (const c of cases) {
    const es = await ready(env, ns, c.name, 'False', 'InvalidSpec');
    const message = es.status?.conditions?.find((x) => x.type === 'Ready')?.message ?? '';
    t.match(message, c.expected, `${c.name}: the condition names the field`);
    t.ok(message.startsWith(`ExternalSecret "${c.name}": `), `${c.name}: names the ExternalSecret`);
    t.notOk(await getSecret(env, ns, c.name), `${c.name}: no Secret written`);
  }
});

t.test('the reconciler and the webhook word a shared refusal identically', async (t) => {
  for (const c of cases.filter((x) => !['manifest', 'manifest-kind', 'create-or-merge', 'sync-windows', 'template-target', 'token-type', 'generator'].includes(x.name))) {
    const agent = externalSecretSpecProblems(c.spec, 'agent').map((p) => describeSpecProblem(c.name, p));
    const es = await ready(env, ns, c.name, 'False', 'InvalidSpec');
    t.equal(es.status?.conditions?.find((x) => x.type === 'Ready')?.message, agent.join('; '), c.name);
  }
  t.same(externalSecretSpecProblems({ data, target: { manifest: { apiVersion: 'v1', kind: 'ConfigMap' }, creationPolicy: 'CreateOrMerge' } }, 'agent'), [],
    'target fields describe the reconciler\'s object: the agent writes files regardless');
  const fromConfigMap: ExternalSecretSpec = { secretStoreRef: { name: 'fake' }, data, target: { template: { templateFrom: [{ configMap: { name: 'tpl', items: [{ key: 'a' }] } }] } } };
  t.match(externalSecretSpecProblems(fromConfigMap, 'agent'), [{ message: /templateFrom\[0\]\.configMap is not supported by ESI \(the agent reads no ConfigMap or Secret/ }],
    'templateFrom configMap: refused for the agent (admission)');
  t.same(externalSecretSpecProblems(fromConfigMap, 'reconciler'), [], 'served by the reconciler (test/e2e/controller/template.test.ts)');
});

t.test('the same spec without the unserved field syncs', async (t) => {
  await create(env, ns, 'externalsecrets', externalSecret('served', 'fake', { data }));
  await ready(env, ns, 'served', 'True');
  t.ok(await getSecret(env, ns, 'served'));
});
