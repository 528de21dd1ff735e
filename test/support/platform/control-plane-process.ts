// Starts a real etcd + kube-apiserver on 127.0.0.1 (binaries from build-binaries.sh),
// with RBAC, the admission webhook plugins and the TokenRequest API on, and writes an
// admin kubeconfig.
//
// Controllers are opt-in: `startControlPlane(dir, { controllers: [...] })` also runs
// kube-controller-manager (controller-manager.ts, same Kubernetes version) with exactly
// those controllers, e.g. `garbage-collector-controller` so that deleting an owner deletes
// its dependents as in a real cluster. It stops with the plane. Without controllers
// nothing reconciles: tests create what controllers would (the `default` ServiceAccount)
// themselves. The shared plane of a tap run always runs SHARED_CONTROLLERS
// (controlPlane.ts). A node (kubelet + containerd) attaches to a running plane
// separately: test/platform/node/.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { binaryPath } from './binaries.js';
import { startControllerManager, type ControllerName } from './controller-manager.js';
import { freePort, httpsOk, launch, terminate, waitFor } from './processes.js';

export type { ControllerName } from './controller-manager.js';

export interface ControlPlaneInfo {
  /** Directory holding data, logs and the kubeconfig. */
  dir: string;
  kubeconfigPath: string;
  /** https://127.0.0.1:<port> */
  server: string;
  /** Admin bearer token (member of system:masters). */
  token: string;
  /** PEM bundle that verifies the apiserver's serving certificate. */
  caPem: string;
  /** Controllers kube-controller-manager runs against this plane ([] = none). */
  controllers: ControllerName[];
}

export interface ControlPlaneOptions {
  /** Run kube-controller-manager with these controllers (default: none). */
  controllers?: readonly ControllerName[];
  /** Extra kube-apiserver flags (a private plane only; e.g. a feature gate turned off). */
  apiserverArgs?: readonly string[];
}

export interface RunningControlPlane extends ControlPlaneInfo {
  stop(): Promise<void>;
  /** Stops kube-apiserver and starts it again on the same port, certificates and etcd:
   *  every client's watch breaks, as in an apiserver rollout. */
  restartApiserver(): Promise<void>;
}

export function binaryPaths(): { apiserver: string; etcd: string } {
  return { apiserver: binaryPath('kube-apiserver'), etcd: binaryPath('etcd') };
}

function kubeconfigYaml(server: string, caPem: string, token: string): string {
  const ca = Buffer.from(caPem).toString('base64');
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: esi-local',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority-data: ${ca}`,
    'users:',
    '- name: admin',
    '  user:',
    `    token: ${token}`,
    'contexts:',
    '- name: esi-local',
    '  context: {cluster: esi-local, user: admin}',
    'current-context: esi-local',
    '',
  ].join('\n');
}

/** Writes a kubeconfig for `server` with the admin token (used by the plane's own
 *  components: the controller-manager, and a node's kubelet through its forwarder). */
export async function writeKubeconfig(file: string, server: string, caPem: string, token: string): Promise<void> {
  await writeFile(file, kubeconfigYaml(server, caPem, token), { mode: 0o600 });
}

async function startEtcd(bin: string, dir: string) {
  const [clientPort, peerPort] = [await freePort(), await freePort()];
  const log = join(dir, 'etcd.log');
  const client = `http://127.0.0.1:${clientPort}`;
  const child = launch(bin, [
    '--name=esi-test', `--data-dir=${join(dir, 'etcd-data')}`,
    `--listen-client-urls=${client}`, `--advertise-client-urls=${client}`,
    `--listen-peer-urls=http://127.0.0.1:${peerPort}`, `--initial-advertise-peer-urls=http://127.0.0.1:${peerPort}`,
    `--initial-cluster=esi-test=http://127.0.0.1:${peerPort}`,
    '--unsafe-no-fsync=true', '--quota-backend-bytes=2147483648', '--log-level=warn',
  ], log);
  await waitFor('etcd', async () => {
    const res = await fetch(`${client}/health`);
    return res.ok;
  }, 20_000, child, log);
  return { child, client };
}

async function writeApiserverInputs(dir: string, token: string) {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  await writeFile(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  await writeFile(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  await writeFile(join(dir, 'tokens.csv'), `${token},admin,admin,"system:masters"\n`, { mode: 0o600 });
}

/** Starts etcd and kube-apiserver in `dir` (plus kube-controller-manager when
 *  `opts.controllers` is not empty); resolves once everything is ready. */
export async function startControlPlane(dir: string, opts: ControlPlaneOptions = {}): Promise<RunningControlPlane> {
  const bins = binaryPaths();
  const controllers = [...new Set(opts.controllers ?? [])];
  if (controllers.length) binaryPath('kube-controller-manager'); // fail before starting anything
  await mkdir(join(dir, 'certs'), { recursive: true });
  const token = randomBytes(24).toString('hex');
  await writeApiserverInputs(dir, token);
  const etcd = await startEtcd(bins.etcd, dir);
  const port = await freePort();
  const server = `https://127.0.0.1:${port}`;
  const log = join(dir, 'kube-apiserver.log');
  const args = [
    `--etcd-servers=${etcd.client}`, '--bind-address=127.0.0.1', '--advertise-address=127.0.0.1',
    `--secure-port=${port}`, `--cert-dir=${join(dir, 'certs')}`,
    `--token-auth-file=${join(dir, 'tokens.csv')}`, '--authorization-mode=RBAC',
    '--enable-admission-plugins=NamespaceLifecycle,ServiceAccount,MutatingAdmissionWebhook,ValidatingAdmissionWebhook',
    `--service-account-issuer=https://kubernetes.default.svc.cluster.local`,
    `--service-account-key-file=${join(dir, 'sa.pub')}`,
    `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
    '--api-audiences=https://kubernetes.default.svc.cluster.local',
    '--service-cluster-ip-range=10.96.0.0/16', '--allow-privileged=true',
    // Webhook Services resolve to their endpoints (pod addresses) rather than a ClusterIP:
    // there is no kube-proxy, and a node's pod network is routed to this host.
    '--enable-aggregator-routing=true',
    // Reach a node's kubelet (logs, exec) at its address, never by resolving its name.
    '--kubelet-preferred-address-types=InternalIP',
    '--enable-priority-and-fairness=false', '--profiling=false', '--v=1',
    ...(opts.apiserverArgs ?? []),
  ];
  let apiserver = launch(bins.apiserver, args, log);
  let stopControllers = async () => {};
  const stop = async () => {
    await stopControllers();
    for (const child of [apiserver, etcd.child]) await terminate(child);
  };
  const restartApiserver = async () => {
    await terminate(apiserver);
    apiserver = launch(bins.apiserver, args, log);
    await waitFor('kube-apiserver (restarted)', () => httpsOk(`${server}/readyz`, token), 60_000, apiserver, log);
  };
  try {
    await waitFor('kube-apiserver', () => httpsOk(`${server}/readyz`, token), 60_000, apiserver, log);
    // The self-generated serving certificate (with its CA) verifies the server.
    const caPem = readFileSync(join(dir, 'certs', 'apiserver.crt'), 'utf8');
    const kubeconfigPath = join(dir, 'kubeconfig');
    await writeKubeconfig(kubeconfigPath, server, caPem, token);
    if (controllers.length) {
      const kcm = await startControllerManager({
        dir, kubeconfigPath, caPemFile: join(dir, 'certs', 'apiserver.crt'), saKeyFile: join(dir, 'sa.key'),
      }, controllers);
      stopControllers = kcm.stop;
    }
    return { dir, kubeconfigPath, server, token, caPem, controllers, stop, restartApiserver };
  } catch (err) {
    await stop();
    throw err;
  }
}
