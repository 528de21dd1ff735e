// Pod Security "restricted" on the real kube-apiserver, whose PodSecurity admission plugin
// (on by default) runs after the mutating webhooks and so judges the pod with ESI's agent in
// it: injected pods are accepted in every mode, a namespace with OpenShift's UID range gets
// an agent without runAsUser, and a signal on-change (CAP_KILL) is refused by ESI in the
// annotation's terms (docs/install.md, "The injected agent: Pod Security and OpenShift").
import { CoreV1Api, CustomObjectsApi, type V1Container, type V1Pod } from '@kubernetes/client-node';
import t, { type Test } from 'tap';
import { createNamespace } from '../../support/kube.js';
import { until } from '../../support/platform/until.js';
import { labelledPod, setupWebhook } from '../../support/fixtures/webhook.js';

const fx = await setupWebhook(t);
const core = fx.kc.makeApiClient(CoreV1Api);
const custom = fx.kc.makeApiClient(CustomObjectsApi);
const RESTRICTED = { 'pod-security.kubernetes.io/enforce': 'restricted' };

/** A namespace this run's webhook serves, with a fake store and an ExternalSecret `db`. */
async function namespace(prefix: string, labels: Record<string, string>, annotations?: Record<string, string>): Promise<string> {
  const ns = await createNamespace(fx.kc, prefix, t, { 'esi-test-run': fx.runId, ...labels }, annotations);
  const create = (plural: string, body: object) => custom.createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural, body });
  await create('secretstores', { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'fake' }, spec: { provider: { fake: { data: [{ key: 'db', value: 'x' }] } } } });
  await create('externalsecrets', { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'db' },
    spec: { secretStoreRef: { name: 'fake', kind: 'SecretStore' }, data: [{ secretKey: 'password', remoteRef: { key: 'db' } }] } });
  return ns;
}

/** The application written to pass "restricted" by itself. */
function restrictedPod(name: string, annotations: Record<string, string>, spec: Partial<V1Pod['spec']> = {}): V1Pod {
  const app: V1Container = { name: 'app', image: 'registry.example/app:1', securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } };
  return labelledPod(name, { 'esi.dev/secrets': 'db', ...annotations }, { securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } }, containers: [app], ...spec });
}

const refusal = (ns: string, pod: V1Pod, dryRun = false) =>
  core.createNamespacedPod({ namespace: ns, body: pod, ...(dryRun ? { dryRun: 'All' } : {}) })
    .then(() => '', (e: { body?: string }) => (JSON.parse(e.body ?? '{}') as { message?: string }).message ?? String(e));

const agents = (p: V1Pod) => [...(p.spec!.initContainers ?? []), ...p.spec!.containers].filter((c) => c.name.startsWith('esi-agent'));

const restricted = await namespace('restricted', RESTRICTED);

t.test('the plugin enforces: an app container that is not hardened is refused', async (t) => {
  const pod = restrictedPod('soft', {});
  pod.spec!.containers[0]!.securityContext = {};
  t.match(await refusal(restricted, pod), /violates PodSecurity "restricted:latest"/);
});

for (const mode of ['native-sidecar', 'init-only', 'sidecar'] as const) {
  t.test(`${mode}: the injected pod is accepted under "restricted"`, async (t) => {
    t.equal(await refusal(restricted, restrictedPod(`ok-${mode}`, { 'esi.dev/mode': mode })), '', 'created');
    const stored = await core.readNamespacedPod({ name: `ok-${mode}`, namespace: restricted });
    t.equal(agents(stored).length, mode === 'sidecar' ? 2 : 1);
    for (const c of agents(stored)) t.match(c.securityContext, { runAsNonRoot: true, runAsUser: 65532, capabilities: { drop: ['ALL'] } }, `${c.name}: the default user`);
  });
}

t.test('esi.dev/on-change signal: refused by ESI, naming the annotation and the level', async (t) => {
  const pod = restrictedPod('signal', { 'esi.dev/on-change': 'signal:SIGHUP:app' }, { shareProcessNamespace: true });
  // The webhook learns the namespace's labels from its watch cache; until then PodSecurity
  // refuses the pod in its own words.
  const message = await until('ESI\'s refusal', async () => {
    const m = await refusal(restricted, pod, true);
    return m.includes('inject.esi.dev') && m;
  }, 20_000);
  t.match(message, new RegExp(`esi\\.dev/on-change: "signal" needs the KILL capability for the agent, which the Pod Security level "restricted" enforced on namespace "${restricted}" forbids`));
  t.match(message, /notify the application over loopback HTTP/);
  t.equal(await refusal(restricted, restrictedPod('http-reload', { 'esi.dev/on-change': 'http://127.0.0.1:8080/reload' })), '', 'a loopback HTTP reload is accepted');
});

t.test('a namespace with an OpenShift UID range: the agent has no runAsUser', async (t: Test) => {
  const openshift = await namespace('openshift', RESTRICTED, { 'openshift.io/sa.scc.uid-range': '1000650000/10000' });
  for (const mode of ['native-sidecar', 'init-only', 'sidecar'] as const) {
    const name = `uid-${mode}`;
    // The annotation reaches the webhook through its namespace watch: retry dry runs until it shows.
    await until(`the webhook to see namespace ${openshift}`, async () => {
      const dry = await core.createNamespacedPod({ namespace: openshift, body: restrictedPod(name, { 'esi.dev/mode': mode }), dryRun: 'All' });
      return agents(dry).every((c) => c.securityContext?.runAsUser === undefined);
    }, 20_000);
    await core.createNamespacedPod({ namespace: openshift, body: restrictedPod(name, { 'esi.dev/mode': mode }) });
    const stored = await core.readNamespacedPod({ name, namespace: openshift });
    for (const c of agents(stored)) {
      t.notOk(c.securityContext?.runAsUser ?? c.securityContext?.runAsGroup, `${mode}: ${c.name} leaves the user to the platform`);
      t.equal(c.securityContext?.runAsNonRoot, true, `${mode}: ${c.name} still runs non-root`);
    }
  }
});
