// Phase (a) of `npm run bench:peers`: ESI's webhook against vault-k8s on one local
// kube-apiserver, the same load generator (bench/lib/load.ts: one HTTPS client, the same
// TLS settings, connection pool and timing for both; it only POSTs bytes and reads the
// answer) and equivalent pods (pods.ts). Every load step runs A/B/B/A (ESI, vault-k8s,
// vault-k8s, ESI) so a change of the background load hits both alike. Node.js's floor
// (floor/webhook.ts: a bare node:https server on the webhook's node binary and flags, giving
// ESI's own answer) runs in the middle of each step: ESI, vault-k8s, floor, floor, vault-k8s, ESI.
import { KubeConfig, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { installCrds } from '../../src/api/crds.js';
import { generateCa, issueServingCert } from '../../certs/pki.js';
import { startControlPlane } from '../../test/support/platform/control-plane-process.js';
import { freePort } from '../../test/support/platform/processes.js';
import { buildCluster, clusterObjects } from '../admission/cluster.js';
import { coresBusy, cpuSample } from '../lib/cpustat.js';
import { closedLoop, fixedRate, LoadClient, type LoadResult } from '../lib/load.js';
import { floorScript } from './floors.js';
import { requestSource, type Injector } from './pods.js';
import { memorySampler, treeCpuMs, treeMemory, type Memory } from './procstat.js';
import { cpuPerRequest } from './report.js';
import { chartNodeFlags, startEsi, startFloor, startVaultK8s, type Server, type ServerInputs, type Side } from './servers.js';

export interface StepRun {
  injector: Side;
  result: LoadResult;
  cpuMs: number;
  cpuMsPerRequest: number | undefined;
  /** Cores the server used over the run. */
  serverCores: number;
  peak: Memory;
  /** Cores the load generator (this process) used: on a small machine it competes with the
   *  server, and at saturation the machine, not the server, may be the bound. */
  clientCores: number;
  /** Cores used by everything else (machine busy − server − this process). */
  otherCores: number;
  load: { before: number[]; after: number[] };
}

export interface Step {
  name: string;
  rate?: number;
  runs: StepRun[];
}

export interface WebhookResults {
  steps: Step[];
  idle: Record<Side, Memory>;
  reviewBytes: Record<Injector, number>;
  /** Bytes of the answer the floor gives (ESI's answer to the benchmark's pod). */
  floorAnswerBytes: number;
  objects: number;
}

export interface WebhookOptions {
  rates: number[];
  connections: number;
  warmupMs: number;
  durationMs: number;
  vaultK8sBin: string;
  dir: string;
  /** Extra node flags for the ESI webhook (profiling, experiments). */
  esiNodeArgs?: string[];
  /** Extra `esi webhook` flags (experiments, e.g. --workers=2). */
  esiArgs?: string[];
  log: (line: string) => void;
}

/** The cluster of bench/admission/cluster.ts, as objects the apiserver accepts. */
function seedObjects(): KubernetesObject[] {
  return clusterObjects(buildCluster()).map((o) => {
    const { metadata, ...rest } = o as KubernetesObject & { status?: unknown };
    delete (rest as { status?: unknown }).status;
    const m = metadata as { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
    const obj = { ...rest, metadata: { name: m.name, ...(m.namespace ? { namespace: m.namespace } : {}), labels: m.labels, annotations: { ...m.annotations } } };
    // As `kubectl apply` leaves them (GitOps tools too): a copy of the applied object.
    obj.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration'] = JSON.stringify(obj);
    return obj as KubernetesObject;
  });
}

export async function seed(kc: KubeConfig): Promise<number> {
  await installCrds(kc);
  const api = KubernetesObjectApi.makeApiClient(kc);
  const objects = seedObjects();
  const namespaces = objects.filter((o) => o.kind === 'Namespace');
  const rest = objects.filter((o) => o.kind !== 'Namespace');
  const createAll = async (list: KubernetesObject[]) => {
    for (let i = 0; i < list.length; i += 16) await Promise.all(list.slice(i, i + 16).map((o) => api.create(o)));
  };
  await createAll(namespaces);
  await createAll(rest);
  return objects.length;
}

async function oneRun(server: Server, ca: string, step: { rate?: number }, opts: WebhookOptions): Promise<StepRun> {
  const client = new LoadClient({ url: server.url, ca, maxIdleSockets: 25 });
  const source = requestSource(server.pod);
  const load0 = os.loadavg();
  // CPU is read when the measured window opens (after the warm-up) and when it closes.
  let start = { cpu: 0, machine: cpuSample(), own: process.cpuUsage() };
  const mark = () => (start = { cpu: treeCpuMs(server.pid), machine: cpuSample(), own: process.cpuUsage() });
  const timer = setTimeout(mark, opts.warmupMs);
  const mem = memorySampler(server.pid);
  try {
    const result = step.rate
      ? await fixedRate(client, source, { rate: step.rate, warmupMs: opts.warmupMs, durationMs: opts.durationMs })
      : await closedLoop(client, source, { connections: opts.connections, warmupMs: opts.warmupMs, durationMs: opts.durationMs });
    const [cpu1, m1, own1] = [treeCpuMs(server.pid), cpuSample(), process.cpuUsage(start.own)];
    const wall = Math.max(1, m1.at - start.machine.at);
    const cpuMs = cpu1 - start.cpu;
    const serverCores = cpuMs / wall;
    const own = (own1.user + own1.system) / 1000 / wall;
    return {
      injector: server.injector, result, cpuMs, cpuMsPerRequest: cpuPerRequest(start.cpu, cpu1, result.completed),
      serverCores, clientCores: own, peak: mem.stop().peak, otherCores: Math.max(0, coresBusy(start.machine, m1).busy - serverCores - own),
      load: { before: load0, after: os.loadavg() },
    };
  } finally {
    clearTimeout(timer);
    mem.stop();
    client.close();
  }
}

export async function tlsFiles(dir: string): Promise<{ certFile: string; keyFile: string; caPem: string }> {
  const now = Date.now();
  const ca = await generateCa(now, 24 * 3600_000);
  const serving = await issueServingCert(ca, { dnsNames: ['localhost'], ips: ['127.0.0.1'] }, now, 24 * 3600_000);
  const certFile = join(dir, 'serving.crt');
  const keyFile = join(dir, 'serving.key');
  await writeFile(certFile, serving.certPem);
  await writeFile(keyFile, serving.keyPem, { mode: 0o600 });
  return { certFile, keyFile, caPem: ca.certPem };
}

/** ESI's answer to one review of the benchmark's pod, checked like every answer, saved with
 *  its uid replaced by @UID@ for the floor to give. */
async function esiAnswer(esi: Server, ca: string, file: string): Promise<{ file: string; bytes: number }> {
  const client = new LoadClient({ url: esi.url, ca });
  try {
    const req = requestSource('esi')();
    const got = await new Promise<{ status?: number; body?: Buffer; error?: string }>((resolve) => client.send(req.body, resolve));
    const problem = got.error ?? req.check(got.status ?? 0, got.body ?? Buffer.alloc(0));
    if (problem || got.status !== 200) throw new Error(`ESI's answer for the floor: ${problem ?? `HTTP ${got.status}`}`);
    const uid = (JSON.parse(got.body!.toString('utf8')) as { response: { uid: string } }).response.uid;
    const text = got.body!.toString('utf8');
    if (text.split(uid).length !== 2) throw new Error('ESI\'s answer holds its uid more than once');
    await writeFile(file, text.replace(uid, '@UID@'));
    return { file, bytes: got.body!.length };
  } finally {
    client.close();
  }
}

export async function runWebhooks(opts: WebhookOptions): Promise<WebhookResults> {
  const { log } = opts;
  log('webhooks: starting the local control plane (etcd + kube-apiserver)');
  const cp = await startControlPlane(opts.dir);
  const servers: Server[] = [];
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    const objects = await seed(kc);
    log(`webhooks: ${objects} objects created (bench/admission/cluster.ts)`);
    const tls = await tlsFiles(opts.dir);
    const inp: ServerInputs = { dir: opts.dir, apiserver: cp.server, apiserverCa: cp.caPem, token: cp.token, kubeconfigPath: cp.kubeconfigPath, ...tls };
    const esi = await startEsi(inp, await freePort(), [...chartNodeFlags(), ...(opts.esiNodeArgs ?? [])], undefined, opts.esiArgs);
    servers.push(esi);
    const vk = await startVaultK8s(inp, opts.vaultK8sBin, await freePort());
    servers.push(vk);
    const answer = await esiAnswer(esi, tls.caPem, join(opts.dir, 'floor-answer.json'));
    const floor = await startFloor(inp, await freePort(), floorScript('webhook', opts.dir), answer.file, chartNodeFlags());
    servers.push(floor);
    log(`webhooks: ESI, vault-k8s and the node floor (${answer.bytes}-byte answer) ready; 5 s idle`);
    await new Promise((r) => setTimeout(r, 5000));
    const idle: Record<Side, Memory> = { esi: treeMemory(esi.pid), 'vault-k8s': treeMemory(vk.pid), floor: treeMemory(floor.pid) };
    const byName: Record<Side, Server> = { esi, 'vault-k8s': vk, floor };
    const order: Side[] = ['esi', 'vault-k8s', 'floor', 'floor', 'vault-k8s', 'esi'];
    const steps: Step[] = [];
    for (const rate of [...opts.rates, undefined]) {
      const step: Step = { name: rate ? `${rate} req/s` : `saturation (${opts.connections} conns)`, ...(rate ? { rate } : {}), runs: [] };
      for (const inj of order) {
        const run = await oneRun(byName[inj], tls.caPem, step, opts);
        const r = run.result;
        log(`  ${step.name} ${inj}: ${r.throughput.toFixed(0)} req/s, p50 ${r.latencyMs.p50.toFixed(2)} ms, p99 ${r.latencyMs.p99.toFixed(2)} ms, ` +
          `CPU ${run.cpuMsPerRequest?.toFixed(3)} ms/req (${run.serverCores.toFixed(2)} cores), peak RSS ${(run.peak.rssKiB / 1024).toFixed(1)} MiB, ` +
          `errors ${r.errors}/${r.non2xx}/${r.invalid}${r.problems[0] ? ` (${r.problems[0]})` : ''}, generator ${run.clientCores.toFixed(2)} cores, others ${run.otherCores.toFixed(2)} cores`);
        step.runs.push(run);
      }
      steps.push(step);
    }
    const { reviewSize } = await import('./pods.js');
    return { steps, idle, reviewBytes: { esi: reviewSize('esi'), 'vault-k8s': reviewSize('vault-k8s') }, floorAnswerBytes: answer.bytes, objects };
  } finally {
    for (const s of servers) await s.stop();
    await cp.stop();
  }
}
