// Starts a real etcd + kube-apiserver on 127.0.0.1 (binaries from build-binaries.sh),
// with RBAC, the admission webhook plugins and the TokenRequest API on, and writes an
// admin kubeconfig. No kubelet, no controller-manager: tests create what controllers
// would (e.g. the `default` ServiceAccount) themselves.
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:https';

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
}

export interface RunningControlPlane extends ControlPlaneInfo {
  stop(): Promise<void>;
  /** Stops kube-apiserver and starts it again on the same port, certificates and etcd:
   *  every client's watch breaks, as in an apiserver rollout. */
  restartApiserver(): Promise<void>;
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

function versions(): { kubernetes: string; etcd: string } {
  const env = readFileSync(new URL('./versions.env', import.meta.url), 'utf8');
  const get = (k: string) => {
    const m = new RegExp(`^${k}=(\\S+)`, 'm').exec(env);
    if (!m?.[1]) throw new Error(`test/platform/versions.env: ${k} is not set`);
    return m[1];
  };
  return { kubernetes: get('KUBERNETES_VERSION'), etcd: get('ETCD_VERSION') };
}

export function binaryPaths(): { apiserver: string; etcd: string } {
  const cache = process.env.ESI_CACHE ?? join(homedir(), '.cache', 'esi');
  const v = versions();
  const paths = {
    apiserver: join(cache, 'bin', `kube-apiserver-${v.kubernetes}`),
    etcd: join(cache, 'bin', `etcd-${v.etcd}`),
  };
  for (const [name, p] of Object.entries(paths)) {
    if (!existsSync(p)) {
      throw new Error(`${name} binary missing at ${p}: run \`npm run platform:build\` (test/platform/build-binaries.sh)`);
    }
  }
  return paths;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

function launch(bin: string, args: string[], logFile: string): ChildProcess {
  const log = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  return child;
}

function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, child: ChildProcess, log: string) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited with code ${child.exitCode}; last log lines:\n${tail(log)}`);
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`${what} not ready after ${timeoutMs} ms; last log lines:\n${tail(log)}`);
}

function httpsOk(url: string, token: string, ca?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(url, { headers: { authorization: `Bearer ${token}` }, ca, rejectUnauthorized: !!ca, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
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

/** Starts etcd and kube-apiserver in `dir`; resolves once /readyz is 200. */
export async function startControlPlane(dir: string): Promise<RunningControlPlane> {
  const bins = binaryPaths();
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
    '--enable-priority-and-fairness=false', '--profiling=false', '--v=1',
  ];
  let apiserver = launch(bins.apiserver, args, log);
  const stop = async () => {
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
    await writeFile(kubeconfigPath, kubeconfigYaml(server, caPem, token), { mode: 0o600 });
    return { dir, kubeconfigPath, server, token, caPem, stop, restartApiserver };
  } catch (err) {
    await stop();
    throw err;
  }
}
