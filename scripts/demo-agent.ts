// The agent part of the demo: a live Kubernetes-backed store the pod reads with its own
// identity, then `esi agent` run locally with the environment the webhook gave its
// container, the rendered tree (values masked), and a changed value picked up.
import { CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentContainer, materializeVolumes, runAgentProcess } from '../test/support/kubelet.js';

const NS = 'demo';

/** A SecretStore backed by this cluster's Secrets, readable by ServiceAccount `demo-app`. */
export async function prepareLiveStore(kc: KubeConfig, server: string, caPem: string): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace: NS, body: { metadata: { name: 'demo-app' } } });
  await core.createNamespacedSecret({ namespace: NS, body: { metadata: { name: 'app-credentials' }, stringData: { 'api-key': 'demo-api-key-v1' } } });
  await rbac.createNamespacedRole({ namespace: NS, body: { metadata: { name: 'read-app-credentials' },
    rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: ['app-credentials'], verbs: ['get'] }] } });
  await rbac.createNamespacedRoleBinding({ namespace: NS, body: { metadata: { name: 'demo-app-read' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-app-credentials' },
    subjects: [{ kind: 'ServiceAccount', name: 'demo-app', namespace: NS }] } });
  const custom = kc.makeApiClient(CustomObjectsApi);
  const create = (plural: string, body: object) => custom.createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: NS, plural, body });
  await create('secretstores', { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'this-cluster' },
    spec: { provider: { kubernetes: { remoteNamespace: NS, server: { url: server, caBundle: Buffer.from(caPem).toString('base64') }, auth: { serviceAccount: { name: 'demo-app' } } } } } });
  await create('externalsecrets', { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'app-credentials' },
    spec: { secretStoreRef: { name: 'this-cluster' }, data: [{ secretKey: 'api-key', remoteRef: { key: 'app-credentials', property: 'api-key' } }] } });
}

const mask = (b: Buffer) => `${b.length} bytes, sha256 ${createHash('sha256').update(b).digest('hex').slice(0, 12)}…`;

async function tree(dir: string, prefix = ''): Promise<string[]> {
  const lines: string[] = [];
  for (const name of (await readdir(dir)).filter((n) => !n.startsWith('..')).sort()) {
    const path = join(dir, name);
    const st = await stat(path);
    if (st.isDirectory()) lines.push(`${prefix}${name}/`, ...(await tree(path, `${prefix}  `)));
    else lines.push(`${prefix}${name}  (mode ${(st.mode & 0o777).toString(8)}, ${mask(await readFile(path))})`);
  }
  return lines;
}

async function until(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

export async function runAgentStep(opts: { kc: KubeConfig; pod: V1Pod; step: (s: string) => void }): Promise<void> {
  const { kc, pod, step } = opts;
  step('Running `esi agent` locally with the env the webhook gave its container');
  const container = agentContainer(pod);
  const root = await mkdtemp(join(tmpdir(), 'esi-demo-agent-'));
  await materializeVolumes(kc, pod, container, root);
  console.log(`container paths are mapped under ${root}; token from the TokenRequest API of ServiceAccount ${pod.spec!.serviceAccountName}`);
  const agent = runAgentProcess(container, root);
  const out = join(root, '/var/run/secrets/esi');
  const keyFile = join(out, 'app-credentials', 'api-key');
  try {
    if (!(await until(async () => (await stat(keyFile)).isFile(), 20_000))) throw new Error(`the agent rendered nothing:\n${agent.output()}`);
    step('Rendered file tree (values masked)');
    console.log((await tree(out)).join('\n'));
    step('Changing the source Secret app-credentials; the sidecar picks it up on its next refresh');
    const before = await readFile(keyFile);
    await kc.makeApiClient(CoreV1Api).replaceNamespacedSecret({ name: 'app-credentials', namespace: NS, body: {
      metadata: { name: 'app-credentials' }, stringData: { 'api-key': 'demo-api-key-v2' } } });
    const changed = await until(async () => !(await readFile(keyFile)).equals(before), 30_000);
    console.log(changed ? `app-credentials/api-key: ${mask(before)} -> ${mask(await readFile(keyFile))}` : 'no change seen within 30 s');
  } finally {
    agent.child.kill('SIGTERM');
    await new Promise((r) => agent.child.once('exit', r));
  }
}
