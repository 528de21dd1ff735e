// Which workloads restart for which Secret (src/controller/restart/match.ts): the opt-in
// annotation's two forms, every place a pod template can reference a Secret, and what counts
// as a change of a Secret's data. On the real apiserver: test/e2e/controller/restart.test.ts.
import t from 'tap';
import type { V1PodSpec } from '@kubernetes/client-node';
import {
  dataChanged, MAX_NAMED_SECRETS, parseOptIn, referencedSecrets, RESTART_ON_CHANGE_ANNOTATION, restartedAt, restartsFor,
} from '../../../../src/controller/restart/match.js';

const POD: V1PodSpec = {
  volumes: [
    { name: 'a', secret: { secretName: 'vol' } },
    { name: 'b', projected: { sources: [{ secret: { name: 'proj-1' } }, { configMap: { name: 'cm' } }, { secret: { name: 'proj-2' } }] } },
    { name: 'c', configMap: { name: 'not-a-secret' } },
  ],
  containers: [
    { name: 'app', env: [{ name: 'A', valueFrom: { secretKeyRef: { name: 'env-key', key: 'k' } } }, { name: 'B', value: 'literal' }, { name: 'C', valueFrom: { configMapKeyRef: { name: 'cm2', key: 'k' } } }] },
    { name: 'side', envFrom: [{ secretRef: { name: 'env-from' } }, { configMapRef: { name: 'cm3' } }] },
  ],
  initContainers: [{ name: 'init', env: [{ name: 'D', valueFrom: { secretKeyRef: { name: 'init-key', key: 'k' } } }], envFrom: [{ secretRef: { name: 'init-from' } }] }],
};

const workload = (annotation: string | undefined, spec: V1PodSpec = POD) => ({
  metadata: { annotations: (annotation === undefined ? {} : { [RESTART_ON_CHANGE_ANNOTATION]: annotation }) as Record<string, string> },
  spec: { template: { spec } },
});

t.test('references: secret and projected volumes, secretKeyRef and envFrom in containers and initContainers', async (t) => {
  t.same([...referencedSecrets(POD)].sort(), ['env-from', 'env-key', 'init-from', 'init-key', 'proj-1', 'proj-2', 'vol']);
  t.same([...referencedSecrets(undefined)], []);
  t.same([...referencedSecrets({ containers: [{ name: 'x' }] })], []);
});

t.test('the opt-in: "true", a list of names, or none', async (t) => {
  t.same(parseOptIn('true'), { referenced: true });
  t.same(parseOptIn(' true '), { referenced: true });
  for (const none of [undefined, '', 'false', ' , ,']) t.equal(parseOptIn(none), undefined, `no opt-in: ${JSON.stringify(none)}`);
  t.same(parseOptIn('db-creds, api,'), { referenced: false, names: new Set(['db-creds', 'api']) });
  const many = Array.from({ length: 200 }, (_, i) => `s${i}`).join(',');
  const opt = parseOptIn(many);
  t.equal(opt?.referenced === false && opt.names.size, MAX_NAMED_SECRETS, 'a long list is cut');
});

t.test('"true" restarts for referenced Secrets only; a list for the named ones only', async (t) => {
  t.same(restartsFor(workload('true'), ['vol', 'init-from', 'elsewhere']), ['vol', 'init-from']);
  t.same(restartsFor(workload('true'), ['elsewhere']), []);
  t.same(restartsFor(workload(undefined), ['vol']), [], 'not opted in');
  t.same(restartsFor(workload('false'), ['vol']), [], 'opted out');
  t.same(restartsFor(workload('api'), ['vol', 'api']), ['api'], 'named: only the named Secret, referenced or not');
  t.same(restartsFor(workload('vol,other'), ['vol', 'env-key']), ['vol']);
  t.same(restartsFor({}, ['vol']), [], 'no metadata, no spec');
  t.same(restartsFor(workload('true', {} as V1PodSpec), ['vol']), [], 'no references');
});

t.test('restartedAt: ESI\'s own annotation on the pod template, 0 when absent or unreadable', async (t) => {
  t.equal(restartedAt({ spec: { template: { metadata: { annotations: { 'esi.dev/restartedAt': '2026-01-02T03:04:05.678Z' } } } } }), Date.parse('2026-01-02T03:04:05.678Z'));
  t.equal(restartedAt({ spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': '2026-01-02T03:04:05Z' } } } } }), 0, 'kubectl\'s is not ESI\'s');
  t.equal(restartedAt({ spec: { template: { metadata: { annotations: { 'esi.dev/restartedAt': 'garbage' } } } } }), 0);
  t.equal(restartedAt({}), 0);
});

t.test('a change is new data in an existing Secret: not a creation, not metadata alone', async (t) => {
  const secret = (data: Record<string, string>) => ({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data });
  const before = secret({ a: 'MQ==' });
  t.notOk(dataChanged(undefined, { action: 'create', body: secret({ a: 'MQ==' }) }), 'creation');
  t.notOk(dataChanged(before, { action: 'none' }));
  t.notOk(dataChanged(before, { action: 'replace', body: { ...secret({ a: 'MQ==' }), metadata: { name: 's', labels: { x: 'y' } } } }), 'metadata only');
  t.notOk(dataChanged(before, { action: 'recreate', body: { ...secret({ a: 'MQ==' }), type: 'other' } }), 'type only');
  t.ok(dataChanged(before, { action: 'replace', body: secret({ a: 'Mg==' }) }), 'a value');
  t.ok(dataChanged(before, { action: 'replace', body: secret({ a: 'MQ==', b: 'Mg==' }) }), 'a key added');
  t.ok(dataChanged(before, { action: 'replace', body: secret({}) }), 'a key removed');
  t.ok(dataChanged(before, { action: 'recreate', body: secret({ a: 'Mg==' }) }), 'recreated (immutable) with new data');
  t.ok(dataChanged({ ...before, data: undefined }, { action: 'replace', body: secret({ a: 'MQ==' }) }), 'a cached Secret without data (edited by hand) is repaired: a change');
});
