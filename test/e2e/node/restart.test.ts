// Restart on change, end to end on the test node (kubelet + containerd, with the control
// plane's Deployment and ReplicaSet controllers): the reconciler writes an ExternalSecret's
// Secret, a Deployment that opted in with esi.dev/restart-on-secret-change reads it as an
// environment variable, and a changed remote value gives a new pod whose own process has the
// new value (docs/controller.md, "Restart on change"). No value appears in any log.
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type V1Pod } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { installCrds } from '../../../src/api/crds.js';
import { createNamespace } from '../../support/kube.js';
import { useNode } from '../../support/platform/node/useNode.js';
import { create, externalSecret, fakeStore, patchSpec, ready as esReady, startController, type Env } from '../../support/fixtures/controller.js';
import { hashOf, logOf, podsOf, until } from '../../support/fixtures/node.js';

// The first node file of a run waits for the node and the image build (see pods.test.ts).
t.setTimeout(900_000);
const { cp, node } = await useNode(t);
const kc = cp.kc;
await installCrds(kc);
const env: Env = { cp, kc, core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi), cls: `node-${randomBytes(3).toString('hex')}` };
const CANARY = `node-restart-${randomBytes(4).toString('hex')}`;
const ready = (pod: V1Pod) => !pod.metadata?.deletionTimestamp && (pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false);

t.test('a changed remote value restarts the opted-in Deployment, whose new pod has the new value in its environment', async (t) => {
  const ns = await createNamespace(kc, 'node-restart', t);
  await create(env, ns, 'secretstores', fakeStore('fake', env.cls, [{ key: 'db', value: `${CANARY}-1` }]));
  const ctl = await startController(cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '1s'], t);
  await create(env, ns, 'externalsecrets', externalSecret('db', 'fake', { refreshInterval: '2s', data: [{ secretKey: 'password', remoteRef: { key: 'db' } }] }));
  await esReady(env, ns, 'db', 'True');
  // The app prints a hash of its PASSWORD variable when its process starts, then idles.
  const script = "console.log('start ' + require('crypto').createHash('sha256').update(process.env.PASSWORD || '').digest('hex').slice(0, 16)); setInterval(() => {}, 1 << 30);";
  await kc.makeApiClient(AppsV1Api).createNamespacedDeployment({ namespace: ns, body: {
    metadata: { name: 'web', annotations: { 'esi.dev/restart-on-secret-change': 'true' } },
    spec: { replicas: 1, selector: { matchLabels: { app: 'web' } }, template: {
      metadata: { labels: { app: 'web' } },
      spec: { terminationGracePeriodSeconds: 1, containers: [{
        name: 'app', image: node.esiImage, imagePullPolicy: 'Never', command: ['/nodejs/bin/node', '-e', script],
        env: [{ name: 'PASSWORD', valueFrom: { secretKeyRef: { name: 'db', key: 'password' } } }],
        securityContext: { runAsNonRoot: true, runAsUser: 65532, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
      }] },
    } },
  } });
  const first = await until('the first pod Ready', async () => (await podsOf(kc, ns, 'app=web')).find(ready), 180_000);
  t.equal(first.spec!.nodeName, node.name);
  t.equal((await until('its log', async () => (await logOf(kc, ns, first.metadata!.name!, 'app')) || undefined)).split('\n')[0], `start ${hashOf(`${CANARY}-1`)}`);

  await patchSpec(env, ns, 'secretstores', 'fake', (o) => {
    (o.spec as { provider: { fake: { data: { key: string; value: string }[] } } }).provider.fake.data[0]!.value = `${CANARY}-2`;
  });
  const next = await until('a new pod with the new value', async () => {
    const pods = (await podsOf(kc, ns, 'app=web')).filter((p) => p.metadata!.name !== first.metadata!.name && ready(p));
    for (const p of pods) if ((await logOf(kc, ns, p.metadata!.name!, 'app')).startsWith(`start ${hashOf(`${CANARY}-2`)}`)) return p;
    return undefined;
  }, 180_000);
  t.match(next.metadata!.annotations?.['esi.dev/restartedAt'], /^\d{4}-\d\d-\d\dT/, 'the new pod comes from the restarted template');
  const events = await env.core.listNamespacedEvent({ namespace: ns });
  t.ok(events.items.some((e) => e.reason === 'Restarted' && e.involvedObject.name === 'db' && /web/.test(e.message ?? '')), 'a Restarted Event on the ExternalSecret names the Deployment');
  t.notOk(`${ctl.output()}${JSON.stringify(events.items)}`.includes(CANARY), 'no value in the controller log or Events');
  await ctl.stop();
});
