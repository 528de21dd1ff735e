// `npm run bench:controller`: the reconciler at scale on the real local apiserver with the
// fake store. 10 000 ExternalSecrets over 100 namespaces (1–5 keys each, 2 000 distinct
// remote keys) exist before `esi controller` starts; measured: start → all Ready, CPU, peak
// RSS, each on a control plane of its own (first-sync.ts):
//  - with `--baseline REF`, that commit's tree (trees.ts) and this one, side by side
//    (alternating, `--rounds N` pairs);
//  - this tree inside a memory cgroup at the chart's controller limit (cgroup.ts; the step
//    fails, and the runner exits 1, on an OOM kill); then, on that controller: steady RSS,
//    apiserver writes and provider calls during one idle refresh cycle, and the time for a
//    changed value to reach its Secret.
// Then the "hostile templates" step (hostile.ts): normal ExternalSecrets' sync latency with
// and without 20 looping templates next to them.
// Options: --es N --namespaces N --keys N --interval DUR --no-write (print only);
// --baseline REF --rounds N; --cgroup-limit QTY (default: the chart's) or --no-cgroup;
// --hostile-only runs the hostile templates step alone (no corpus); --node-options STR
// (repeatable) runs this tree in the cgroup with each NODE_OPTIONS in turn, --cgroup-only
// skips the unconstrained first syncs.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { API_GROUP } from '../../src/api/types.js';
import { machineInfo, machineMarkdown } from '../lib/machine.js';
import { markdownTable, textTable, writeSection } from '../lib/markdown.js';
import { cgroupUnavailable, chartControllerLimit, memoryCgroup, parseQuantity, type MemoryCgroup } from './cgroup.js';
import { CLASS, keyName, STORE, storeData } from './corpus.js';
import { firstSync, type Live, type SyncResult } from './first-sync.js';
import { hostileStep } from './hostile.js';
import { metric, rssMiB, sleep } from './probe.js';
import { sideBySide } from './report.js';
import { baselineTree, build, thisTree, type Tree } from './trees.js';

/** One first sync to run: a tree, with its chart's NODE_OPTIONS unless given. */
interface Run { tree: Tree; nodeOptions?: string }

const ROOT = join(import.meta.dirname, '..', '..');
const { values: v } = parseArgs({ options: {
  es: { type: 'string', default: '10000' }, namespaces: { type: 'string', default: '100' }, keys: { type: 'string', default: '2000' },
  interval: { type: 'string', default: '60s' }, window: { type: 'string', default: '30s' }, 'no-write': { type: 'boolean' },
  // Writes a CPU profile of this tree's controller (on exit) and a heap snapshot at "all Ready" into DIR.
  profile: { type: 'string' },
  workers: { type: 'string' },
  baseline: { type: 'string' },
  rounds: { type: 'string', default: '1' },
  'cgroup-limit': { type: 'string' },
  'no-cgroup': { type: 'boolean' },
  // Stops after the first syncs (while iterating on them); implies --no-write.
  'first-sync-only': { type: 'boolean' },
  'hostile-only': { type: 'boolean' },
  // NODE_OPTIONS variants of this tree in the cgroup step, each run side by side instead of
  // its chart's value ("none" for no flags); --cgroup-only skips the unconstrained first syncs.
  'node-options': { type: 'string', multiple: true },
  'cgroup-only': { type: 'boolean' },
} });
if (v['hostile-only']) Object.assign(v, { es: '0', 'first-sync-only': true, 'no-cgroup': true });
const size = { externalSecrets: Number(v.es), namespaces: Number(v.namespaces), keys: Number(v.keys) };
const intervalS = Number(/^(\d+)s$/.exec(v.interval!)?.[1] ?? NaN);
if (!Number.isFinite(intervalS)) throw new Error('--interval must be in seconds, e.g. 60s');
const chartLimit = chartControllerLimit(readFileSync(join(ROOT, 'charts', 'esi', 'values.yaml'), 'utf8'));
const limit = v['cgroup-limit'] ?? chartLimit;

/** After SIGUSR2 (--heapsnapshot-signal): until the snapshot file in `dir` stops growing. */
async function heapSnapshot(live: Live, dir: string): Promise<void> {
  live.child.kill('SIGUSR2');
  for (let last = -1, same = 0; same < 4; await sleep(500)) {
    const f = readdirSync(dir).find((n) => n.endsWith('.heapsnapshot'));
    const bytes = f ? statSync(join(dir, f)).size : -1;
    same = bytes > 0 && bytes === last ? same + 1 : 0;
    last = bytes;
  }
}

const syncOptions = () => ({ size, interval: v.interval!, window: v.window!, ...(v.workers ? { workers: v.workers } : {}) });

async function main() {
  // The controllers run as their container runs them: compiled JavaScript, the bundle (node bin/esi.js).
  build(ROOT);
  const here = thisTree(ROOT);
  const base = v.baseline ? baselineTree(ROOT, v.baseline) : undefined;
  const machine = machineInfo();
  console.log(`machine: ${machine.cpuModel}, ${availableParallelism()} cores, node ${machine.node}, load ${machine.loadAverage}`);
  const opts = syncOptions();
  const results: SyncResult[] = [];
  const variants: Run[] = (v['node-options'] ?? [undefined]).map((n) => ({ tree: here, ...(n !== undefined ? { nodeOptions: n === 'none' ? '' : n } : {}) }));
  if (!v['hostile-only'] && !v['cgroup-only']) results.push(...(await unconstrained([{ tree: here }], here, base)));
  const noCgroup = v['no-cgroup'] ? '--no-cgroup' : cgroupUnavailable();
  let cgroup: MemoryCgroup | undefined;
  let live: Live | undefined;
  try {
    if (!noCgroup) {
      // One group per run: its peak and OOM count are that run's alone. The baseline first,
      // so this tree's last variant is the one the later steps use.
      const runs: Run[] = base ? [{ tree: base }, ...variants] : variants;
      for (const [i, run] of runs.entries()) {
        cgroup?.remove();
        cgroup = memoryCgroup(`esi-bench-controller-${process.pid}-${i}`, parseQuantity(limit));
        const last = i === runs.length - 1;
        const sync = await firstSync({ ...opts, ...run, cgroup, keep: last && !v['first-sync-only'] });
        results.push(sync.result);
        live = sync.live;
      }
    } else console.log(`no memory cgroup step: ${noCgroup}`);
    if (!v['hostile-only']) console.log(`\n${textTable(...sideBySide(results, chartLimit))}`);
    const oom = results.some((r) => r.inCgroup && (r.died || r.inCgroup.oomKills > 0));
    if (oom) process.exitCode = 1;
    if (v['first-sync-only']) {
      if (v['hostile-only']) await hostileOnly(machine, here);
      return;
    }
    if (!live) throw new Error('no controller left running for the later steps (see above)');
    await laterSteps(live, results, machine, cgroup!);
  } finally {
    await live?.stop();
    cgroup?.remove();
  }
}


/** The first syncs outside any cgroup: the baseline and this tree's variants, alternating. */
async function unconstrained(variants: Run[], here: Tree, base: Tree | undefined): Promise<SyncResult[]> {
  const results: SyncResult[] = [];
  const opts = syncOptions();
  // A/B, then B/A: both trees see the machine's load drift alike.
  const order: Run[] = base
    ? Array.from({ length: Number(v.rounds) }, (_, i) => (i % 2 ? [...variants, { tree: base }] : [{ tree: base }, ...variants])).flat()
    : Array.from({ length: Number(v.rounds) }, (_, i) => (i % 2 ? [...variants].reverse() : variants)).flat();
  for (const [i, run] of order.entries()) {
    const { tree } = run;
    const profiled = v.profile && tree === here && !order.slice(0, i).some((r) => r.tree === here);
    const sync = await firstSync({ ...opts, ...run, keep: !!profiled, ...(profiled ? { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${v.profile}`, `--diagnostic-dir=${v.profile}`, '--heapsnapshot-signal=SIGUSR2'] } : {}) });
    results.push(sync.result);
    if (sync.live) {
      await heapSnapshot(sync.live, v.profile!);
      await sync.live.stop();
    }
  }
  return results;
}

/** On the controller in the cgroup, after its first sync: one idle cycle, a changed value, the hostile step. */
async function laterSteps(live: Live, results: SyncResult[], machine: ReturnType<typeof machineInfo>, cgroup: MemoryCgroup): Promise<void> {
  const { rest, port, child, plan } = live;
  // One idle refresh cycle, aligned to the refresh grid (multiples of the interval since
  // the epoch; each object refreshes up to the jitter span before a grid point): from 5 s
  // after a grid point to 5 s after the next one, so exactly one cycle is counted.
  const intervalMs = intervalS * 1000;
  // Events of the first sync drain at their own rate behind it: start once writes stop.
  for (let last = -1, same = 0; same < 3; await sleep(1000)) {
    const w = await metric(port, 'esi_controller_apiserver_writes_total');
    same = w === last ? same + 1 : 0;
    last = w;
  }
  await sleep(Math.ceil(Date.now() / intervalMs) * intervalMs + 5000 - Date.now());
  const counters = () => Promise.all([metric(port, 'esi_controller_apiserver_writes_total'), metric(port, 'esi_controller_provider_calls_total'), metric(port, 'esi_controller_syncs_total', 'result="unchanged"')]);
  const [w0, c0, u0] = await counters();
  const rss: number[] = [];
  const idleEnd = Date.now() + intervalMs;
  while (Date.now() < idleEnd) {
    await sleep(1000);
    rss.push(rssMiB(child.pid!));
  }
  const [w1, c1, u1] = await counters();
  rss.sort((a, b) => a - b);
  const steady = rss[Math.floor(rss.length / 2)]!;
  console.log(`idle cycle (${intervalS} s, grid-aligned): ${w1 - w0} writes, ${c1 - c0} provider calls, ${u1 - u0} unchanged reconciles; steady RSS ${steady.toFixed(0)} MiB`);

  // A changed remote value: the store's value of one key changes; time until its Secret has it.
  const [target, keys] = [...plan].find(([, k]) => k.includes(keyName(7)))!;
  const [ns, name] = target.split('/') as [string, string];
  const path = `/apis/${API_GROUP}/v1/clustersecretstores/${STORE}`;
  const current = await rest.get<{ metadata: object; spec: { provider: { fake: { data: { key: string; value: string }[] } } } }>(path);
  const newValue = storeData(size.keys)[7]!.value;
  current.spec.provider.fake.data[7]!.value = newValue;
  const t = Date.now();
  await rest.replace(path, current);
  const want = Buffer.from(newValue).toString('base64');
  const secretKey = `k${keys.indexOf(keyName(7))}`;
  for (;;) {
    const s = await rest.get<{ data?: Record<string, string> }>(`/api/v1/namespaces/${ns}/secrets/${name}`);
    if (s.data?.[secretKey] === want) break;
    await sleep(100);
  }
  const changed = (Date.now() - t) / 1000;
  console.log(`changed value reached Secret ${target} in ${changed.toFixed(2)} s`);
  const r = results.at(-1)!;
  const peak = live.peak();
  const cgroupPeak = cgroup.peakBytes() / 2 ** 20;
  const rows = [
    ['ExternalSecrets / namespaces / distinct keys', `${size.externalSecrets} / ${size.namespaces} / ${size.keys}`, ''],
    ['controller start → all Ready', `${r.allReadyS.toFixed(1)} s`, `≤ 60 s: ${r.allReadyS <= 60 ? 'MET' : 'MISSED'}`],
    ['peak RSS, first sync', `${r.peakRssMiB.toFixed(0)} MiB`, `≤ 160 MiB: ${r.peakRssMiB <= 160 ? 'MET' : 'MISSED'}`],
    ['peak RSS, whole run / cgroup peak (RSS + page cache)', `${peak.toFixed(0)} MiB / ${cgroupPeak.toFixed(0)} MiB`, `limit ${limit}; OOM kills: ${cgroup.oomKills()}`],
    ['steady RSS (median, idle cycle)', `${steady.toFixed(0)} MiB`, ''],
    ['CPU during the first sync: controller / kube-apiserver', `${r.cpu.controller.toFixed(1)} s / ${r.cpu.apiserver.toFixed(1)} s`, `utime + stime; controller ≤ 11 s: ${r.cpu.controller <= 11 ? 'MET' : 'MISSED'}`],
    ['provider calls, first sync', String(r.providerCalls), `≤ ${size.keys}: ${r.providerCalls <= size.keys ? 'MET' : 'MISSED'}`],
    ['apiserver writes, first sync', String(r.writes), `Secrets + status + ${r.events} Events (rate-limited)`],
    [`apiserver writes, one idle refresh cycle (${intervalS} s)`, String(w1 - w0), `0: ${w1 - w0 === 0 ? 'MET' : 'MISSED'}`],
    ['provider calls, one idle refresh cycle', String(c1 - c0), `≤ ${size.keys}: ${c1 - c0 <= size.keys ? 'MET' : 'MISSED'}`],
    ['reconciles in that cycle (unchanged)', String(u1 - u0), ''],
    ['changed store value → its Secret', `${changed.toFixed(2)} s`, 'store change re-queues its ExternalSecrets'],
  ];
  console.log(`\n${textTable(['measure', 'value', 'budget'], rows)}`);
  // Written before the hostile step: its failure must not lose these figures.
  if (!v['no-write']) writeController(results, rows, machine);
  await writeHostile(await hostileStep(rest, CLASS, port), machine);
}

/** The "Controller" section of BENCHMARKS.md. */
function writeController(results: SyncResult[], rows: string[][], machine: ReturnType<typeof machineInfo>): void {
  const [head, body] = sideBySide(results, chartLimit);
  writeSection(join(ROOT, 'BENCHMARKS.md'), 'Controller', `_Written by \`npm run bench:controller\` (bench/controller/run.ts); the runner replaces this whole section._

The reconciler (compiled: \`node bin/esi.js controller\`, leader election off) against a private
kube-apiserver + etcd on the same machine, a fresh one for each first sync. ${size.externalSecrets} ExternalSecrets over ${size.namespaces} namespaces, each reading
1–5 of ${size.keys} keys of one fake ClusterSecretStore, exist before the controller starts; refreshInterval
${v.interval}, coalescing window ${v.window}. "All Ready" is the controller's synced count reaching ${size.externalSecrets}, confirmed by
listing the ExternalSecrets through the API. RSS from /proc every 250 ms; CPU is utime + stime of the
controller's process (all its threads) from its start to all Ready. The memory limit is a cgroup v1 memory
group at the chart's \`controller.resources.limits.memory\` (${chartLimit}); its peak counts page cache too.
The rule drawn from these figures is in docs/controller.md ("Memory").

### Machine

${machineMarkdown(machine)}

### First sync, side by side

${markdownTable(head, body)}

### This tree inside the chart's limit

${markdownTable(['Measure', 'Value', 'Budget'], rows)}
`);
}

/** `--hostile-only`: the step alone, on an empty corpus. */
async function hostileOnly(machine: ReturnType<typeof machineInfo>, here: Tree): Promise<void> {
  const { live } = await firstSync({ size, interval: v.interval!, window: v.window!, tree: here, keep: true });
  try {
    await writeHostile(await hostileStep(live!.rest, CLASS, live!.port), machine);
  } finally {
    await live!.stop();
  }
}

/** The "Controller: hostile templates" section of BENCHMARKS.md. */
async function writeHostile(rows: string[][], machine: ReturnType<typeof machineInfo>): Promise<void> {
  console.log(`\n${textTable(['measure', 'value', 'note'], rows)}`);
  if (v['no-write']) return;
  writeSection(join(ROOT, 'BENCHMARKS.md'), 'Controller: hostile templates', `_Written by \`npm run bench:controller\` (bench/controller/hostile.ts; alone: \`-- --hostile-only\`); the runner replaces this whole section._

The reconciler (compiled, default \`--render-workers 2 --render-timeout 2s\`) serving 20 ordinary
ExternalSecrets (a Go template each) in one namespace; the latency is from a change of their
SecretStore to all 20 Secrets holding the new value. Then 20 ExternalSecrets whose Go template
loops are created in another namespace and the same is measured (docs/decisions/0087-templating-engines.md).

### Machine

${machineMarkdown(machine)}
- nproc: ${availableParallelism()}

### Results

${markdownTable(['Measure', 'Value', 'Note'], rows)}
`);
}

main().catch((err: Error) => {
  console.error(`bench:controller failed: ${err.stack ?? err.message}`);
  process.exit(1);
});
