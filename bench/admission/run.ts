// `npm run bench:admission`: latency of the admission webhook under load.
// Starts the real webhook HTTPS server in one process (server.ts) and a load generator in a
// second one (loadgen.ts), runs fixed-rate phases and a closed-loop saturation phase, prints
// a table and rewrites the "Admission webhook" section of BENCHMARKS.md.
import { get } from 'node:https';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BenchChild } from '../lib/child.js';
import { coresBusy, cpuSample, waitForQuiet, type CpuSample } from '../lib/cpustat.js';
import type { LoadResult } from '../lib/load.js';
import { machineInfo, type MachineInfo } from '../lib/machine.js';
import { diffHistogram, histogramQuantile, parseHistogram, type HistogramSnapshot } from '../lib/prometheus.js';
import { writeSection } from '../lib/markdown.js';
import { buildCorpus, preflight } from './corpus.js';
import { contention, renderSection, renderTerminal, type PhaseReport, type RunReport } from './report.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../..');
const METRIC = 'esi_admission_duration_seconds';

const HELP = `Usage: npm run bench:admission -- [options]

  --rates LIST        fixed rates in req/s (default 100,250,500,750)
  --duration S        measured seconds per phase (default 15)
  --warmup S          discarded seconds at the start of each phase (default 3)
  --connections N     connections of the closed-loop saturation phase (default 16)
  --arrivals KIND     uniform (default) or poisson inter-arrival times
  --lookup KIND       indexed (default; keyed maps like the informer caches) or manifest (esi inject's linear ManifestLookup)
  --quick             smoke run: 3 s phases, 1 s warm-ups; BENCHMARKS.md is not written
  --no-write          do not rewrite BENCHMARKS.md
  --cpu-prof          write a V8 CPU profile of the server process to bench/admission/.profiles/
  --server-node-arg A node flag for the server process (repeatable), e.g. --max-semi-space-size=32
  --wait-quiet S      first wait up to S seconds for other processes to use < 0.3 cores (default 0: warn only)
  --write-anyway      rewrite BENCHMARKS.md even when other processes disturbed the run
`;

interface ServerInfo {
  port: number;
  caPem: string;
  lookup: string;
  objects: Record<string, number>;
}

interface ServerStats {
  cpu: NodeJS.CpuUsage;
  elu: number;
  rss: number;
  heapUsed: number;
  loopDelay: { p99Ms: number; maxMs: number };
  gc: { count: number; totalMs: number; maxMs: number; major: number };
}

function scrape(port: number, ca: string): Promise<string> {
  return new Promise((ok, fail) => {
    get({ host: '127.0.0.1', port, path: '/metrics', ca, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => (res.statusCode === 200 ? ok(text) : fail(new Error(`/metrics: HTTP ${res.statusCode}`))));
    }).on('error', fail);
  });
}

class Phases {
  readonly reports: PhaseReport[] = [];

  constructor(private readonly server: BenchChild, private readonly load: BenchChild, private readonly info: ServerInfo) {}

  private async snapshot(): Promise<{ stats: ServerStats; hist: HistogramSnapshot; at: number; cpu: CpuSample }> {
    const [stats, text] = await Promise.all([this.server.call<ServerStats>({ type: 'stats' }), scrape(this.info.port, this.info.caPem)]);
    return { stats, hist: parseHistogram(text, METRIC), at: performance.now(), cpu: cpuSample() };
  }

  async run(name: string, call: { type: string; [k: string]: unknown }): Promise<PhaseReport> {
    process.stdout.write(`  ${name} … `);
    const before = await this.snapshot();
    const load = await this.load.call<LoadResult>(call);
    const after = await this.snapshot();
    const hist = diffHistogram(after.hist, before.hist);
    const cpuUs = after.stats.cpu.user + after.stats.cpu.system - before.stats.cpu.user - before.stats.cpu.system;
    const serverCpuPercent = (cpuUs / 1000 / (after.at - before.at)) * 100;
    const machine = coresBusy(before.cpu, after.cpu);
    const report: PhaseReport = {
      name, load,
      machine: { otherCores: Math.max(0, machine.busy - (serverCpuPercent + load.generatorCpuPercent) / 100), stealCores: machine.steal },
      server: {
        p99Ms: (histogramQuantile(0.99, hist)?.value ?? 0) * 1000,
        p99BucketMs: (histogramQuantile(0.99, hist)?.bucketUpper ?? 0) * 1000,
        p50Ms: (histogramQuantile(0.5, hist)?.value ?? 0) * 1000,
        meanMs: hist.count ? (hist.sum / hist.count) * 1000 : 0,
        observations: hist.count,
        cpuPercent: serverCpuPercent,
        cpuMsPerRequest: hist.count ? cpuUs / 1000 / hist.count : 0,
        elu: after.stats.elu,
        loopDelay: after.stats.loopDelay,
        gc: after.stats.gc,
        rssMiB: after.stats.rss / 1024 ** 2,
      },
    };
    this.reports.push(report);
    const l = load.latencyMs;
    process.stdout.write(`${load.throughput.toFixed(0)} req/s, p50 ${l.p50.toFixed(2)} ms, p99 ${l.p99.toFixed(2)} ms, max ${l.max.toFixed(2)} ms, ` +
      `errors ${load.errors + load.non2xx + load.invalid}, CPU server ${report.server.cpuPercent.toFixed(0)} % / client ${load.generatorCpuPercent.toFixed(0)} %, ` +
      `in flight ≤${load.maxInFlight}, new conns ${load.newConnections}, send lag max ${(load.scheduleLagMs?.max ?? 0).toFixed(0)} ms, ` +
      `server loop delay max ${report.server.loopDelay.maxMs.toFixed(0)} ms, GC max ${report.server.gc.maxMs.toFixed(0)} ms (${report.server.gc.major} major), ` +
      `other processes ${report.machine.otherCores.toFixed(2)} cores\n`);
    for (const p of load.problems.slice(0, 3)) process.stdout.write(`    ! ${p}\n`);
    if (load.overloaded) process.stdout.write(`    ! overloaded: stopped after ${load.overloaded.afterS.toFixed(1)} s with ${load.overloaded.inFlight} requests in flight\n`);
    return report;
  }
}

function options() {
  const { values } = parseArgs({
    options: {
      rates: { type: 'string', default: '100,250,500,750' },
      duration: { type: 'string', default: '15' },
      warmup: { type: 'string', default: '3' },
      connections: { type: 'string', default: '16' },
      arrivals: { type: 'string', default: 'uniform' },
      lookup: { type: 'string', default: 'indexed' },
      quick: { type: 'boolean', default: false },
      'no-write': { type: 'boolean', default: false },
      'cpu-prof': { type: 'boolean', default: false },
      'server-node-arg': { type: 'string', multiple: true, default: [] },
      'wait-quiet': { type: 'string', default: '0' },
      'write-anyway': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (!['uniform', 'poisson'].includes(values.arrivals!)) throw new Error('--arrivals must be uniform or poisson');
  if (!['indexed', 'manifest'].includes(values.lookup!)) throw new Error('--lookup must be indexed or manifest');
  return {
    help: values.help ?? false,
    rates: values.rates!.split(',').map(Number).filter((n) => n > 0),
    durationMs: (values.quick ? 3 : Number(values.duration)) * 1000,
    warmupMs: (values.quick ? 1 : Number(values.warmup)) * 1000,
    connections: Number(values.connections),
    arrivals: values.arrivals!,
    lookup: values.lookup!,
    write: !values.quick && !values['no-write'],
    cpuProf: values['cpu-prof'] ?? false,
    serverNodeArgs: values['server-node-arg'] ?? [],
    waitQuietS: Number(values['wait-quiet']),
    writeAnyway: values['write-anyway'] ?? false,
    quick: values.quick ?? false,
  };
}

async function bench(opts: ReturnType<typeof options>, machine: MachineInfo): Promise<RunReport> {
  const profDir = join(HERE, '.profiles');
  const server = BenchChild.start('server', join(HERE, 'server.ts'), {
    cwd: ROOT, stdout: 'ignore', args: ['--lookup', opts.lookup],
    nodeArgs: [...opts.serverNodeArgs, ...(opts.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [])],
    env: { ...process.env, ESI_LOG_LEVEL: process.env.ESI_LOG_LEVEL ?? 'info' },
  });
  const load = BenchChild.start('loadgen', join(HERE, 'loadgen.ts'), { cwd: ROOT });
  try {
    await Promise.all([server.ready, load.ready]);
    const info = await server.call<ServerInfo>({ type: 'info' });
    const corpus = await load.call<RunReport['corpus']>({ type: 'init', url: `https://127.0.0.1:${info.port}/mutate`, caPem: info.caPem });
    console.log(`server pid ${server.pid} on https://127.0.0.1:${info.port}, loadgen pid ${load.pid}; ${corpus.reviews} reviews (${corpus.minBytes}–${corpus.maxBytes} bytes)`);
    const phases = new Phases(server, load, info);
    const warm = opts.quick ? 1000 : 5000;
    console.log(`warm-up: ${warm / 1000} s at 200 req/s (not reported)`);
    await load.call<LoadResult>({ type: 'rate', rate: 200, warmupMs: warm, durationMs: 100, arrivals: opts.arrivals });
    for (const rate of opts.rates) {
      const r = await phases.run(`${rate} req/s`, { type: 'rate', rate, warmupMs: opts.warmupMs, durationMs: opts.durationMs, arrivals: opts.arrivals });
      if (r.load.overloaded) {
        const rest = opts.rates.filter((x) => x > rate);
        if (rest.length) console.log(`  overloaded at ${rate} req/s: skipping ${rest.join(', ')} req/s`);
        break;
      }
    }
    await phases.run(`saturation (${opts.connections} conns)`, { type: 'closed', connections: opts.connections, warmupMs: opts.warmupMs, durationMs: opts.durationMs });
    const deepChecks = await load.call<number>({ type: 'deepChecks' });
    return { machine, phases: phases.reports, corpus, objects: info.objects, deepChecks, settings: { ...opts } };
  } finally {
    await Promise.all([load.stop(), server.stop()]);
    if (opts.cpuProf) console.log(`CPU profile of the server written to ${profDir}/ (open in Chrome DevTools → Performance)`);
  }
}

async function main(): Promise<number> {
  const opts = options();
  if (opts.help) return (process.stdout.write(HELP), 0);
  const machine = machineInfo();
  console.log(`Admission webhook benchmark on ${machine.cpuModel} (${machine.cores} cores), Node ${machine.node}`);
  const started = performance.now();
  const problems = preflight(buildCorpus());
  if (problems.length) {
    console.error(`The corpus no longer gets the answers its pod shapes expect (${problems.length} reviews), so the numbers would be wrong:`);
    for (const p of problems.slice(0, 10)) console.error(`  ${p}`);
    console.error('Fix the fixtures in bench/admission/cluster.ts / corpus.ts to follow the admission rules.');
    return 2;
  }
  const quiet = await waitForQuiet(0.3, opts.waitQuietS * 1000, 3000, (cores) => console.log(`  machine busy: other processes use ${cores.toFixed(2)} cores; waiting…`));
  if (quiet > 0.3) console.warn(`WARNING: other processes use ${quiet.toFixed(2)} of ${machine.cores} cores; the results will be disturbed (see the "Other load" column; --wait-quiet S waits).`);
  const report = await bench(opts, { ...machine, loadAverage: machineInfo().loadAverage });
  console.log(`\n${renderTerminal(report)}\n`);
  if (opts.write && contention(report) && !opts.writeAnyway) {
    console.log('BENCHMARKS.md left alone: other processes disturbed the run (--write-anyway to record it regardless)');
  } else if (opts.write) {
    writeSection(join(ROOT, 'BENCHMARKS.md'), 'Admission webhook', renderSection(report));
    console.log('BENCHMARKS.md: section "Admission webhook" rewritten');
  }
  console.log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  const failed = report.phases.some((p) => p.load.errors + p.load.non2xx + p.load.invalid > 0);
  return failed ? 1 : 0;
}

main().then((code) => process.exit(code), (err) => {
  console.error(err);
  process.exit(2);
});
