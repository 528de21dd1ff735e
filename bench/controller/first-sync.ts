// One first sync of the corpus by one tree's controller (bench/controller/trees.ts), on a
// control plane of its own, so every run starts from the same state: the store and the
// ExternalSecrets exist, no Secret and no status yet. Optionally inside a memory cgroup
// (./cgroup.ts) at the chart's limit: an OOM kill there is a result, not a crash.
import { KubeConfig } from '@kubernetes/client-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { API_GROUP } from '../../src/api/types.js';
import { KubeRest } from '../../src/kube/rest.js';
import { startControlPlane, type RunningControlPlane } from '../../test/support/platform/control-plane-process.js';
import { freePort } from '../../test/support/platform/processes.js';
import type { MemoryCgroup } from './cgroup.js';
import { CLASS, createCorpus, createStore, type CorpusSize } from './corpus.js';
import { apiserverPid, cpuSeconds, metric, rssMiB, sleep, waitReady } from './probe.js';
import { ReadyWatch } from './ready-watch.js';
import type { Tree } from './trees.js';

export interface SyncOptions {
  tree: Tree;
  size: CorpusSize;
  interval: string;
  window: string;
  workers?: string;
  cgroup?: MemoryCgroup;
  /** Node flags before bin/esi.js (a CPU profile, a heap snapshot on SIGUSR2). */
  nodeFlags?: string[];
  /** Keep the plane and the controller running after the first sync (the later steps). */
  keep?: boolean;
  /** NODE_OPTIONS instead of the tree's chart's (`--node-options`: variants side by side). */
  nodeOptions?: string;
}

export interface SyncResult {
  tree: Tree;
  /** NODE_OPTIONS the controller ran with. */
  nodeOptions: string;
  inCgroup?: { limitMiB: number; peakMiB: number; oomKills: number; failcnt: number };
  /** Set when the controller did not live to "all Ready" (OOM-killed, crashed). */
  died?: string;
  allReadyS: number;
  peakRssMiB: number;
  cpu: { controller: number; apiserver: number };
  providerCalls: number;
  writes: number;
  events: number;
  readyViaApi: number;
  /** 1-minute load average before and after the sync. */
  load: [number, number];
}

export interface Live {
  cp: RunningControlPlane;
  rest: KubeRest;
  port: number;
  child: ChildProcess;
  plan: Map<string, string[]>;
  /** The peak RSS so far (sampled every 250 ms until stop). */
  peak(): number;
  stop(): Promise<void>;
}

const MiB = 2 ** 20;

/** Plain /metrics on --port for the bench to read: a flag that trees older than the
 *  authenticated metrics (docs/metrics.md) do not know, and serve plainly anyway. */
function plainMetrics(tree: string): string[] {
  return readFileSync(join(tree, 'src', 'controller', 'cmd.ts'), 'utf8').includes("'metrics-secure'") ? ['--metrics-secure=false'] : [];
}

/** The controller's NODE_OPTIONS as that tree's chart sets them (charts/esi/values.yaml
 *  controller.nodeOptions; trees older than the value have none): each runs as it ships. */
export function chartNodeOptions(tree: string): string {
  const values = parse(readFileSync(join(tree, 'charts', 'esi', 'values.yaml'), 'utf8')) as { controller?: { nodeOptions?: string } };
  return values.controller?.nodeOptions ?? '';
}

function spawnController(o: SyncOptions, kubeconfig: string, port: number): ChildProcess {
  const argv = [process.execPath, ...(o.nodeFlags ?? []), join(o.tree.dir, 'bin', 'esi.js'), 'controller', '--kubeconfig', kubeconfig,
    '--controller-class', CLASS, '--claim-unclassed=false', '--leader-elect=false', '--listen', '127.0.0.1', '--port', String(port), ...plainMetrics(o.tree.dir),
    '--coalesce-window', o.window, ...(o.workers ? ['--workers', o.workers] : [])];
  const [cmd, ...args] = o.cgroup ? o.cgroup.wrap(argv) : argv;
  const nodeOptions = o.nodeOptions ?? chartNodeOptions(o.tree.dir);
  const env: NodeJS.ProcessEnv = { ...process.env, ESI_LOG_LEVEL: 'warn' };
  delete env.NODE_OPTIONS;
  if (nodeOptions) env.NODE_OPTIONS = nodeOptions;
  return spawn(cmd!, args, { cwd: o.tree.dir, env, stdio: ['ignore', 'ignore', 'inherit'] });
}

const gone = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;

/** Until `n` ExternalSecrets are Ready (or the controller died): the CPU and time so far,
 *  read once a second while the process lives (an OOM kill leaves nothing to read) and at the end. */
async function untilReady(c: ChildProcess, port: number, watch: ReadyWatch, o: { n: number; apiPid: number; api0: number; t: number }) {
  let cpu = { controller: 0, apiserver: 0 };
  let allReadyS = 0;
  try {
    await waitReady(port, c);
    for (;;) {
      await Promise.race([watch.until(o.n), sleep(1000)]);
      if (watch.ended) throw new Error(`the ExternalSecret watch ended: ${watch.ended}`);
      if (gone(c)) throw new Error('controller exited');
      cpu = { controller: cpuSeconds(c.pid!), apiserver: cpuSeconds(o.apiPid) - o.api0 };
      allReadyS = (Date.now() - o.t) / 1000;
      if (watch.count >= o.n) break;
    }
  } catch (err) {
    if (!gone(c)) throw err;
  } finally {
    watch.stop();
  }
  return { cpu, allReadyS };
}

export async function firstSync(o: SyncOptions): Promise<{ result: SyncResult; live?: Live }> {
  const cp = await startControlPlane(await mkdtemp(join(tmpdir(), 'esi-bench-ctl-')));
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  const rest = new KubeRest(kc, { maxSockets: 64 });
  let child: ChildProcess | undefined;
  let sampler: NodeJS.Timeout | undefined;
  const stop = async () => {
    clearInterval(sampler);
    if (child && !gone(child)) {
      const exited = new Promise((r) => child!.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rest.close();
    await cp.stop();
  };
  try {
    const { installCrds } = await import('../../src/api/crds.js');
    await installCrds(kc);
    await createStore(rest, o.size.keys);
    let t = Date.now();
    const plan = await createCorpus(rest, o.size, o.interval);
    console.log(`[${o.tree.label}] created ${o.size.externalSecrets} ExternalSecrets in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    const port = await freePort();
    const watch = await ReadyWatch.start(kc);
    const apiPid = apiserverPid(cp.dir);
    const api0 = cpuSeconds(apiPid);
    const load0 = loadavg()[0]!;
    t = Date.now();
    const c = (child = spawnController(o, cp.kubeconfigPath, port));
    let peak = 0;
    sampler = setInterval(() => {
      if (!gone(c)) peak = Math.max(peak, rssMiB(c.pid!));
    }, 250);
    const { cpu, allReadyS } = await untilReady(c, port, watch, { n: o.size.externalSecrets, apiPid, api0, t });
    const synced = watch.count;
    const inCgroup = o.cgroup && {
      limitMiB: o.cgroup.limitBytes / MiB, peakMiB: o.cgroup.peakBytes() / MiB, oomKills: o.cgroup.oomKills(), failcnt: o.cgroup.failcnt(),
    };
    const died = gone(c) ? `exited (${c.signalCode ?? `code ${c.exitCode}`}${inCgroup?.oomKills ? ', OOM-killed' : ''}) after ${synced} Ready` : undefined;
    const counts = died ? [0, 0, 0] : await Promise.all([metric(port, 'esi_controller_provider_calls_total'),
      metric(port, 'esi_controller_apiserver_writes_total'), metric(port, 'esi_controller_apiserver_writes_total', 'resource="events"')]);
    // Confirm through the API, as a user would.
    const list = await rest.get<{ items: { status?: { conditions?: { type: string; status: string }[] } }[] }>(`/apis/${API_GROUP}/v1/externalsecrets`);
    const readyViaApi = list.items.filter((es) => es.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True')).length;
    const result: SyncResult = {
      tree: o.tree, nodeOptions: o.nodeOptions ?? chartNodeOptions(o.tree.dir), ...(inCgroup ? { inCgroup } : {}), ...(died ? { died } : {}), allReadyS, peakRssMiB: peak, cpu,
      providerCalls: counts[0]!, writes: counts[1]!, events: counts[2]!, readyViaApi, load: [load0, loadavg()[0]!],
    };
    console.log(`[${o.tree.label}] ${died ?? `all synced in ${allReadyS.toFixed(1)} s`}; ${readyViaApi} Ready via the API; CPU ${cpu.controller.toFixed(1)} s` +
      ` (kube-apiserver ${cpu.apiserver.toFixed(1)} s); peak RSS ${peak.toFixed(0)} MiB${inCgroup ? `; cgroup peak ${inCgroup.peakMiB.toFixed(0)} of ${inCgroup.limitMiB} MiB, ${inCgroup.oomKills} OOM kills` : ''}; load ${result.load.map((l) => l.toFixed(1)).join(' → ')}`);
    if (!o.keep || died) {
      await stop();
      return { result };
    }
    return { result, live: { cp, rest, port, child: c, plan, peak: () => peak, stop } };
  } catch (err) {
    await stop();
    throw err;
  }
}
