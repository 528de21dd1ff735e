// The two webhook servers of the peers benchmark, each started the way its own deployment
// runs it, against the same local kube-apiserver with the same (admin) identity:
//   ESI:       `node bin/esi.js webhook` (built, as its container runs it, on the images'
//              Node.js: bench/lib/node.ts) with the NODE_OPTIONS the chart sets (charts/esi/values.yaml webhook.nodeOptions),
//              kubeconfig, serving certificate from files, product logger at info;
//   vault-k8s: `vault-k8s agent-inject`, which reads its Kubernetes client configuration
//              only from the in-cluster files and KUBERNETES_SERVICE_HOST/PORT. It gets them
//              in a private mount namespace (`unshare -m`) with a tmpfs over /run (which
//              /var/run points to): the machine's own /var/run is never written.
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { Injector } from './pods.js';
import { terminate, waitFor } from '../../test/support/platform/processes.js';
import { imageNode } from '../lib/node.js';

export const ROOT = join(import.meta.dirname, '..', '..');

/** What answers in a run: one of the two webhooks, or Node.js's floor (floor/webhook.ts). */
export type Side = Injector | 'floor';

export interface Server {
  injector: Side;
  /** Whose pod the server is sent (the floor answers ESI's). */
  pod: Injector;
  url: string;
  pid: number;
  stop(): Promise<void>;
  output(): string;
}

export interface ServerInputs {
  dir: string;
  /** kube-apiserver URL (https://127.0.0.1:<port>), its CA and an admin bearer token. */
  apiserver: string;
  apiserverCa: string;
  token: string;
  kubeconfigPath: string;
  certFile: string;
  keyFile: string;
  caPem: string;
}

/** Output goes to a file (as a container runtime's log driver would take it), so reading
 *  it costs the measuring process nothing while the servers log every admission. */
function logTo(file: string): ['ignore', number, number] {
  const fd = openSync(file, 'a');
  return ['ignore', fd, fd];
}

function track(child: ChildProcess, log: string) {
  const out = () => {
    try {
      return readFileSync(log, 'utf8').slice(-8000);
    } catch {
      return '';
    }
  };
  const stop = () => terminate(child);
  return { output: out, stop };
}

function probe(url: string, ca: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request(url, { ca, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

async function waitReady(name: string, url: string, ca: string, child: ChildProcess, output: () => string, timeoutMs = 120_000) {
  const ok = async () => {
    const status = await probe(url, ca);
    return status >= 200 && status < 300;
  };
  await waitFor(`${name} (${url})`, ok, timeoutMs, child, output).catch((err: unknown) => {
    child.kill('SIGKILL');
    throw err;
  });
}

/** The webhook's NODE_OPTIONS as the chart sets them (charts/esi/values.yaml webhook.nodeOptions). */
export function chartNodeOptions(): string {
  const values = parse(readFileSync(join(ROOT, 'charts', 'esi', 'values.yaml'), 'utf8')) as { webhook?: { nodeOptions?: string } };
  return values.webhook?.nodeOptions ?? '';
}

/** The webhook's command-line node flags as the chart sets them (charts/esi/values.yaml webhook.nodeFlags). */
export function chartNodeFlags(): string[] {
  const values = parse(readFileSync(join(ROOT, 'charts', 'esi', 'values.yaml'), 'utf8')) as { webhook?: { nodeFlags?: string[] } };
  return values.webhook?.nodeFlags ?? [];
}

/** The node binary the ESI webhook and its floor run on: the images' Node.js
 *  (Dockerfile.webhook runs `esi webhook` on the same pinned NODE_VERSION as the agent). */
export const webhookNode = (): string => imageNode().path;

/** `entry`: the `esi` entry to run (default bin/esi.js; bench/peers/webhook-memory.ts runs saved builds A/B);
 *  `esiArgs`: extra `esi webhook` flags (experiments, e.g. --workers=2); `node`: another node binary (experiments). */
export async function startEsi(inp: ServerInputs, port: number, nodeArgs: string[] = [], entry = join(ROOT, 'bin', 'esi.js'), esiArgs: string[] = [], node = webhookNode()): Promise<Server> {
  const nodeOptions = chartNodeOptions();
  const child = spawn(node, [
    ...nodeArgs, entry, 'webhook', '--listen', '127.0.0.1', '--port', String(port), '--kubeconfig', inp.kubeconfigPath,
    '--agent-image', 'registry.example/esi:bench', '--tls-cert-file', inp.certFile, '--tls-key-file', inp.keyFile, ...esiArgs,
  ], { env: { PATH: process.env.PATH, ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}) }, stdio: logTo(join(inp.dir, 'esi-webhook.log')) });
  const t = track(child, join(inp.dir, 'esi-webhook.log'));
  await waitReady('esi webhook', `https://127.0.0.1:${port}/readyz`, inp.caPem, child, t.output);
  return { injector: 'esi', pod: 'esi', url: `https://127.0.0.1:${port}/mutate`, pid: child.pid!, ...t };
}

/** Node.js's floor (floor/webhook.ts compiled to `script`) on the webhook's node binary, flags
 *  and NODE_OPTIONS, answering every review with `answerFile` (ESI's answer, uid replaced). */
export async function startFloor(inp: ServerInputs, port: number, script: string, answerFile: string, nodeArgs: string[] = []): Promise<Server> {
  const nodeOptions = chartNodeOptions();
  const log = join(inp.dir, 'floor-webhook.log');
  const child = spawn(webhookNode(), [...nodeArgs, script, String(port), inp.certFile, inp.keyFile, answerFile], {
    env: { PATH: process.env.PATH, ...(nodeOptions ? { NODE_OPTIONS: nodeOptions } : {}) }, stdio: logTo(log),
  });
  const t = track(child, log);
  await waitReady('node floor', `https://127.0.0.1:${port}/readyz`, inp.caPem, child, t.output);
  return { injector: 'floor', pod: 'esi', url: `https://127.0.0.1:${port}/mutate`, pid: child.pid!, ...t };
}

export async function startVaultK8s(inp: ServerInputs, bin: string, port: number): Promise<Server> {
  const sa = join(inp.dir, 'vault-k8s-sa');
  await mkdir(sa, { recursive: true });
  await writeFile(join(sa, 'token'), inp.token, { mode: 0o600 });
  await writeFile(join(sa, 'ca.crt'), inp.apiserverCa);
  await writeFile(join(sa, 'namespace'), 'vault-k8s');
  const api = new URL(inp.apiserver);
  const target = '/run/secrets/kubernetes.io/serviceaccount';
  // The tmpfs exists only in the new mount namespace (private propagation, unshare's default).
  const script = `set -e; mount -t tmpfs -o size=1m,mode=0755 esi-bench /run; mkdir -p ${target}; cp "$1"/* ${target}/; shift; exec "$@"`;
  const child = spawn('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script, 'sh', sa, bin, 'agent-inject',
    `-listen=127.0.0.1:${port}`, `-tls-cert-file=${inp.certFile}`, `-tls-key-file=${inp.keyFile}`,
    '-vault-address=https://vault.vault.svc:8200', '-log-level=info'], {
    env: { PATH: process.env.PATH, KUBERNETES_SERVICE_HOST: api.hostname, KUBERNETES_SERVICE_PORT: api.port, NAMESPACE: 'vault-k8s' },
    stdio: logTo(join(inp.dir, 'vault-k8s.log')),
  });
  const t = track(child, join(inp.dir, 'vault-k8s.log'));
  await waitReady('vault-k8s', `https://127.0.0.1:${port}/health/ready`, inp.caPem, child, t.output);
  return { injector: 'vault-k8s', pod: 'vault-k8s', url: `https://127.0.0.1:${port}/mutate`, pid: child.pid!, ...t };
}
