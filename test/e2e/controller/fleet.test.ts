// Fleet control on the real apiserver, as a tenant (docs/fleet.md): the real `esi controller`
// gives the injected pods reading a budgeted store a refresh floor that keeps their sum within
// the budget, and after a change of the store's source Secret a new value-free change
// generation, on exactly the pods that mount it; a tenant's store reading another namespace
// gets no notifications. No secret value in any annotation, log line or metric (canary scan).
import t from 'tap';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { createNamespace } from '../../support/kube.js';
import { createTenant } from '../../support/tenant.js';
import { controllerEnv, startController, until } from '../../support/fixtures/controller.js';

const CANARY = 'fleet-canary-5d2e91';
const env = await controllerEnv(t);
const tenant = await createTenant(env.kc, 'fleet', t);
const elsewhere = await createNamespace(env.kc, 'fleet-other', t);
const ns = tenant.namespace;
const ctl = await startController(env.cp.kubeconfigPath, [
  '--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--change-notifications=true', '--pod-patch-qps=20',
], t);

const custom = (plural: string, body: object) => tenant.custom.createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural, body: { apiVersion: 'external-secrets.io/v1', ...body } });
const k8sStore = (name: string, remoteNamespace: string, annotations: Record<string, string>) => custom('secretstores', {
  kind: 'SecretStore', metadata: { name, annotations }, spec: { controller: env.cls, provider: { kubernetes: {
    remoteNamespace, server: { url: 'https://kubernetes.default.svc' }, auth: { serviceAccount: { name: 'app' } } } } },
});
await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'db' }, stringData: { password: `${CANARY}-1` } } });
await k8sStore('k8s', ns, { 'esi.dev/read-budget': '6/m', 'esi.dev/change-notifications': 'true' });
await k8sStore('far', elsewhere, { 'esi.dev/change-notifications': 'true' });
const es = (name: string, store: string) => custom('externalsecrets', { kind: 'ExternalSecret', metadata: { name }, spec: {
  secretStoreRef: { name: store }, refreshInterval: '1h', data: [{ secretKey: 'password', remoteRef: { key: 'db', property: 'password' } }] } });
await es('db', 'k8s');
await es('far', 'far');

// Pods as the webhook leaves them (no webhook runs here: the annotations are what it would add).
const pod = (name: string, secrets: string): V1Pod => ({ metadata: { name, labels: { 'esi.dev/inject': 'true' }, annotations: {
  'esi.dev/injected': 'native-sidecar', 'esi.dev/secrets': secrets, 'esi.dev/refresh-interval': '10s' } },
spec: { containers: [{ name: 'app', image: 'registry.invalid/app:1' }] } });
for (const name of ['a', 'b', 'c']) await tenant.core.createNamespacedPod({ namespace: ns, body: pod(name, 'db') });
await tenant.core.createNamespacedPod({ namespace: ns, body: pod('far', 'far') });
const annotations = async (name: string) => (await tenant.core.readNamespacedPod({ namespace: ns, name })).metadata?.annotations ?? {};

t.test('the budget becomes a refresh floor that keeps the three pods within it', async (t) => {
  // 3 pods × 1 read / 10 s = 0.3 reads/s; the budget allows 0.1, of which the floor aims at 90 %.
  const floors = await until('the floors', async () => {
    const f = await Promise.all(['a', 'b', 'c'].map(async (n) => (await annotations(n))['esi.dev/refresh-floor']));
    return f.every(Boolean) ? f : undefined;
  });
  t.same(floors, ['34s', '34s', '34s'], '3 reads per 34 s = 0.088 reads/s ≤ 0.09');
  t.equal((await annotations('far'))['esi.dev/refresh-floor'], undefined, 'a pod of a store without a budget gets no floor');
  const metrics = await ctl.metrics();
  t.match(metrics, /esi_fleet_store_planned_reads\{store="SecretStore\/[^"]+\/k8s"\} 0\.08/);
  t.match(metrics, /esi_fleet_store_pods\{store="SecretStore\/[^"]+\/k8s"\} 3/);
});

t.test('a change of the source Secret reaches exactly the pods that mount it, value-free', async (t) => {
  const first = await until('first generations', async () => {
    const g = await Promise.all(['a', 'b', 'c'].map(async (n) => (await annotations(n))['esi.dev/change-generation']));
    return g.every(Boolean) ? g : undefined;
  });
  t.equal(new Set(first).size, 1, 'the three pods read the same source: one generation');
  const core = tenant.kc.makeApiClient(CoreV1Api);
  await core.replaceNamespacedSecret({ namespace: ns, name: 'db', body: { metadata: { name: 'db' }, stringData: { password: `${CANARY}-2` } } });
  const next = await until('new generations', async () => {
    const g = await Promise.all(['a', 'b', 'c'].map(async (n) => (await annotations(n))['esi.dev/change-generation']));
    return g.every((x) => x && x !== first[0]) ? g : undefined;
  });
  t.match(next[0], /^[0-9a-f]{16}$/, 'a hash, naming no key');
  t.equal((await annotations('far'))['esi.dev/change-generation'], undefined, "a tenant's store reading another namespace is not watched");
  t.ok(await ctl.counter('esi_fleet_notifications_total') >= 3, 'counted');
  const all = JSON.stringify(await Promise.all(['a', 'b', 'c', 'far'].map(annotations))) + ctl.output() + (await ctl.metrics());
  t.notOk(all.includes(CANARY), 'no secret value in any annotation, controller log line or metric');
});
