// ExternalSecrets that only the webhook's agents serve (docs/controller.md, "ExternalSecrets
// served by the webhook"): their store authenticates with the pod's own identity
// (the controller refuses to lend its own), or they belong to no controller running here. The
// controller reads the injected pods (label esi.dev/inject) and writes what their agents say
// into the ExternalSecret's Ready condition, so `kubectl get es` shows it. The tenant creates
// every ExternalSecret, store and pod (test/support/tenant.ts); the admin plays the kubelet and
// writes the pods' status (there is no node). An ExternalSecret the controller syncs itself,
// or whose status another reconciler wrote, keeps its status.
import t from 'tap';
import { CoreV1Api, CustomObjectsApi, KubeConfig, type V1ContainerStatus, type V1Pod } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installCrds } from '../../../src/api/crds.js';
import type { ExternalSecret } from '../../../src/api/types.js';
import { getTable } from '../../../src/kube/table.js';
import { createTenant } from '../../support/tenant.js';
import { startControlPlane } from '../../support/platform/control-plane-process.js';
import { fakeStore, GROUP, ready, startController, until, type Env } from '../../support/fixtures/controller.js';

const CANARY = 'ctl-webhook-served-canary-8d3f';
// A control plane of its own: every controller writes the pod-derived status of another class's
// ExternalSecret, with its own "why", so the other test files' controllers on the
// shared plane rewrote these ("this controller does not serve its store's class"
// over this one's message, and a third status write in the bounded-writes count).
const cp = await startControlPlane(await mkdtemp(join(tmpdir(), 'esi-webhook-served-')));
t.teardown(() => cp.stop());
const kc = new KubeConfig();
kc.loadFromFile(cp.kubeconfigPath);
await installCrds(kc);
const env: Env = { cp: { ...cp, kc }, kc, core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi), cls: `t-${randomBytes(3).toString('hex')}` };
const tenant = await createTenant(env.kc, 'ctl-wh', t);
const ns = tenant.namespace;
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false'], t);

const create = (plural: string, body: object) =>
  tenant.custom.createNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural, body: { apiVersion: `${GROUP}/v1`, ...body } });
const es = (name: string, store: string) => ({ kind: 'ExternalSecret', metadata: { name }, spec: { secretStoreRef: { name: store, kind: 'SecretStore' }, refreshInterval: '1h', data: [{ secretKey: 'v', remoteRef: { key: 'k' } }] } });
// A store that authenticates with the workload's own token: the agent uses the pod's, the
// controller lends none of its own (src/stores/access.ts controllerIdentityProblem).
const podIdentityStore = (name: string, cls: string) => ({ kind: 'SecretStore', metadata: { name }, spec: { controller: cls, provider: { azurekv: { vaultUrl: 'https://wh.vault.azure.net', authType: 'WorkloadIdentity', tenantId: 'tenant-id' } } } });

type Mode = 'native-sidecar' | 'init-only' | 'sidecar';
const image = 'registry.example/esi:test';

/** A pod as the webhook leaves it (webhook/mutate.ts): label, annotations, agent containers. */
function injected(name: string, secrets: string, mode: Mode): V1Pod {
  const agent = { name: 'esi-agent', image, ...(mode === 'native-sidecar' ? { restartPolicy: 'Always' } : {}) };
  return {
    metadata: { name, labels: { 'esi.dev/inject': 'true' }, annotations: { 'esi.dev/secrets': secrets, 'esi.dev/mode': mode, 'esi.dev/injected': mode } },
    spec: {
      initContainers: [mode === 'sidecar' ? { name: 'esi-agent-init', image } : agent],
      containers: [{ name: 'app', image: 'registry.example/app:1' }, ...(mode === 'sidecar' ? [agent] : [])],
    },
  };
}

const status = (name: string, s: Partial<V1ContainerStatus>): V1ContainerStatus =>
  ({ name, image, imageID: '', ready: false, restartCount: 0, ...s });
const running = { running: { startedAt: new Date() } };
/** What the agent writes when it fails (src/agent-config/termination.ts), as the kubelet reports it. */
const failedAgent = (secret: string) => ({
  terminated: { exitCode: 1, reason: 'Error', message: JSON.stringify({ esiAgent: 1, stage: 'fetch', failures: [{ externalSecret: secret, store: 'SecretStore/wh', code: 'AuthFailed', message: 'store "wh": the token was refused (401)' }] }) },
});

async function createPod(pod: V1Pod): Promise<void> {
  await tenant.core.createNamespacedPod({ namespace: ns, body: pod });
}

/** Writes the pod's status as the kubelet would (the admin's client). */
async function setStatus(name: string, s: V1Pod['status']): Promise<void> {
  for (let i = 0; ; i++) {
    const pod = await env.core.readNamespacedPod({ namespace: ns, name });
    try {
      await env.core.replaceNamespacedPodStatus({ namespace: ns, name, body: { ...pod, status: { ...pod.status, ...s } } });
      return;
    } catch (err) {
      if (i > 5 || (err as { code?: number }).code !== 409) throw err;
    }
  }
}

/** The STATUS and READY columns `kubectl get externalsecret <name>` shows. */
async function columns(name: string): Promise<{ status: string; ready: string }> {
  const table = await getTable(tenant.kc, `/apis/${GROUP}/v1/namespaces/${ns}/externalsecrets/${name}`);
  const at = (col: string) => table.columnDefinitions.findIndex((c) => c.name === col);
  const cells = table.rows[0]!.cells;
  return { status: String(cells[at('Status')] ?? ''), ready: String(cells[at('Ready')] ?? '') };
}

const shows = (name: string, want: { status: string; ready: string }) =>
  until(`kubectl get es ${name} shows ${want.status}/${want.ready}`, async () => {
    const c = await columns(name);
    return c.status === want.status && c.ready === want.ready ? c : undefined;
  }, 60_000);

const message = async (name: string) => ((await tenant.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name })) as ExternalSecret)
  .status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';

await create('secretstores', podIdentityStore('wh', env.cls));

t.test('a pod-identity ExternalSecret shows what its pods\' agents say', async (t) => {
  await create('externalsecrets', es('db', 'wh'));
  // No pod mounts it: the controller's refusal, naming the way out.
  const refused = await ready(env, ns, 'db', 'False', 'AccessDenied');
  t.match(refused.status?.conditions?.[0]?.message, /names no ServiceAccount/);

  await createPod(injected('web-1', 'db', 'native-sidecar'));
  await setStatus('web-1', { phase: 'Pending', initContainerStatuses: [status('esi-agent', { state: running, started: false })] });
  await shows('db', { status: 'InjectionPending', ready: 'False' });
  t.match(await message('db'), /0 of 1 pods.*web-1/);

  // The startup probe passed: the agent's first render is complete.
  await setStatus('web-1', { phase: 'Running', initContainerStatuses: [status('esi-agent', { state: running, started: true, ready: true })] });
  t.same(await shows('db', { status: 'InjectedInPods', ready: 'True' }), { status: 'InjectedInPods', ready: 'True' });
  t.match(await message('db'), /1 of 1 pods/);

  // An init-only agent that failed, with the reason the agent left (value-free).
  await createPod(injected('job-1', 'db', 'init-only'));
  await setStatus('job-1', { phase: 'Pending', initContainerStatuses: [status('esi-agent', { restartCount: 1, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: failedAgent('db') })] });
  await shows('db', { status: 'AgentFailed', ready: 'False' });
  t.match(await message('db'), /pod "job-1".*ExternalSecret "db".*AuthFailed.*token was refused.*1 of 2 pods/);

  await env.core.deleteNamespacedPod({ namespace: ns, name: 'job-1', gracePeriodSeconds: 0 });
  await shows('db', { status: 'InjectedInPods', ready: 'True' });
  await env.core.deleteNamespacedPod({ namespace: ns, name: 'web-1', gracePeriodSeconds: 0 });
  await shows('db', { status: 'AccessDenied', ready: 'False' });
});

t.test('sidecar mode: the classic init container tells; another ExternalSecret\'s failure is named', async (t) => {
  await create('externalsecrets', es('api', 'wh'));
  await create('externalsecrets', es('cache', 'wh'));
  await createPod(injected('side-1', 'api,cache', 'sidecar'));
  await setStatus('side-1', { phase: 'Pending', initContainerStatuses: [status('esi-agent-init', { state: { terminated: failedAgent('cache').terminated } })] });
  await shows('cache', { status: 'AgentFailed', ready: 'False' });
  await shows('api', { status: 'AgentFailed', ready: 'False' });
  t.match(await message('api'), /pod "side-1".*ExternalSecret "cache"/, 'the pod has no files: the failing ExternalSecret is named');
  await setStatus('side-1', {
    phase: 'Running',
    initContainerStatuses: [status('esi-agent-init', { state: { terminated: { exitCode: 0, reason: 'Completed' } } })],
    containerStatuses: [status('app', { state: running, ready: true }), status('esi-agent', { state: running, ready: true })],
  });
  await shows('api', { status: 'InjectedInPods', ready: 'True' });
  await shows('cache', { status: 'InjectedInPods', ready: 'True' });

  // Bounded: pod updates that change no agent's state write no status. The pods' watch is
  // ordered, so once a later, relevant change shows, the earlier ones were all handled.
  const writes = () => ctl.counter('esi_controller_apiserver_writes_total', { verb: 'PATCH', resource: 'externalsecrets/status' });
  // The counter moves after the PATCH answers, so the status `shows` saw may not be counted
  // yet: read it once it has held still for a second.
  let before = await writes();
  for (let last = -1; before !== last; before = await writes()) {
    last = before;
    await new Promise((r) => setTimeout(r, 1000));
  }
  for (const ready of ['False', 'True', 'False', 'True']) await setStatus('side-1', { conditions: [{ type: 'Ready', status: ready }] });
  await createPod(injected('marker-1', 'cache', 'init-only'));
  await setStatus('marker-1', { phase: 'Pending', initContainerStatuses: [status('esi-agent', { state: { terminated: failedAgent('cache').terminated } })] });
  await shows('cache', { status: 'AgentFailed', ready: 'False' });
  // The marker's arrival (waiting) and its failure: one or two writes (the queue may coalesce
  // them); the four unrelated updates would have added four more.
  const n = (await writes()) - before;
  t.ok(n >= 1 && n <= 2, `status writes for the relevant changes only (${n})`);
  t.same(await columns('api'), { status: 'InjectedInPods', ready: 'True' });
  await env.core.deleteNamespacedPod({ namespace: ns, name: 'marker-1', gracePeriodSeconds: 0 });
  await shows('cache', { status: 'InjectedInPods', ready: 'True' });
});

t.test('an ExternalSecret of a class no controller here serves: status from pods, unless a reconciler wrote one', async (t) => {
  await create('secretstores', fakeStore('elsewhere', `${env.cls}-none`, [{ key: 'k', value: `${CANARY}-x` }]));
  await create('externalsecrets', es('orphan', 'elsewhere'));
  await create('externalsecrets', es('theirs', 'elsewhere'));
  // "Another reconciler" (ESO, another ESI class) wrote theirs' status.
  const cur = (await env.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'theirs' })) as ExternalSecret;
  await env.custom.replaceNamespacedCustomObjectStatus({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'theirs',
    body: { ...cur, status: { conditions: [{ type: 'Ready', status: 'True', reason: 'SecretSynced', message: 'written elsewhere', lastTransitionTime: new Date().toISOString() }] } } });
  await createPod(injected('other-1', 'orphan,theirs', 'init-only'));
  await setStatus('other-1', { phase: 'Running', initContainerStatuses: [status('esi-agent', { state: { terminated: { exitCode: 0, reason: 'Completed' } } })] });
  await shows('orphan', { status: 'InjectedInPods', ready: 'True' });
  t.same(await columns('theirs'), { status: 'SecretSynced', ready: 'True' });
  t.equal(await message('theirs'), 'written elsewhere', 'another reconciler\'s status is never overwritten');
  await env.core.deleteNamespacedPod({ namespace: ns, name: 'other-1', gracePeriodSeconds: 0 });
  await shows('orphan', { status: 'NoInjectedPods', ready: 'Unknown' });
});

t.test('an ExternalSecret the controller syncs keeps its own status when pods mount it', async (t) => {
  await create('secretstores', fakeStore('mine', env.cls, [{ key: 'k', value: `${CANARY}-mine` }]));
  await create('externalsecrets', es('synced', 'mine'));
  await ready(env, ns, 'synced', 'True', 'SecretSynced');
  await createPod(injected('sync-1', 'synced', 'init-only'));
  await setStatus('sync-1', { phase: 'Pending', initContainerStatuses: [status('esi-agent', { state: { terminated: failedAgent('synced').terminated } })] });
  // The pod's failure reaches the ExternalSecrets only the webhook serves: give it time to.
  await createPod(injected('probe-1', 'db', 'init-only'));
  await setStatus('probe-1', { phase: 'Pending', initContainerStatuses: [status('esi-agent', { state: { terminated: failedAgent('db').terminated } })] });
  await shows('db', { status: 'AgentFailed', ready: 'False' });
  t.same(await columns('synced'), { status: 'SecretSynced', ready: 'True' });
});

t.test('a controller of another class writes the same pod status: the two never rewrite each other', async (t) => {
  const before = (await tenant.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'api' })) as ExternalSecret;
  t.match(before.status?.conditions?.find((c) => c.type === 'Ready'), { reason: 'InjectedInPods' });
  const other = await startController(env.cp.kubeconfigPath, ['--controller-class', `${env.cls}-other`, '--claim-unclassed=false', '--leader-elect=false'], t);
  // It has judged every ExternalSecret here another class's (api's store is env.cls's)…
  await until('the other controller skipped them', async () => (await other.counter('esi_controller_syncs_total', { result: 'skipped', reason: 'OtherClass' })) >= 3);
  // …and wrote no status of its own over the first controller's: the same words from both.
  t.equal(await other.counter('esi_controller_apiserver_writes_total', { verb: 'PATCH', resource: 'externalsecrets/status' }), 0, 'no status write by the other class');
  const after = (await tenant.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'api' })) as ExternalSecret;
  t.equal(after.metadata?.resourceVersion, before.metadata?.resourceVersion, 'the ExternalSecret is untouched');
  await other.stop();
});

t.test('no value in statuses, Events or logs', async (t) => {
  const list = await tenant.custom.listNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets' });
  t.notOk(JSON.stringify(list).includes(CANARY), 'no canary in any ExternalSecret');
  const events = await env.core.listNamespacedEvent({ namespace: ns });
  t.notOk(JSON.stringify(events).includes(CANARY), 'no canary in Events');
  t.notOk(ctl.output().includes(CANARY), 'no canary in the controller\'s logs');
});
