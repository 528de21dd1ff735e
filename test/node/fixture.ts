// What the test/node/ files share: the node (useNode), the stores and ExternalSecrets the
// injected agent reads (Kubernetes Secrets through the apiserver, reached from pods at the
// `kubernetes` Service address), an app container whose own process prints a hash of the
// file it reads at start and on each reload call, and polling helpers.
import { BatchV1Api, CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api, type KubeConfig, type V1Container, type V1Job, type V1Pod } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installCrds } from '../../src/api/crds.js';
import { createNamespace } from '../helpers/kube.js';
import { registerWebhook, startWebhook, waitForCaBundle } from '../helpers/webhook.js';
import type { ControlPlane } from '../platform/controlPlane.js';
import { useNode } from '../platform/node/useNode.js';
import { forwarder, type NodeInfo } from '../platform/node/node.js';
import { networkFor } from '../platform/node/network.js';
import { freePort, terminate } from '../platform/processes.js';
import { until } from '../platform/until.js';

export const SECRETS_DIR = '/var/run/secrets/esi';
/** The `kubernetes` Service address, where pods on the test node reach the apiserver. */
export const APISERVER_IN_CLUSTER = 'https://10.96.0.1:443';

export function hashOf(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 16);
}

export { until };

/** The app: prints `start <hash>` of <SECRETS_DIR>/db/password when its process starts
 *  (`start missing:ENOENT` if the file is not there yet), then `mount <code>`: what writing
 *  into the secrets volume gives (EROFS: mounted read-only), then, unless `once`, serves
 *  POST /-/reload on 127.0.0.1:8080 and prints `reload <hash>` for each call. */
export function appContainer(image: string, once = false): V1Container {
  const script = [
    "const fs = require('fs'), crypto = require('crypto'), http = require('http');",
    `const read = () => { try { return crypto.createHash('sha256').update(fs.readFileSync('${SECRETS_DIR}/db/password')).digest('hex').slice(0, 16); } catch (e) { return 'missing:' + e.code; } };`,
    "console.log('start ' + read());",
    `try { fs.writeFileSync('${SECRETS_DIR}/db/intruder', 'x'); console.log('mount writable'); } catch (e) { console.log('mount ' + e.code); }`,
    once ? '' : "http.createServer((q, s) => { if (q.method === 'POST' && q.url === '/-/reload') console.log('reload ' + read()); s.end('ok'); }).listen(8080, '127.0.0.1');",
  ].join('\n');
  return {
    name: 'app', image, imagePullPolicy: 'Never', command: ['/nodejs/bin/node', '-e', script],
    securityContext: { runAsNonRoot: true, runAsUser: 65532, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
  };
}

/** A ServiceAccount `app` allowed to read the Secret `db`, a SecretStore reading this
 *  namespace's Secrets as that ServiceAccount, and an ExternalSecret `db` (username,
 *  password). `forbidden` leaves out the RoleBinding. */
export async function secretsFixture(kc: KubeConfig, ns: string, caPem: string, password: string, opts: { forbidden?: boolean } = {}): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'app' } } });
  await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name: 'read-db' }, rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['db'], verbs: ['get'] }] } });
  if (!opts.forbidden) {
    await rbac.createNamespacedRoleBinding({ namespace: ns, body: { metadata: { name: 'app-read-db' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-db' }, subjects: [{ kind: 'ServiceAccount', name: 'app', namespace: ns }] } });
  }
  await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'db' }, stringData: { username: 'orders', password } } });
  const custom = kc.makeApiClient(CustomObjectsApi);
  const create = (plural: string, body: object) => custom.createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural, body });
  await create('secretstores', { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'cluster' }, spec: { provider: { kubernetes: {
    remoteNamespace: ns, server: { url: APISERVER_IN_CLUSTER, caBundle: Buffer.from(caPem).toString('base64') }, auth: { serviceAccount: { name: 'app' } } } } } });
  await create('externalsecrets', { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'db' }, spec: {
    secretStoreRef: { name: 'cluster' }, data: [
      { secretKey: 'username', remoteRef: { key: 'db', property: 'username' } },
      { secretKey: 'password', remoteRef: { key: 'db', property: 'password' } },
    ] } });
}

/** Pod template metadata that opts in to injection of ExternalSecret `db`. */
export function optedIn(annotations: Record<string, string> = {}, labels: Record<string, string> = {}) {
  return { labels: { 'esi.dev/inject': 'true', ...labels }, annotations: { 'esi.dev/secrets': 'db', ...annotations } };
}

export async function podsOf(kc: KubeConfig, ns: string, selector: string): Promise<V1Pod[]> {
  return (await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: ns, labelSelector: selector })).items;
}

/** A container's log through the apiserver (which asks the node's kubelet). */
export async function logOf(kc: KubeConfig, ns: string, pod: string, container: string): Promise<string> {
  return kc.makeApiClient(CoreV1Api).readNamespacedPodLog({ namespace: ns, name: pod, container }).catch(() => '');
}

/** The node, ESI's CRDs, and a local `esi webhook` registered for this run's namespaces
 *  (labelled with `run`), injecting the node's image; `webhookArgs` adds flags that need the
 *  node (e.g. an `--agent-env` naming its address). */
export async function nodeWithWebhook(t: { teardown(fn: () => unknown): void }, webhookArgs: (node: NodeInfo) => string[] = () => []): Promise<{ cp: ControlPlane; node: NodeInfo; run: Record<string, string>; webhook: { output(): string } }> {
  const { cp, node } = await useNode(t);
  await installCrds(cp.kc);
  const port = await freePort();
  const { name: configName, runId } = await registerWebhook(cp.kc, port, t);
  const webhook = await startWebhook({
    kubeconfigPath: cp.kubeconfigPath, namespace: await createNamespace(cp.kc, 'esi-system', t), configName, port,
    extraArgs: ['--agent-image', node.esiImage, '--agent-pull-policy', 'Never', ...webhookArgs(node)],
  });
  t.teardown(() => webhook.stop());
  await waitForCaBundle(cp.kc, configName);
  return { cp, node, run: { 'esi-test-run': runId }, webhook };
}

/** The Job once it succeeded or failed (at most 180 s). */
export function jobDone(kc: KubeConfig, ns: string, name: string): Promise<V1Job> {
  return until(`the Job ${name} to finish`, async () => {
    const j = await kc.makeApiClient(BatchV1Api).readNamespacedJob({ namespace: ns, name });
    return (j.status?.succeeded ?? 0) + (j.status?.failed ?? 0) > 0 ? j : undefined;
  }, 180_000);
}

/** Makes a server listening on this host's 127.0.0.1:`port` (OpenBao, PostgreSQL) reachable
 *  from pods at the returned `<node ip>:<port>`: the node's network has no route out
 *  (test/platform/node/network.ts), so a forwarder pair joins them through a unix socket, as
 *  the node does for the apiserver. Stopped at `t.teardown`. */
export async function reachableFromPods(t: { teardown(fn: () => unknown): void }, node: NodeInfo, port: number): Promise<{ host: string; port: number }> {
  const k = Number(/^esi-node-(\d+)$/.exec(node.name)?.[1]);
  if (!Number.isInteger(k)) throw new Error(`unexpected node name ${node.name}`);
  const dir = await mkdtemp(join(tmpdir(), 'esi-expose-'));
  const sock = join(dir, 'forward.sock');
  const onHost = await forwarder(dir, 'host', `unix:${sock}`, `tcp:127.0.0.1:${port}`);
  const inNode = await forwarder(dir, 'node', `tcp:${node.ip}:${port}`, `unix:${sock}`, networkFor(k)).catch(async (err: unknown) => {
    await terminate(onHost);
    throw err;
  });
  t.teardown(async () => {
    await terminate(inNode);
    await terminate(onHost);
    await rm(dir, { recursive: true, force: true });
  });
  return { host: node.ip, port };
}
