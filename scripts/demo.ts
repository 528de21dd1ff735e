// `npm run demo`: ESI's main path on an embedded local control plane (a real
// kube-apiserver + etcd): CRDs, example stores and ExternalSecrets, the webhook
// injecting a labelled pod, the agent rendering its files, then the reconciler syncing an
// ExternalSecret into a Secret.
import { AdmissionregistrationV1Api, CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { spawnSync } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installCrds } from '../src/api/crds.js';
import { applyObjects, readManifests } from '../src/kube/apply.js';
import { formatTable, getTable } from '../src/kube/table.js';
import { startControlPlane, type RunningControlPlane } from '../test/support/platform/control-plane-process.js';
import { freePort } from '../test/support/platform/processes.js';
import { startWebhook, waitForCaBundle, webhookConfiguration, type RunningWebhook } from '../test/support/webhook.js';
import { KubeConfig } from '@kubernetes/client-node';
import { prepareLiveStore, runAgentStep } from './demo-agent.js';
import { runControllerStep } from './demo-controller.js';

const root = join(import.meta.dirname, '..');
const step = (s: string) => console.log(`\n\x1b[1m== ${s}\x1b[0m`);

function buildBinaries() {
  const r = spawnSync('bash', [join(root, 'test/platform/build-binaries.sh'), 'all'], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.status !== 0) throw new Error('building kube-apiserver/etcd failed (see the step named above)');
}

async function showPod(pod: V1Pod) {
  const agent = [...(pod.spec!.initContainers ?? []), ...pod.spec!.containers].find((c) => c.name === 'esi-agent')!;
  console.log(`init containers: ${pod.spec!.initContainers!.map((c) => `${c.name}${c.restartPolicy === 'Always' ? ' (native sidecar)' : ''}`).join(', ')}`);
  console.log(`containers:      ${pod.spec!.containers.map((c) => c.name).join(', ')}`);
  console.log(`volumes:         ${pod.spec!.volumes!.map((v) => `${v.name}${v.emptyDir ? ` (emptyDir ${v.emptyDir.medium}, ${v.emptyDir.sizeLimit})` : ''}`).join(', ')}`);
  console.log(`agent security:  runAsUser ${agent.securityContext!.runAsUser}, readOnlyRootFilesystem ${agent.securityContext!.readOnlyRootFilesystem}, capabilities drop ${agent.securityContext!.capabilities!.drop}`);
  console.log(`agent probe:     startupProbe GET ${agent.startupProbe?.httpGet?.path} :${agent.startupProbe?.httpGet?.port}`);
  console.log(`app mount:       ${JSON.stringify(pod.spec!.containers[0]!.volumeMounts!.find((m) => m.name === 'esi-secrets'))}`);
}

async function main() {
  step('Building (or reusing) kube-apiserver and etcd from their Go modules');
  buildBinaries();
  step('Starting the local control plane');
  const cp: RunningControlPlane = await startControlPlane(await mkdtemp(join(tmpdir(), 'esi-demo-')));
  let webhook: RunningWebhook | undefined;
  try {
    console.log(`kube-apiserver ${cp.server} (kubeconfig ${cp.kubeconfigPath})`);
    const kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    step('Installing the external-secrets.io CRDs');
    const crds = await installCrds(kc);
    console.log(`created: ${crds.created.join(', ')}`);
    step('Applying examples/stores.yaml and examples/externalsecrets.yaml');
    for (const f of ['stores.yaml', 'externalsecrets.yaml']) console.log((await applyObjects(kc, await readManifests(join(root, 'examples', f)))).join('\n'));
    await kc.makeApiClient(CoreV1Api).createNamespacedServiceAccount({ namespace: 'demo', body: { metadata: { name: 'default' } } }).catch(() => undefined);
    await prepareLiveStore(kc, cp.server, cp.caPem);
    step('kubectl get secretstores -n demo');
    console.log(formatTable(await getTable(kc, '/apis/external-secrets.io/v1/namespaces/demo/secretstores')));
    step('kubectl get clustersecretstores');
    console.log(formatTable(await getTable(kc, '/apis/external-secrets.io/v1/clustersecretstores')));
    step('kubectl get externalsecrets -n demo');
    console.log(formatTable(await getTable(kc, '/apis/external-secrets.io/v1/namespaces/demo/externalsecrets')));
    step('Starting `esi webhook` and registering it with the apiserver');
    const port = await freePort();
    const config = webhookConfiguration('esi-demo', `https://127.0.0.1:${port}/mutate`, 'demo');
    config.webhooks![0]!.namespaceSelector = { matchLabels: { 'kubernetes.io/metadata.name': 'demo' } };
    await kc.makeApiClient(AdmissionregistrationV1Api).createMutatingWebhookConfiguration({ body: config });
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: 'esi-system' } } });
    webhook = await startWebhook({ kubeconfigPath: cp.kubeconfigPath, namespace: 'esi-system', configName: 'esi-demo', port });
    await waitForCaBundle(kc, 'esi-demo');
    console.log(`webhook serving on https://127.0.0.1:${port}/mutate; CA bootstrapped and patched into the MutatingWebhookConfiguration`);
    await new Promise((r) => setTimeout(r, 500));
    step('Creating a labelled pod through the API (esi.dev/inject=true, two ExternalSecrets, one template)');
    const pod = await kc.makeApiClient(CoreV1Api).createNamespacedPod({ namespace: 'demo', body: {
      metadata: { name: 'demo-app', labels: { 'esi.dev/inject': 'true' }, annotations: {
        'esi.dev/secrets': 'db,app-credentials',
        'esi.dev/template-db.url': 'postgres://{{db.username}}:{{db.password}}@postgres.demo.svc:5432/orders\n',
        'esi.dev/refresh-interval': '10s', 'esi.dev/agent-port': String(await freePort()),
      } },
      spec: { serviceAccountName: 'demo-app', containers: [{ name: 'app', image: 'registry.example/app:1' }] },
    } });
    step('The pod as stored by the apiserver (mutated by ESI)');
    await showPod(pod);
    await runAgentStep({ kc, pod, step });
    await runControllerStep({ kc, kubeconfigPath: cp.kubeconfigPath, step });
  } finally {
    await webhook?.stop();
    await cp.stop();
  }
  step('Done: control plane stopped');
}

main().catch((err: Error) => {
  console.error(`demo failed: ${err.message}`);
  process.exit(1);
});
