// `npm run bench:controller`: the reconciler at scale on the real local apiserver with the
// fake store. 10 000 ExternalSecrets over 100 namespaces (1–5 keys each, 2 000 distinct
// remote keys) exist before `esi controller` starts; measured: start → all Ready, peak and
// steady RSS, apiserver writes and provider calls during one idle refresh cycle, provider
// calls for the 2 000 keys, and the time for a changed value to reach its Secret.
// Then the "hostile templates" step (hostile.ts): normal ExternalSecrets' sync latency with
// and without 20 looping templates next to them.
// Options: --es N --namespaces N --keys N --interval DUR --no-write (print only);
// --hostile-only runs the hostile templates step alone (no corpus).
import { KubeConfig } from '@kubernetes/client-node';
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { API_GROUP } from '../../src/api/types.js';
import { KubeRest } from '../../src/kube/rest.js';
import { startControlPlane } from '../../test/platform/control-plane-process.js';
import { freePort } from '../../test/platform/processes.js';
import { machineInfo, machineMarkdown } from '../lib/machine.js';
import { markdownTable, textTable, writeSection } from '../lib/markdown.js';
import { CLASS, createCorpus, createStore, keyName, STORE, storeData } from './corpus.js';
import { hostileStep } from './hostile.js';

const ROOT = join(import.meta.dirname, '..', '..');
const { values: v } = parseArgs({ options: {
  es: { type: 'string', default: '10000' }, namespaces: { type: 'string', default: '100' }, keys: { type: 'string', default: '2000' },
  interval: { type: 'string', default: '60s' }, window: { type: 'string', default: '30s' }, 'no-write': { type: 'boolean' },
  // Writes a CPU profile of the controller (on exit) and a heap snapshot at "all Ready" into DIR.
  profile: { type: 'string' },
  workers: { type: 'string' },
  // Stops after the first sync (while iterating on it); implies --no-write.
  'first-sync-only': { type: 'boolean' },
  'hostile-only': { type: 'boolean' },
} });
if (v['hostile-only']) Object.assign(v, { es: '0', 'first-sync-only': true });
const size = { externalSecrets: Number(v.es), namespaces: Number(v.namespaces), keys: Number(v.keys) };
const intervalS = Number(/^(\d+)s$/.exec(v.interval!)?.[1] ?? NaN);
if (!Number.isFinite(intervalS)) throw new Error('--interval must be in seconds, e.g. 60s');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rssMiB = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
};

/** utime + stime of a process, in seconds (/proc/PID/stat fields 14 and 15, USER_HZ = 100). */
const cpuSeconds = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};

/** The pid of this plane's kube-apiserver: the one whose --cert-dir is under `dir`. */
function apiserverPid(dir: string): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmd.includes('kube-apiserver') && cmd.includes(`--cert-dir=${join(dir, 'certs')}`)) return Number(entry);
    } catch {
      // The process ended while we looked.
    }
  }
  throw new Error('kube-apiserver process not found');
}

async function metric(port: number, name: string, match = ''): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `)).filter((l) => l.includes(match))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** Until the controller's /readyz answers 200. */
async function waitReady(port: number, child: { exitCode: number | null }): Promise<void> {
  while (!(await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false))) {
    if (child.exitCode !== null) throw new Error('controller exited');
    await sleep(250);
  }
}

async function main() {
  // The controller runs as its container runs it: compiled JavaScript (node bin/esi.js).
  const build = spawnSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build failed');
  const machine = machineInfo();
  console.log(`machine: ${machine.cpuModel}, ${availableParallelism()} cores, node ${machine.node}, load ${machine.loadAverage}`);
  const cp = await startControlPlane(await mkdtemp(join(tmpdir(), 'esi-bench-ctl-')));
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  const rest = new KubeRest(kc, { maxSockets: 64 });
  try {
    const { installCrds } = await import('../../src/api/crds.js');
    await installCrds(kc);
    await createStore(rest, size.keys);
    let t = Date.now();
    const plan = await createCorpus(rest, size, v.interval!);
    console.log(`created ${size.externalSecrets} ExternalSecrets in ${size.namespaces} namespaces in ${((Date.now() - t) / 1000).toFixed(1)} s`);
    const port = await freePort();
    const apiPid = apiserverPid(cp.dir);
    const profile = v.profile ? ['--cpu-prof', `--cpu-prof-dir=${v.profile}`, `--diagnostic-dir=${v.profile}`, '--heapsnapshot-signal=SIGUSR2'] : [];
    const api0 = cpuSeconds(apiPid);
    t = Date.now();
    const child = spawn(process.execPath, [...profile, 'bin/esi.js', 'controller', '--kubeconfig', cp.kubeconfigPath,
      '--controller-class', CLASS, '--claim-unclassed=false', '--leader-elect=false', '--listen', '127.0.0.1', '--port', String(port), '--metrics-secure=false',
      '--coalesce-window', v.window!, ...(v.workers ? ['--workers', v.workers] : [])], { cwd: ROOT, env: { ...process.env, ESI_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'inherit'] });
    await waitReady(port, child);
    let peak = 0;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(child.pid!))), 250);
    let synced = 0;
    while (synced < size.externalSecrets) {
      await sleep(250);
      synced = await metric(port, 'esi_controller_syncs_total', 'result="synced"').catch(() => 0);
      if (child.exitCode !== null) throw new Error('controller exited');
    }
    const allReady = (Date.now() - t) / 1000;
    const cpu = { controller: cpuSeconds(child.pid!), apiserver: cpuSeconds(apiPid) - api0 };
    console.log(`first sync CPU: controller ${cpu.controller.toFixed(1)} s, kube-apiserver ${cpu.apiserver.toFixed(1)} s`);
    const firstCalls = await metric(port, 'esi_controller_provider_calls_total');
    const firstWrites = await metric(port, 'esi_controller_apiserver_writes_total');
    const firstEvents = await metric(port, 'esi_controller_apiserver_writes_total', 'resource="events"');
    // Confirm through the API, as a user would.
    const list = await rest.get<{ items: { status?: { conditions?: { type: string; status: string }[] } }[] }>(`/apis/${API_GROUP}/v1/externalsecrets`);
    const ready = list.items.filter((es) => es.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
    console.log(`all ${size.externalSecrets} synced in ${allReady.toFixed(1)} s (${ready} Ready via the API); ${firstCalls} provider calls; ${firstWrites} writes; peak RSS ${peak.toFixed(0)} MiB`);

    if (v.profile) child.kill('SIGUSR2'); // heap snapshot into the profile directory
    if (v['first-sync-only']) {
      await hostileOnly(rest, port, machine);
      clearInterval(sampler);
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
      return;
    }
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
    const [w0, c0, u0] = await Promise.all([metric(port, 'esi_controller_apiserver_writes_total'), metric(port, 'esi_controller_provider_calls_total'), metric(port, 'esi_controller_syncs_total', 'result="unchanged"')]);
    const rss: number[] = [];
    const idleEnd = Date.now() + intervalMs;
    while (Date.now() < idleEnd) {
      await sleep(1000);
      rss.push(rssMiB(child.pid!));
    }
    const [w1, c1, u1] = await Promise.all([metric(port, 'esi_controller_apiserver_writes_total'), metric(port, 'esi_controller_provider_calls_total'), metric(port, 'esi_controller_syncs_total', 'result="unchanged"')]);
    rss.sort((a, b) => a - b);
    const steady = rss[Math.floor(rss.length / 2)]!;
    console.log(`idle cycle (${intervalS} s, grid-aligned): ${w1 - w0} writes, ${c1 - c0} provider calls, ${u1 - u0} unchanged reconciles; steady RSS ${steady.toFixed(0)} MiB`);

    // A changed remote value: the store's value of one key changes; time until its Secret has it.
    const [target, keys] = [...plan].find(([, k]) => k.includes(keyName(7)))!;
    const [ns, name] = target.split('/') as [string, string];
    const data = storeData(size.keys);
    const store = await rest.get<{ metadata: { resourceVersion: string } }>(`/apis/${API_GROUP}/v1/clustersecretstores/${STORE}`);
    const current = await rest.get<{ spec: { provider: { fake: { data: { key: string; value: string }[] } } } }>(`/apis/${API_GROUP}/v1/clustersecretstores/${STORE}`);
    const newValue = data[7]!.value;
    current.spec.provider.fake.data[7]!.value = newValue;
    t = Date.now();
    await rest.replace(`/apis/${API_GROUP}/v1/clustersecretstores/${STORE}`, { ...current, metadata: { ...(current as never as { metadata: object }).metadata, resourceVersion: store.metadata.resourceVersion } });
    const want = Buffer.from(newValue).toString('base64');
    const secretKey = `k${keys.indexOf(keyName(7))}`;
    for (;;) {
      const s = await rest.get<{ data?: Record<string, string> }>(`/api/v1/namespaces/${ns}/secrets/${name}`);
      if (s.data?.[secretKey] === want) break;
      await sleep(100);
    }
    const changed = (Date.now() - t) / 1000;
    console.log(`changed value reached Secret ${target} in ${changed.toFixed(2)} s`);
    const hostileRows = await hostileStep(rest, CLASS, port);
    clearInterval(sampler);
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;

    const rows = [
      ['ExternalSecrets / namespaces / distinct keys', `${size.externalSecrets} / ${size.namespaces} / ${size.keys}`, ''],
      ['controller start → all Ready', `${allReady.toFixed(1)} s`, `≤ 60 s: ${allReady <= 60 ? 'MET' : 'MISSED'}`],
      ['peak RSS', `${peak.toFixed(0)} MiB`, `≤ 256 MiB: ${peak <= 256 ? 'MET' : 'MISSED'}`],
      ['steady RSS (median, idle cycle)', `${steady.toFixed(0)} MiB`, ''],
      ['CPU during the first sync: controller / kube-apiserver', `${cpu.controller.toFixed(1)} s / ${cpu.apiserver.toFixed(1)} s`, 'utime + stime'],
      ['provider calls, first sync', String(firstCalls), `≤ ${size.keys}: ${firstCalls <= size.keys ? 'MET' : 'MISSED'}`],
      ['apiserver writes, first sync', String(firstWrites), `Secrets + status + ${firstEvents} Events (rate-limited)`],
      [`apiserver writes, one idle refresh cycle (${intervalS} s)`, String(w1 - w0), `0: ${w1 - w0 === 0 ? 'MET' : 'MISSED'}`],
      ['provider calls, one idle refresh cycle', String(c1 - c0), `≤ ${size.keys}: ${c1 - c0 <= size.keys ? 'MET' : 'MISSED'}`],
      ['reconciles in that cycle (unchanged)', String(u1 - u0), ''],
      ['changed store value → its Secret', `${changed.toFixed(2)} s`, 'store change re-queues its ExternalSecrets'],
    ];
    console.log(`\n${textTable(['measure', 'value', 'budget'], rows)}`);
    if (!v['no-write']) {
      writeSection(join(ROOT, 'BENCHMARKS.md'), 'Controller', `_Written by \`npm run bench:controller\` (bench/controller/run.ts); the runner replaces this whole section._

The reconciler (compiled: \`node bin/esi.js controller\`, leader election off) against a private
kube-apiserver + etcd on the same machine. ${size.externalSecrets} ExternalSecrets over ${size.namespaces} namespaces, each reading
1–5 of ${size.keys} keys of one fake ClusterSecretStore, exist before the controller starts; refreshInterval
${v.interval}, coalescing window ${v.window}. "All Ready" is the controller's synced count reaching ${size.externalSecrets}, confirmed by
listing the ExternalSecrets through the API. RSS from /proc every 250 ms.

### Machine

${machineMarkdown(machine)}

### Results

${markdownTable(['Measure', 'Value', 'Budget'], rows)}
`);
      await writeHostile(hostileRows, machine);
    }
  } finally {
    rest.close();
    await cp.stop();
  }
}

/** `--hostile-only` (which implies --first-sync-only, on an empty corpus): the step alone. */
async function hostileOnly(rest: KubeRest, port: number, machine: ReturnType<typeof machineInfo>): Promise<void> {
  if (v['hostile-only']) await writeHostile(await hostileStep(rest, CLASS, port), machine);
}

/** The "Controller: hostile templates" section of BENCHMARKS.md. */
async function writeHostile(rows: string[][], machine: ReturnType<typeof machineInfo>): Promise<void> {
  console.log(`\n${textTable(['measure', 'value', 'note'], rows)}`);
  if (v['no-write']) return;
  writeSection(join(ROOT, 'BENCHMARKS.md'), 'Controller: hostile templates', `_Written by \`npm run bench:controller\` (bench/controller/hostile.ts; alone: \`-- --hostile-only\`); the runner replaces this whole section._

The reconciler (compiled, default \`--render-workers 2 --render-timeout 2s\`) serving 20 ordinary
ExternalSecrets (a Go template each) in one namespace; the latency is from a change of their
SecretStore to all 20 Secrets holding the new value. Then 20 ExternalSecrets whose Go template
loops are created in another namespace and the same is measured (docs/decisions/0051-render-pool.md).

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
