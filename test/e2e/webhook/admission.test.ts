// The main path through the real apiserver: a labelled, annotated pod created through
// the API is sent to the running `esi webhook` over TLS and stored mutated.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { CoreV1Api } from '@kubernetes/client-node';
import t, { type Test } from 'tap';
import type { AgentConfig } from '../../../src/agent-config/types.js';
import { CANARY, labelledPod, setupWebhook } from '../../support/fixtures/webhook.js';

const fx = await setupWebhook(t);

const agentIn = (pod: V1Pod, name = 'esi-agent'): V1Container | undefined =>
  [...(pod.spec!.initContainers ?? []), ...pod.spec!.containers].find((c) => c.name === name);
const configOf = (c: V1Container): AgentConfig => JSON.parse(c.env!.find((e) => e.name === 'ESI_AGENT_CONFIG')!.value!);

function checkHardening(t: Test, c: V1Container) {
  t.same(c.securityContext, {
    runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true,
    capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' },
  }, `${c.name} runs non-root, read-only, without capabilities`);
  t.same(c.resources, { requests: { cpu: '5m', memory: '32Mi' }, limits: { memory: '96Mi' } }, 'small default resources');
  t.same(c.args, ['agent'], 'runs `esi agent` (no shell)');
}

t.test('native sidecar (default): stored pod has the agent, volumes and read-only mount', async (t) => {
  const pod = await fx.createPod(labelledPod('native', {
    'esi.dev/secrets': 'db,vault-app,shared',
    'esi.dev/template-app.properties': 'db.password={{db.password}}\n',
    'esi.dev/refresh-interval': '5m',
  }));
  const stored = await fx.kc.makeApiClient(CoreV1Api).readNamespacedPod({ name: 'native', namespace: fx.ns });
  t.same(stored.spec!.initContainers!.map((c) => c.name), ['esi-agent'], 'one agent, as an init container');
  t.same(stored.spec!.containers.map((c) => c.name), ['app'], 'no extra regular container');
  const agent = agentIn(stored)!;
  t.equal(agent.restartPolicy, 'Always', 'native sidecar');
  t.match(agent.startupProbe, { httpGet: { path: '/readyz', port: 8099 } }, 'startup probe gates the app on the first render');
  checkHardening(t, agent);
  const app = stored.spec!.containers[0]!;
  t.same(app.volumeMounts!.find((m) => m.name === 'esi-secrets'), { name: 'esi-secrets', mountPath: '/var/run/secrets/esi', readOnly: true }, 'app mounts the tmpfs read-only');
  const vols = Object.fromEntries(stored.spec!.volumes!.map((v) => [v.name, v]));
  t.same(vols['esi-secrets']!.emptyDir, { medium: 'Memory', sizeLimit: '4Mi' }, 'in-memory volume with a size limit');
  const tokens = vols['esi-tokens']!.projected!.sources!.map((s) => s.serviceAccountToken);
  t.same(tokens.map((s) => s!.audience).sort(), [undefined, 'esi'].sort(), 'one projected token per audience (API default, webhook default)');
  const cred = stored.spec!.volumes!.find((v) => v.secret?.secretName === 'vault-token')!;
  t.same(cred.secret!.items, [{ key: 'token', path: 'token' }], 'only the referenced credential key is projected');
  const credMount = agent.volumeMounts!.find((m) => m.name === cred.name)!;
  t.equal(credMount.mountPath, '/var/run/esi/credentials/vault-token');
  t.notOk(app.volumeMounts!.some((m) => m.name === cred.name || m.name === 'esi-tokens'), 'credentials and tokens are mounted into the agent only');
  const cfg = configOf(agent);
  t.equal(cfg.mode, 'native-sidecar');
  t.equal(cfg.refreshSeconds, 300);
  t.same(cfg.secrets.map((s) => s.name), ['db', 'vault-app', 'shared']);
  t.same(Object.keys(cfg.stores).sort(), [`ClusterSecretStore/shared-${(fx.manifests[2] as { metadata: { name: string } }).metadata.name.slice(7)}`, `SecretStore/${fx.ns}/cluster-secrets`, `SecretStore/${fx.ns}/vault`].sort());
  t.equal(cfg.stores[`SecretStore/${fx.ns}/vault`]!.credentialsDir, '/var/run/esi/credentials');
  t.same(cfg.templates, [{ file: 'app.properties', template: 'db.password={{db.password}}\n' }]);
  t.equal(stored.metadata!.annotations!['esi.dev/injected'], 'native-sidecar');
  t.equal(pod.metadata!.uid, stored.metadata!.uid);
});

t.test('init-only: one init container, no probes, no restart policy', async (t) => {
  const stored = await fx.createPod(labelledPod('oneshot', { 'esi.dev/secrets': 'db', 'esi.dev/mode': 'init-only' }, { restartPolicy: 'Never' }));
  const agent = agentIn(stored)!;
  t.same(stored.spec!.initContainers!.map((c) => c.name), ['esi-agent']);
  t.notOk(agent.restartPolicy, 'a plain init container');
  t.notOk(agent.startupProbe ?? agent.livenessProbe, 'no probes');
  t.equal(configOf(agent).mode, 'init-only');
  checkHardening(t, agent);
});

t.test('sidecar (classic): init container plus a regular sidecar container', async (t) => {
  const stored = await fx.createPod(labelledPod('classic', { 'esi.dev/secrets': 'db', 'esi.dev/mode': 'sidecar' }));
  t.same(stored.spec!.initContainers!.map((c) => c.name), ['esi-agent-init']);
  t.same(stored.spec!.containers.map((c) => c.name), ['app', 'esi-agent']);
  t.equal(configOf(agentIn(stored, 'esi-agent-init')!).mode, 'init-only');
  t.equal(configOf(agentIn(stored)!).mode, 'sidecar');
  t.match(agentIn(stored)!.livenessProbe, { httpGet: { path: '/healthz' } });
});

t.test('native sidecar goes after existing native sidecars and before app init containers', async (t) => {
  const stored = await fx.createPod(labelledPod('mesh', { 'esi.dev/secrets': 'db', 'esi.dev/containers': 'migrate,app' }, {
    initContainers: [
      { name: 'mesh-proxy', image: 'registry.example/proxy:1', restartPolicy: 'Always' },
      { name: 'migrate', image: 'registry.example/migrate:1' },
    ],
  }));
  t.same(stored.spec!.initContainers!.map((c) => c.name), ['mesh-proxy', 'esi-agent', 'migrate']);
  const migrate = stored.spec!.initContainers!.find((c) => c.name === 'migrate')!;
  t.match(migrate.volumeMounts!.find((m) => m.name === 'esi-secrets'), { readOnly: true }, 'a named init container gets the files too');
  t.notOk(stored.spec!.initContainers![0]!.volumeMounts?.some((m) => m.name === 'esi-secrets'), 'the mesh proxy does not');
});

t.test('an unlabelled pod is untouched', async (t) => {
  const input = labelledPod('plain', { 'esi.dev/secrets': 'db' });
  delete input.metadata!.labels!['esi.dev/inject'];
  const stored = await fx.createPod(input);
  t.notOk(stored.spec!.initContainers, 'no init containers');
  t.same(stored.spec!.containers.map((c) => c.name), ['app']);
  t.notOk(stored.metadata!.annotations!['esi.dev/injected']);
});

t.test('re-admitting an injected pod changes nothing', async (t) => {
  const first = await fx.createPod(labelledPod('again', { 'esi.dev/secrets': 'db' }));
  const copy: V1Pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'again-2', labels: first.metadata!.labels, annotations: first.metadata!.annotations }, spec: structuredClone(first.spec) };
  delete copy.spec!.nodeName;
  // The ServiceAccount admission plugin adds its own token volume again; drop the first one.
  copy.spec!.volumes = copy.spec!.volumes!.filter((v) => !v.name.startsWith('kube-api-access'));
  for (const c of [...copy.spec!.containers, ...copy.spec!.initContainers!]) c.volumeMounts = c.volumeMounts?.filter((m) => !m.name.startsWith('kube-api-access'));
  const second = await fx.createPod(copy);
  t.same(second.spec!.initContainers!.map((c) => c.name), ['esi-agent'], 'still exactly one agent');
  // The apiserver's ServiceAccount plugin names its token volume randomly per pod.
  const normal = (c?: V1Container) => JSON.stringify(c).replace(/kube-api-access-\w+/g, 'kube-api-access');
  t.equal(normal(agentIn(second)), normal(agentIn(first)), 'the agent container is identical');
  t.equal(second.spec!.volumes!.filter((v) => v.name === 'esi-secrets').length, 1);
});

t.test('dryRun returns the mutated pod and stores nothing', async (t) => {
  const res = await fx.createPod(labelledPod('dry', { 'esi.dev/secrets': 'db' }), true);
  t.ok(agentIn(res), 'the dry-run response is mutated');
  await t.rejects(fx.kc.makeApiClient(CoreV1Api).readNamespacedPod({ name: 'dry', namespace: fx.ns }), { code: 404 }, 'nothing was stored');
});

t.test('no secret value in the stored pods, Events or the webhook log', async (t) => {
  const core = fx.kc.makeApiClient(CoreV1Api);
  const pods = JSON.stringify(await core.listNamespacedPod({ namespace: fx.ns }));
  const events = JSON.stringify(await core.listNamespacedEvent({ namespace: fx.ns }));
  t.ok(pods.includes('esi-agent'), 'the scan covers injected pods');
  t.notOk(pods.includes(CANARY), 'stored pods carry no secret value');
  t.notOk(events.includes(CANARY), 'Events carry no secret value');
  t.ok(fx.webhook.output().includes('pod injected'), 'the scan covers the webhook log');
  t.notOk(fx.webhook.output().includes(CANARY), 'the webhook log carries no secret value');
});

/** Paths where `want` is not contained in `got` (objects: every key; arrays: same length). */
function notContained(want: unknown, got: unknown, path = ''): string[] {
  if (Array.isArray(want)) {
    if (!Array.isArray(got) || got.length !== want.length) return [`${path}: array length ${Array.isArray(got) ? got.length : typeof got} != ${want.length}`];
    return want.flatMap((w, i) => notContained(w, got[i], `${path}[${i}]`));
  }
  if (want && typeof want === 'object') {
    if (!got || typeof got !== 'object') return [`${path}: missing`];
    return Object.entries(want).flatMap(([k, v]) => notContained(v, (got as Record<string, unknown>)[k], `${path}.${k}`));
  }
  return want === got ? [] : [`${path}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`];
}

function withoutServiceAccountVolume(pod: V1Pod): V1Pod {
  const p = structuredClone(pod);
  p.spec!.volumes = p.spec!.volumes?.filter((v) => !v.name.startsWith('kube-api-access'));
  for (const c of [...p.spec!.containers, ...(p.spec!.initContainers ?? [])]) c.volumeMounts = c.volumeMounts?.filter((m) => !m.name.startsWith('kube-api-access'));
  return p;
}

t.test('esi inject prints what the webhook stores for the same inputs', async (t) => {
  const { mkdtemp, writeFile } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { parse, stringify } = await import('yaml');
  const { esiProcess, AGENT_IMAGE } = await import('../../support/webhook.js');
  const { CoreV1Api: Core } = await import('@kubernetes/client-node');
  const pod = labelledPod('preview', { 'esi.dev/secrets': 'db,vault-app,shared', 'esi.dev/template-x.conf': '{{db.password}}', 'esi.dev/mode': 'sidecar' });
  const stored = await fx.createPod(pod);
  const nsObj = await fx.kc.makeApiClient(Core).readNamespace({ name: fx.ns });
  const dir = await mkdtemp(join(tmpdir(), 'esi-inject-'));
  const file = join(dir, 'inputs.yaml');
  const input = { ...pod, metadata: { ...pod.metadata, namespace: fx.ns } };
  await writeFile(file, [...fx.manifests, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: fx.ns, labels: nsObj.metadata!.labels } }, input].map((o) => stringify(o)).join('---\n'));
  const p = esiProcess(['inject', '-f', file, '--agent-image', AGENT_IMAGE]);
  t.equal(await new Promise((r) => p.child.on('exit', r)), 0, 'esi inject exits 0');
  const preview = parse(p.output()) as V1Pod;
  t.ok(preview.spec!.initContainers?.length, 'the preview is mutated');
  t.same(notContained(preview, withoutServiceAccountVolume(stored)), [], 'every field of the preview is in the stored pod, with the same value');
  t.same(notContained(withoutServiceAccountVolume(stored).spec!.volumes!.map((v) => v.name), preview.spec!.volumes!.map((v) => v.name)), [], 'and the stored pod has no other volumes');
});
