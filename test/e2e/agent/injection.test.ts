// Injection end to end on the real control plane: a pod created through the API is
// injected by the running webhook; the agent then runs locally with the environment the
// webhook gave its container (container paths mapped to a temp dir, the service-account
// token from the apiserver's TokenRequest) and reads Kubernetes Secrets with the pod's
// own identity, subject to RBAC.
import { CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api, type V1Pod } from '@kubernetes/client-node';
import { mkdtemp, readFile, readlink, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { installCrds } from '../../../src/api/crds.js';
import { freePort } from '../../support/platform/processes.js';
import { until as untilShared } from '../../support/platform/until.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import { createNamespace } from '../../support/kube.js';
import { agentContainer, materializeVolumes, runAgentProcess } from '../../support/kubelet.js';
import { registerWebhook, startWebhook, waitForCaBundle } from '../../support/webhook.js';

const CANARY = 'e2e-canary-7d1c0b';
const cp = await useControlPlane(t);
const kc = cp.kc;
await installCrds(kc);
const core = kc.makeApiClient(CoreV1Api);
const port = await freePort();
const { name: configName, runId } = await registerWebhook(kc, port, t);
const webhook = await startWebhook({ kubeconfigPath: cp.kubeconfigPath, namespace: await createNamespace(kc, 'esi-system', t), configName, port });
t.teardown(() => webhook.stop());
await waitForCaBundle(kc, configName);
const ns = await createNamespace(kc, 'e2e', t, { 'esi-test-run': runId });

// The app's identity and what RBAC lets it read.
await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'app' } } });
const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name: 'read-db' }, rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['db'], verbs: ['get'] }] } });
await rbac.createNamespacedRoleBinding({ namespace: ns, body: { metadata: { name: 'app-read-db' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-db' }, subjects: [{ kind: 'ServiceAccount', name: 'app', namespace: ns }] } });
await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'db' }, stringData: { username: 'orders', password: `${CANARY}-1` } } });

const custom = kc.makeApiClient(CustomObjectsApi);
const create = (plural: string, body: object) => custom.createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural, body });
await create('secretstores', { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'cluster' }, spec: { provider: { kubernetes: {
  remoteNamespace: ns, server: { url: cp.server, caBundle: Buffer.from(cp.caPem).toString('base64') }, auth: { serviceAccount: { name: 'app' } } } } } });
await create('externalsecrets', { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'db' }, spec: {
  secretStoreRef: { name: 'cluster' }, data: [
    { secretKey: 'username', remoteRef: { key: 'db', property: 'username' } },
    { secretKey: 'password', remoteRef: { key: 'db', property: 'password' } },
  ] } });
await new Promise((r) => setTimeout(r, 500));

async function injectedPod(name: string, annotations: Record<string, string>): Promise<V1Pod> {
  return core.createNamespacedPod({ namespace: ns, body: {
    metadata: { name, labels: { 'esi.dev/inject': 'true' }, annotations: { 'esi.dev/secrets': 'db', 'esi.dev/agent-port': String(await freePort()), ...annotations } },
    spec: { serviceAccountName: 'app', restartPolicy: 'Never', containers: [{ name: 'app', image: 'registry.example/app:1' }] },
  } });
}

/** The shared poll (test/support/platform/until.ts) at this file's pace: 30 s, every 200 ms. */
const until = (what: string, check: () => Promise<boolean>, ms = 30_000) => untilShared(what, check, ms, 200);

t.test('native sidecar: files, modes, refresh on change, reload call, last good files kept', async (t) => {
  let reloads = 0;
  const app = createServer((req, res) => {
    if (req.url === '/-/reload' && req.method === 'POST') reloads++;
    res.end('ok');
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  t.teardown(() => app.close());
  const appPort = (app.address() as { port: number }).port;
  const pod = await injectedPod('web', {
    'esi.dev/template-db.url': 'postgres://{{db.username}}:{{db.password}}@db:5432/orders',
    'esi.dev/refresh-interval': '10s', 'esi.dev/file-mode': '0440',
    'esi.dev/on-change': `http://127.0.0.1:${appPort}/-/reload`,
  });
  const container = agentContainer(pod);
  const root = await mkdtemp(join(tmpdir(), 'esi-e2e-'));
  await materializeVolumes(kc, pod, container, root);
  const agent = runAgentProcess(container, root);
  t.teardown(() => void agent.child.kill('SIGTERM'));
  const out = join(root, '/var/run/secrets/esi');
  await until('the first render', async () => (await readFile(join(out, 'db', 'password'), 'utf8')) === `${CANARY}-1`);
  t.equal(await readFile(join(out, 'db', 'username'), 'utf8'), 'orders');
  t.equal(await readFile(join(out, 'db.url'), 'utf8'), `postgres://orders:${CANARY}-1@db:5432/orders`, 'the template merged both keys');
  t.equal((await stat(join(out, 'db', 'password'))).mode & 0o777, 0o440, 'file mode from esi.dev/file-mode');
  t.match(await readlink(join(out, '..data')), /^\.\./, 'files live behind an atomically swapped ..data link');
  const readyPort = JSON.parse(container.env![0]!.value!).port as number;
  t.equal((await fetch(`http://127.0.0.1:${readyPort}/readyz`)).status, 200, 'the startup probe passes after the first render');

  await core.replaceNamespacedSecret({ name: 'db', namespace: ns, body: { metadata: { name: 'db' }, stringData: { username: 'orders', password: `${CANARY}-2` } } });
  await until('the changed value', async () => (await readFile(join(out, 'db', 'password'), 'utf8')) === `${CANARY}-2`, 40_000);
  t.equal(await readFile(join(out, 'db.url'), 'utf8'), `postgres://orders:${CANARY}-2@db:5432/orders`);
  await until('the reload call', async () => reloads >= 1, 15_000);
  t.equal(reloads, 1, 'the app was told once about the change');

  // Take the permission away: the next refresh is Forbidden; the files stay.
  await rbac.deleteNamespacedRoleBinding({ name: 'app-read-db', namespace: ns });
  await until('a failed refresh', async () => /Forbidden|forbidden/.test(agent.output()), 40_000);
  t.equal(await readFile(join(out, 'db', 'password'), 'utf8'), `${CANARY}-2`, 'the last good files stay in place');
  const metrics = await (await fetch(`http://127.0.0.1:${readyPort}/metrics`)).text();
  t.match(metrics, /esi_agent_refresh_failures_total\S* [1-9]/, 'the failure is counted');
  t.notOk(agent.output().includes(CANARY) || metrics.includes(CANARY), 'no secret value in the agent log or metrics');
  await rbac.createNamespacedRoleBinding({ namespace: ns, body: { metadata: { name: 'app-read-db' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-db' }, subjects: [{ kind: 'ServiceAccount', name: 'app', namespace: ns }] } });
});

t.test('init-only: renders once and exits 0', async (t) => {
  const pod = await injectedPod('job', { 'esi.dev/mode': 'init-only' });
  const container = agentContainer(pod);
  const root = await mkdtemp(join(tmpdir(), 'esi-e2e-'));
  await materializeVolumes(kc, pod, container, root);
  const agent = runAgentProcess(container, root);
  t.equal(await new Promise((r) => agent.child.on('exit', r)), 0, 'exit 0');
  t.match(await readFile(join(root, '/var/run/secrets/esi/db/password'), 'utf8'), new RegExp(CANARY));
  t.notOk(agent.output().includes(CANARY), 'no secret value in the agent log');
});

t.test('init-only with a forbidden source: non-zero exit naming the secret and the reason', async (t) => {
  await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'other' }, stringData: { k: CANARY } } });
  await create('externalsecrets', { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'other' }, spec: {
    secretStoreRef: { name: 'cluster' }, data: [{ secretKey: 'k', remoteRef: { key: 'other', property: 'k' } }] } });
  await new Promise((r) => setTimeout(r, 500));
  const pod = await injectedPod('denied', { 'esi.dev/mode': 'init-only', 'esi.dev/secrets': 'other' });
  const container = agentContainer(pod);
  const root = await mkdtemp(join(tmpdir(), 'esi-e2e-'));
  await materializeVolumes(kc, pod, container, root);
  const agent = runAgentProcess(container, root);
  t.not(await new Promise((r) => agent.child.on('exit', r)), 0, 'non-zero exit');
  t.match(agent.output(), /other/, 'names the ExternalSecret');
  t.match(agent.output(), /[Ff]orbidden/, 'says why');
  t.notOk(agent.output().includes(CANARY));
});
