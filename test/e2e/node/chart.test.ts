// The Helm chart installed on the test node with the webhook running as real pods (the
// esi.local/esi:node image, never pulled): the pods bootstrap their certificate and publish
// the caBundle, the apiserver then admits an opted-in pod through them (it runs, with its
// files), and deleting one of the 2 webhook replicas while pods are being created loses no
// pod creation (preStop sleep + endpoint removal).
//
// The MutatingWebhookConfiguration is scoped (webhook.namespaceSelectorExpressions) to
// namespaces labelled for this run, so it never intercepts other tests' pods.
import { AdmissionregistrationV1Api, AppsV1Api, CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { installCrds } from '../../../src/api/crds.js';
import { CHART, findHelm, Helm } from '../../support/helm.js';
import { createNamespace } from '../../support/kube.js';
import { useNode } from '../../support/platform/node/useNode.js';
import { appContainer, hashOf, logOf, optedIn, podsOf, secretsFixture, until } from '../../support/fixtures/node.js';

const found = await findHelm();
if (!found.path) throw new Error(`helm is needed: ${found.reason}`);
const helm = new Helm(found.path);
// The first node file of a run waits for the node (and, if the sources changed since
// `npm run platform:build`, for the image build): more than tap's default 300 s per file.
t.setTimeout(900_000);
const { cp, node } = await useNode(t);
const kc = cp.kc;
const core = kc.makeApiClient(CoreV1Api);
await installCrds(kc);
const runId = randomBytes(3).toString('hex');
const release = `esi-node-${runId}`;
const ns = await createNamespace(kc, 'esi-node-chart', t, { 'esi-test-run': runId });
const appNs = await createNamespace(kc, 'esi-node-chart-app', t, { 'esi-test-run': runId });
const [repository, tag] = node.esiImage.split(':') as [string, string];
const helmArgs = ['--namespace', ns, '--kubeconfig', cp.kubeconfigPath,
  '--set', `image.repository=${repository},image.tag=${tag},image.pullPolicy=Never,agent.image.pullPolicy=Never`,
  '--set-json', `webhook.namespaceSelectorExpressions=[{"key":"esi-test-run","operator":"In","values":["${runId}"]}]`];
const CANARY = `chart-canary-${randomBytes(4).toString('hex')}`;
let installed = false;
t.teardown(async () => {
  if (installed) await helm.run(['uninstall', release, '--namespace', ns, '--kubeconfig', cp.kubeconfigPath, '--wait', '--timeout', '60s']);
});

const ready = (pod: V1Pod) => !pod.metadata?.deletionTimestamp && (pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false);
let selector = '';
const webhookPods = async () => (await podsOf(kc, ns, selector)).filter(ready);

t.test('helm install: 2 webhook pods run on the node, bootstrap their certificate and publish the caBundle', async (t) => {
  const r = await helm.run(['install', release, CHART, ...helmArgs], 180_000);
  t.equal(r.code, 0, r.code === 0 ? 'helm install succeeded' : `helm install failed: ${r.stdout}${r.stderr}`);
  installed = r.code === 0;
  const deployments = await kc.makeApiClient(AppsV1Api).listNamespacedDeployment({ namespace: ns });
  const labels = deployments.items[0]!.spec!.selector.matchLabels!;
  selector = Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(',');
  const pods = await until('2 Ready webhook pods', async () => {
    const p = await webhookPods();
    return p.length === 2 ? p : undefined;
  }, 180_000);
  t.same(pods.map((p) => p.spec!.nodeName), [node.name, node.name], 'both on the test node');
  t.ok(pods.every((p) => p.status!.containerStatuses![0]!.image!.includes(repository)), 'from the local image');
  const mwc = await until('the caBundle', async () => {
    const c = await kc.makeApiClient(AdmissionregistrationV1Api).readMutatingWebhookConfiguration({ name: release });
    return c.webhooks?.[0]?.clientConfig.caBundle ? c : undefined;
  });
  t.match(Buffer.from(mwc.webhooks![0]!.clientConfig.caBundle!, 'base64').toString(), /BEGIN CERTIFICATE/, 'a PEM CA published by the webhook pods');
});

t.test('the apiserver admits an opted-in pod through the webhook pods, and it runs with its files', async (t) => {
  await secretsFixture(kc, appNs, cp.caPem, CANARY);
  const pod = await until('admission through the webhook Service', () => core.createNamespacedPod({ namespace: appNs, body: {
    metadata: { name: 'app', ...optedIn() },
    spec: { serviceAccountName: 'app', terminationGracePeriodSeconds: 1, containers: [appContainer(node.esiImage)] },
  } }), 60_000);
  t.ok(pod.spec!.initContainers!.some((c) => c.name === 'esi-agent' && c.image === node.esiImage), 'injected by the chart-installed webhook');
  await until('the app pod Ready', async () => ready(await core.readNamespacedPod({ namespace: appNs, name: 'app' })), 180_000);
  t.equal((await logOf(kc, appNs, 'app', 'app')).split('\n')[0], `start ${hashOf(CANARY)}`);
  await core.deleteNamespacedPod({ namespace: appNs, name: 'app', body: { gracePeriodSeconds: 0 } });
});

t.test('deleting a webhook pod while pods are being created loses no pod creation', async (t) => {
  const [victim] = await webhookPods();
  const created: string[] = [];
  const failures: string[] = [];
  // Pods that never run (no node matches): only their admission matters here.
  const createOne = async (i: number) => {
    try {
      const pod = await core.createNamespacedPod({ namespace: appNs, body: {
        metadata: { name: `burst-${i}`, ...optedIn() },
        spec: { serviceAccountName: 'app', nodeSelector: { 'esi.dev/test-no-such-node': 'true' }, containers: [appContainer(node.esiImage)] },
      } });
      if (pod.spec!.initContainers?.some((c) => c.name === 'esi-agent')) created.push(pod.metadata!.name!);
      else failures.push(`burst-${i}: admitted without injection`);
    } catch (err) {
      failures.push(`burst-${i}: ${(err as { body?: string }).body ?? (err as Error).message}`);
    }
  };
  const N = 30;
  let next = 0;
  const worker = async () => {
    while (next < N) {
      const i = next++;
      if (i === 8) void core.deleteNamespacedPod({ namespace: ns, name: victim!.metadata!.name! });
      await createOne(i);
      await new Promise((r) => setTimeout(r, 150));
    }
  };
  await Promise.all([worker(), worker()]);
  t.same(failures, [], 'every creation was admitted and injected');
  t.equal(created.length, N);
  const replaced = await until('the Deployment back to 2 Ready pods', async () => {
    const p = await webhookPods();
    return p.length === 2 && !p.some((x) => x.metadata!.name === victim!.metadata!.name) ? p : undefined;
  }, 180_000);
  t.equal(replaced.length, 2, 'the ReplicaSet replaced the deleted pod');
  await core.deleteCollectionNamespacedPod({ namespace: appNs, gracePeriodSeconds: 0 });
});
