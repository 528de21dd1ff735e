// esi.dev/env on a real node (kubelet + containerd, Kubernetes 1.35, test/platform/node/):
// the app's own process prints a hash of its environment variable, which the kubelet set
// from the agent's env file through fileKeyRef; after the remote value changes and the app
// restarts (its reload hook makes it exit), the new process gets the new value; an init-only
// Job gets its variable with no files at all. The value (multi-line, shell characters) is
// in no Secret but the store's own, in no ConfigMap, pod or Event, and in no log.
import { AppsV1Api, BatchV1Api, CoreV1Api, type V1Container } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { hashOf, jobDone, logOf, nodeWithWebhook, optedIn, podsOf, secretsFixture, until } from '../../support/fixtures/node.js';

t.setTimeout(900_000);
const { cp, node, run: RUN, webhook } = await nodeWithWebhook(t);
const kc = cp.kc;
const core = kc.makeApiClient(CoreV1Api);
const CANARY = `env-canary-${randomBytes(4).toString('hex')}`;
/** A value that needs the env-file format's quoting: spaces, shell characters, a newline. */
const valueOf = (n: number) => `${CANARY}-${n} $HOME \`id\` "dq" # not a comment\nsecond line`;

/** Prints `env <hash>` of $DB_PASSWORD and whether the env volume is visible, then (unless
 *  `once`) exits on POST /-/reload so the kubelet restarts it. */
function envApp(image: string, once = false): V1Container {
  const script = [
    "const fs = require('fs'), crypto = require('crypto'), http = require('http');",
    "const v = process.env.DB_PASSWORD;",
    "console.log('env ' + (v === undefined ? 'unset' : crypto.createHash('sha256').update(v).digest('hex').slice(0, 16)));",
    "console.log('env-volume ' + (fs.existsSync('/var/run/esi/env') ? 'visible' : 'absent'));",
    once ? '' : "http.createServer((q, s) => { s.end('ok'); if (q.method === 'POST' && q.url === '/-/reload') { console.log('reload: exiting'); setTimeout(() => process.exit(1), 100); } }).listen(8080, '127.0.0.1');",
  ].join('\n');
  return {
    name: 'app', image, imagePullPolicy: 'Never', command: ['/nodejs/bin/node', '-e', script],
    securityContext: { runAsNonRoot: true, runAsUser: 65532, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
  };
}

/** Where the value is stored in the cluster, listed through the API. */
async function holders(value: string): Promise<{ secrets: string[]; configMaps: string[]; pods: string[]; events: number }> {
  const inData = (data: Record<string, string> | undefined) => Object.values(data ?? {}).some((v) => Buffer.from(v, 'base64').toString('utf8').includes(value));
  const secrets = (await core.listSecretForAllNamespaces()).items.filter((s) => inData(s.data)).map((s) => `${s.metadata!.namespace}/${s.metadata!.name}`);
  const configMaps = (await core.listConfigMapForAllNamespaces()).items.filter((c) => JSON.stringify(c).includes(value)).map((c) => `${c.metadata!.namespace}/${c.metadata!.name}`);
  const pods = (await core.listPodForAllNamespaces()).items.filter((p) => JSON.stringify(p).includes(value)).map((p) => `${p.metadata!.namespace}/${p.metadata!.name}`);
  const events = (await core.listEventForAllNamespaces()).items.filter((e) => JSON.stringify(e).includes(value)).length;
  return { secrets, configMaps, pods, events };
}

t.test('a Deployment gets the variable from the env file, and the restarted app the refreshed value', async (t) => {
  const ns = await createNamespace(kc, 'node-env', t, RUN);
  await secretsFixture(kc, ns, cp.caPem, valueOf(1));
  await kc.makeApiClient(AppsV1Api).createNamespacedDeployment({ namespace: ns, body: {
    metadata: { name: 'web' },
    spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: {
      metadata: optedIn({ 'esi.dev/env': 'db:DB_PASSWORD=password', 'esi.dev/refresh-interval': '10s', 'esi.dev/on-change': 'http://127.0.0.1:8080/-/reload' }, { app: 'web' }),
      spec: { serviceAccountName: 'app', terminationGracePeriodSeconds: 2, containers: [envApp(node.esiImage)] },
    } },
  } });
  const log = await until('the app log', async () => {
    const pod = (await podsOf(kc, ns, 'app=web'))[0];
    return pod ? (await logOf(kc, ns, pod.metadata!.name!, 'app')) || undefined : undefined;
  }, 180_000);
  const [pod] = await podsOf(kc, ns, 'app=web');
  const name = pod!.metadata!.name!;
  t.same(log.split('\n').slice(0, 2), [`env ${hashOf(valueOf(1))}`, 'env-volume absent'],
    "the app's own process has the value (multi-line, shell characters intact) and does not see the env volume");
  const app = pod!.spec!.containers.find((c) => c.name === 'app')!;
  t.same(app.env, [{ name: 'DB_PASSWORD', valueFrom: { fileKeyRef: { volumeName: 'esi-env', path: 'esi.env', key: 'DB_PASSWORD', optional: false } } }]);

  await core.replaceNamespacedSecret({ namespace: ns, name: 'db', body: { metadata: { name: 'db' }, stringData: { username: 'orders', password: valueOf(2) } } });
  const restarted = await until('the restarted app with the new value', async () => {
    const l = await logOf(kc, ns, name, 'app');
    return l.startsWith(`env ${hashOf(valueOf(2))}`) ? l : undefined;
  }, 150_000);
  t.ok(restarted, 'after the refresh the reload hook made the app exit; the kubelet restarted it and read the current env file');
  // The kubelet reports the restart in the pod's status a moment after the new process logs.
  const restarts = await until('the restart in the pod status', async () => {
    const now = await core.readNamespacedPod({ namespace: ns, name });
    const n = now.status?.containerStatuses?.find((s) => s.name === 'app')?.restartCount ?? 0;
    return n >= 1 ? n : undefined;
  }, 30_000);
  t.ok(restarts >= 1, 'the same pod, its app container restarted');

  const where = await holders(CANARY);
  t.same(where, { secrets: [`${ns}/db`], configMaps: [], pods: [], events: 0 },
    'the value is only in the store this test reads from (the Secret db): no Secret, ConfigMap, pod or Event of ESI holds it');
  const logs = `${restarted}${await logOf(kc, ns, name, 'esi-agent')}${webhook.output()}`;
  t.notOk(logs.includes(CANARY), 'no value in the app, agent or webhook log');
  await kc.makeApiClient(AppsV1Api).deleteNamespacedDeployment({ namespace: ns, name: 'web', body: { propagationPolicy: 'Foreground' } });
});

t.test('an init-only Job gets its variable with no files at all', async (t) => {
  const ns = await createNamespace(kc, 'node-env-job', t, RUN);
  await secretsFixture(kc, ns, cp.caPem, valueOf(3));
  const batch = kc.makeApiClient(BatchV1Api);
  const metadata = optedIn({ 'esi.dev/mode': 'init-only', 'esi.dev/env': 'db:DB_PASSWORD=password' }, { app: 'once' });
  delete (metadata.annotations as Record<string, string>)['esi.dev/secrets'];
  await batch.createNamespacedJob({ namespace: ns, body: {
    metadata: { name: 'once' },
    spec: { backoffLimit: 0, template: { metadata, spec: { serviceAccountName: 'app', restartPolicy: 'Never', containers: [envApp(node.esiImage, true)] } } },
  } });
  const job = await jobDone(kc, ns, 'once');
  t.equal(job.status!.succeeded, 1, 'the Job completed');
  const [pod] = await podsOf(kc, ns, 'app=once');
  t.equal((await logOf(kc, ns, pod!.metadata!.name!, 'app')).split('\n')[0], `env ${hashOf(valueOf(3))}`);
});
