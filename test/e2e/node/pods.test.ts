// Injected pods run for real on the test node (kubelet + containerd, test/platform/node/):
// the webhook (a local `esi webhook` process) injects the agent image, the kubelet starts
// the native sidecar first and holds the app until the sidecar's startup probe passes, the
// app's own process reads its files at start, a changed remote value reaches the running
// app and fires its reload hook, an init-only Job completes, and a forbidden store keeps
// the pod in Init with a clear agent log line, a mesh proxy appended after injection
// starts before the agent, and in a Pod Security "restricted" namespace under the platform's
// UID the agent restarts the app by a signal with no capability. No secret value appears in
// any log.
import { AppsV1Api, BatchV1Api, CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { MESH_PROXY, startMeshWebhook } from '../../support/mesh-webhook.js';
import { appContainer, hashOf, jobDone, logOf, nodeWithWebhook, optedIn, podsOf, secretsFixture, until } from '../../support/fixtures/node.js';

// The first node file of a run waits for the node (and, if the sources changed since
// `npm run platform:build`, for the image build): more than tap's default 300 s per file.
t.setTimeout(900_000);
const { cp, node, run: RUN } = await nodeWithWebhook(t);
const kc = cp.kc;
const core = kc.makeApiClient(CoreV1Api);
const CANARY = `node-canary-${randomBytes(4).toString('hex')}`;

const statusOf = (pod: V1Pod, name: string) =>
  [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find((s) => s.name === name);
const ready = (pod: V1Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

t.test('a Deployment with an opted-in pod runs: sidecar first, app gated on the startup probe, files read at start, reload on change', async (t) => {
  const ns = await createNamespace(kc, 'node-app', t, RUN);
  await secretsFixture(kc, ns, cp.caPem, `${CANARY}-1`);
  await kc.makeApiClient(AppsV1Api).createNamespacedDeployment({ namespace: ns, body: {
    metadata: { name: 'web' },
    spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: {
      metadata: optedIn({ 'esi.dev/refresh-interval': '10s', 'esi.dev/on-change': 'http://127.0.0.1:8080/-/reload' }, { app: 'web' }),
      spec: { serviceAccountName: 'app', terminationGracePeriodSeconds: 2, containers: [appContainer(node.esiImage)] },
    } },
  } });
  const pod = await until('the web pod Ready', async () => (await podsOf(kc, ns, 'app=web')).find(ready), 180_000);
  t.equal(pod.spec!.nodeName, node.name, 'scheduled on the test node');
  const sidecar = pod.spec!.initContainers!.find((c) => c.name === 'esi-agent')!;
  t.equal(sidecar.restartPolicy, 'Always', 'the agent is a native sidecar');
  t.ok(sidecar.startupProbe, 'with a startup probe');
  const agent = statusOf(pod, 'esi-agent')!;
  const app = statusOf(pod, 'app')!;
  t.ok(agent.started, 'the sidecar passed its startup probe');
  t.ok(agent.state?.running && app.state?.running, 'both run');
  t.ok(new Date(agent.state!.running!.startedAt!) <= new Date(app.state!.running!.startedAt!), 'the sidecar started before the app');
  const log = await until('the app log', async () => (await logOf(kc, ns, pod.metadata!.name!, 'app')) || undefined);
  t.equal(log.split('\n')[0], `start ${hashOf(`${CANARY}-1`)}`, "the app's own process read the rendered file when it started");
  t.equal(log.split('\n')[1], 'mount EROFS', 'the secrets volume is mounted read-only in the app container');
  const agentSpec = pod.spec!.initContainers!.find((c) => c.name === 'esi-agent')!;
  t.match(agentSpec.securityContext, { runAsNonRoot: true, readOnlyRootFilesystem: true }, 'the agent runs (it started) under runAsNonRoot and a read-only root filesystem, which the kubelet enforces');

  await core.replaceNamespacedSecret({ namespace: ns, name: 'db', body: { metadata: { name: 'db' }, stringData: { username: 'orders', password: `${CANARY}-2` } } });
  const reloaded = await until('the reload hook', async () => {
    const l = await logOf(kc, ns, pod.metadata!.name!, 'app');
    return l.includes(`reload ${hashOf(`${CANARY}-2`)}`) ? l : undefined;
  }, 90_000);
  t.ok(reloaded, 'the changed remote value reached the running app, and the agent called its reload hook');
  const agentLog = await logOf(kc, ns, pod.metadata!.name!, 'esi-agent');
  t.notOk(`${reloaded}${agentLog}`.includes(CANARY), 'no secret value in the app or agent log');
  await kc.makeApiClient(AppsV1Api).deleteNamespacedDeployment({ namespace: ns, name: 'web', body: { propagationPolicy: 'Foreground' } });
});

t.test('a Job with an init-only agent completes', async (t) => {
  const ns = await createNamespace(kc, 'node-job', t, RUN);
  await secretsFixture(kc, ns, cp.caPem, `${CANARY}-job`);
  const batch = kc.makeApiClient(BatchV1Api);
  await batch.createNamespacedJob({ namespace: ns, body: {
    metadata: { name: 'once' },
    spec: { backoffLimit: 0, template: {
      metadata: optedIn({ 'esi.dev/mode': 'init-only' }, { app: 'once' }),
      spec: { serviceAccountName: 'app', restartPolicy: 'Never', containers: [appContainer(node.esiImage, true)] },
    } },
  } });
  const job = await jobDone(kc, ns, 'once');
  t.equal(job.status!.succeeded, 1, 'the Job completed');
  const [pod] = await podsOf(kc, ns, 'app=once');
  t.equal(pod!.spec!.initContainers!.find((c) => c.name === 'esi-agent')?.restartPolicy, undefined, 'the agent is a classic init container');
  t.equal((await logOf(kc, ns, pod!.metadata!.name!, 'app')).split('\n')[0], `start ${hashOf(`${CANARY}-job`)}`);
});

t.test('a pod whose store is forbidden stays in Init and the agent says why', async (t) => {
  const ns = await createNamespace(kc, 'node-denied', t, RUN);
  await secretsFixture(kc, ns, cp.caPem, `${CANARY}-denied`, { forbidden: true });
  await core.createNamespacedPod({ namespace: ns, body: {
    metadata: { name: 'denied', ...optedIn() },
    spec: { serviceAccountName: 'app', terminationGracePeriodSeconds: 1, containers: [appContainer(node.esiImage)] },
  } });
  const line = await until('the agent log line', async () => {
    const log = await logOf(kc, ns, 'denied', 'esi-agent');
    return log.split('\n').find((l) => /[Ff]orbidden/.test(l));
  }, 120_000);
  t.match(line, /db/, 'the line names the ExternalSecret');
  t.notOk(line.includes(CANARY));
  const pod = await core.readNamespacedPod({ namespace: ns, name: 'denied' });
  t.equal(pod.status!.phase, 'Pending', 'the pod is still initialising');
  t.notOk(statusOf(pod, 'esi-agent')?.started, 'the sidecar never passed its startup probe');
  t.notOk(statusOf(pod, 'app')?.state?.running, 'the app never started');
  await core.deleteNamespacedPod({ namespace: ns, name: 'denied', body: { gracePeriodSeconds: 0 } });
});

t.test('a mesh proxy appended after injection starts before the agent, which still reaches its store', async (t) => {
  // A stand-in proxy that only runs: what matters is the order the kubelet starts them in
  // (the agent must start behind the mesh's proxy). Like istio-proxy it has a
  // user of its own, so the kubelet leaves the agent's token owned by root.
  await startMeshWebhook(kc, RUN['esi-test-run']!, t, {
    namespaceLabels: { 'esi-test-mesh': 'true' },
    proxy: { image: node.esiImage, imagePullPolicy: 'Never', command: ['/nodejs/bin/node', '-e', 'setInterval(() => {}, 1 << 30)'], securityContext: { runAsUser: 1337, runAsNonRoot: true } },
  });
  const ns = await createNamespace(kc, 'node-mesh', t, { ...RUN, 'esi-test-mesh': 'true' });
  await secretsFixture(kc, ns, cp.caPem, `${CANARY}-mesh`);
  await core.createNamespacedPod({ namespace: ns, body: {
    metadata: { name: 'meshed', ...optedIn() },
    spec: { serviceAccountName: 'app', terminationGracePeriodSeconds: 1, containers: [appContainer(node.esiImage)] },
  } });
  let last: V1Pod | undefined;
  const pod = await until('the meshed pod Ready', async () => {
    last = await core.readNamespacedPod({ namespace: ns, name: 'meshed' });
    return ready(last) ? last : undefined;
  }, 180_000).catch(async (err: Error) => {
    const agentLog = (await logOf(kc, ns, 'meshed', 'esi-agent')).split('\n').slice(-5).join('\n');
    throw new Error(`${err.message}; statuses: ${JSON.stringify([...(last?.status?.initContainerStatuses ?? []), ...(last?.status?.containerStatuses ?? [])])}; agent log tail: ${agentLog}`);
  });
  t.same(pod.spec!.initContainers!.map((c) => c.name), [MESH_PROXY, 'esi-agent'], 'the agent was moved after the proxy');
  const started = (name: string) => new Date(statusOf(pod, name)!.state!.running!.startedAt!);
  t.ok(started(MESH_PROXY) <= started('esi-agent') && started('esi-agent') <= started('app'), 'the proxy started first, then the agent, then the app');
  const log = await until('the app log', async () => (await logOf(kc, ns, 'meshed', 'app')) || undefined);
  t.equal(log.split('\n')[0], `start ${hashOf(`${CANARY}-mesh`)}`, 'the agent fetched from its store and the app read the file at start');
  t.notOk((await logOf(kc, ns, 'meshed', 'esi-agent')).includes(CANARY), 'no secret value in the agent log');
  await core.deleteNamespacedPod({ namespace: ns, name: 'meshed', body: { gracePeriodSeconds: 0 } });
});

t.test('restricted and under the platform\'s UID: admitted by Pod Security "restricted", the agent signals the app without a capability, and the restarted app reads the new value', async (t) => {
  // An OpenShift-like namespace: its UID range makes the webhook leave the agent's user to the
  // pod (webhook/namespace-policy.ts), and Pod Security "restricted" is enforced.
  const ns = await createNamespace(kc, 'node-restricted', t, { ...RUN, 'pod-security.kubernetes.io/enforce': 'restricted' }, { 'openshift.io/sa.scc.uid-range': '1000770000/10000' });
  await secretsFixture(kc, ns, cp.caPem, `${CANARY}-r1`);
  const app = appContainer(node.esiImage);
  delete app.securityContext!.runAsUser; // the pod's user, as a platform assigns it
  const body: V1Pod = {
    metadata: { name: 'uid', ...optedIn({ 'esi.dev/refresh-interval': '10s', 'esi.dev/on-change': 'signal:SIGTERM:node' }) },
    spec: {
      serviceAccountName: 'app', terminationGracePeriodSeconds: 1, shareProcessNamespace: true,
      securityContext: { runAsUser: 1000770000, runAsGroup: 1000770000, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [app],
    },
  };
  // The webhook learns the namespace from its watch: until then it would inject the default
  // user, which needs KILL, which Pod Security refuses; so retry the creation briefly.
  await until('the pod admitted', async () => core.createNamespacedPod({ namespace: ns, body }).then(() => true, () => undefined), 30_000);
  const pod = await until('the pod Ready', async () => {
    const p = await core.readNamespacedPod({ namespace: ns, name: 'uid' });
    return ready(p) ? p : undefined;
  }, 180_000);
  const agentSpec = pod.spec!.initContainers!.find((c) => c.name === 'esi-agent')!;
  t.equal(agentSpec.securityContext?.runAsUser, undefined, "the agent runs as the pod's user");
  t.same(agentSpec.securityContext?.capabilities, { drop: ['ALL'] }, 'and has no capability');
  const first = await until('the app log', async () => (await logOf(kc, ns, 'uid', 'app')) || undefined);
  t.equal(first.split('\n')[0], `start ${hashOf(`${CANARY}-r1`)}`, 'the app read its file at start');

  await core.replaceNamespacedSecret({ namespace: ns, name: 'db', body: { metadata: { name: 'db' }, stringData: { username: 'orders', password: `${CANARY}-r2` } } });
  const restarted = await until('the app restarted with the new value', async () => {
    const p = await core.readNamespacedPod({ namespace: ns, name: 'uid' });
    const restarts = statusOf(p, 'app')?.restartCount ?? 0;
    const log = restarts > 0 ? await logOf(kc, ns, 'uid', 'app') : '';
    return log.split('\n')[0] === `start ${hashOf(`${CANARY}-r2`)}` ? restarts : undefined;
  }, 120_000);
  t.ok(restarted >= 1, `the agent's SIGTERM ended the app's process; the kubelet restarted it (${restarted} restart(s)) and it read the new value`);
  const agentLog = await logOf(kc, ns, 'uid', 'esi-agent');
  t.match(agentLog, /application notified of changed files/);
  t.notOk(agentLog.includes(CANARY), 'no value in the agent log');
  await core.deleteNamespacedPod({ namespace: ns, name: 'uid', body: { gracePeriodSeconds: 0 } });
});
