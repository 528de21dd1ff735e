// Fleet control on the test node (docs/fleet.md): a running injected pod refreshing once an
// hour receives a changed Kubernetes-provider value within the test's wait through the
// channel (the controller's change generation, projected by the kubelet into the agent's
// downwardAPI file), and the agent of a crash-looping init-only pod keeps counting its
// failures across container restarts instead of starting its backoff over. No value in any
// log or annotation.
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { startController } from '../../support/fixtures/controller.js';
import { appContainer, hashOf, logOf, nodeWithWebhook, optedIn, secretsFixture, until } from '../../support/fixtures/node.js';

t.setTimeout(900_000);
const { cp, node, run: RUN } = await nodeWithWebhook(t);
const kc = cp.kc;
const core = kc.makeApiClient(CoreV1Api);
const CANARY = `node-fleet-${randomBytes(4).toString('hex')}`;
const cls = `node-fleet-${randomBytes(3).toString('hex')}`;

t.test('a changed Kubernetes-provider value reaches a pod refreshing hourly, through the channel', async (t) => {
  const ns = await createNamespace(kc, 'node-fleet', t, RUN);
  await secretsFixture(kc, ns, cp.caPem, `${CANARY}-1`);
  // The fixture's store: watched for changes (the controller's own identity, metadata only).
  await kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural: 'secretstores', name: 'cluster',
    body: { metadata: { annotations: { 'esi.dev/change-notifications': 'true' } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
  const ctl = await startController(cp.kubeconfigPath, ['--controller-class', cls, '--claim-unclassed=false', '--leader-elect=false', '--change-notifications=true'], t);
  await core.createNamespacedPod({ namespace: ns, body: {
    metadata: { name: 'web', ...optedIn({ 'esi.dev/refresh-interval': '1h', 'esi.dev/on-change': 'http://127.0.0.1:8080/-/reload' }) },
    spec: { serviceAccountName: 'app', terminationGracePeriodSeconds: 1, containers: [appContainer(node.esiImage)] },
  } });
  await until('the app started with the first value', async () => (await logOf(kc, ns, 'web', 'app')).startsWith(`start ${hashOf(`${CANARY}-1`)}`) || undefined, 240_000);
  const gen = await until('the first change generation', async () => (await core.readNamespacedPod({ namespace: ns, name: 'web' })).metadata?.annotations?.['esi.dev/change-generation'], 60_000);
  await core.replaceNamespacedSecret({ namespace: ns, name: 'db', body: { metadata: { name: 'db' }, stringData: { username: 'orders', password: `${CANARY}-2` } } });
  // An hourly refresh cannot explain the new value within this wait: only the channel can.
  const log = await until('the reload with the new value', async () => {
    const l = await logOf(kc, ns, 'web', 'app');
    return l.includes(`reload ${hashOf(`${CANARY}-2`)}`) ? l : undefined;
  }, 60_000);
  const pod = await core.readNamespacedPod({ namespace: ns, name: 'web' });
  t.not(pod.metadata?.annotations?.['esi.dev/change-generation'], gen, 'the controller wrote a new generation');
  t.ok(pod.spec?.volumes?.some((v) => v.name === 'esi-channel' && v.downwardAPI), 'the webhook mounted the channel');
  const agentLog = await logOf(kc, ns, 'web', 'esi-agent');
  t.match(agentLog, /a source changed \(change generation\); fetching now/);
  t.notOk(`${log}${agentLog}${ctl.output()}${JSON.stringify(pod.metadata?.annotations)}`.includes(CANARY), 'no value in logs or annotations');
  await ctl.stop();
});

t.test("a crash-looping init-only agent keeps its backoff across restarts", async (t) => {
  const ns = await createNamespace(kc, 'node-crashloop', t, RUN);
  await secretsFixture(kc, ns, cp.caPem, `${CANARY}-loop`, { forbidden: true });
  await core.createNamespacedPod({ namespace: ns, body: {
    metadata: { name: 'loop', ...optedIn({ 'esi.dev/mode': 'init-only' }) },
    spec: { serviceAccountName: 'app', terminationGracePeriodSeconds: 1, containers: [appContainer(node.esiImage, true)] },
  } });
  // Each start of the container logs the failures it resumes from: a fresh backoff would say 1 every time.
  const line = await until('a restart resuming two failures', async () => {
    const l = await core.readNamespacedPodLog({ namespace: ns, name: 'loop', container: 'esi-agent' }).catch(() => '');
    return l.split('\n').find((x) => /resuming the backoff/.test(x) && /"failures":([2-9]|\d\d)/.test(x));
  }, 240_000);
  t.ok(line, 'the restarted agent counted on from the failures of its previous starts');
  const st = (await core.readNamespacedPod({ namespace: ns, name: 'loop' })).status?.initContainerStatuses?.find((s) => s.name === 'esi-agent');
  t.ok((st?.restartCount ?? 0) >= 2, 'the kubelet restarted the agent container');
  t.notOk(line!.includes(CANARY));
});
