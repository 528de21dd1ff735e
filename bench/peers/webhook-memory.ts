// The ESI webhook's memory, A/B: saved builds of `esi` (each a bin/esi.js beside its own
// dist/bundle) run in turn against one local kube-apiserver holding the peers benchmark's
// cluster (webhooks.ts), A/B/B/A per round so a change of the background load hits both. Per
// run: RSS and RssAnon idle after cache sync, then the peak over a fixed-rate step and a short
// saturation step (the same load generator and pod as `npm run bench:peers`). With
// --snapshot DIR, each run also writes a heap snapshot after sync (SIGUSR2, node's
// --heapsnapshot-signal) that bench/lib/heapsnapshot.ts summarises.
// docs/performance/webhook-memory.md is the diary these runs went into.
//
// Each variant runs with the node flags it names only (not the chart's webhook.nodeFlags):
// `--variant B=.@--optimize-for-size` is the chart's default command line.
//
//   npm run build && mkdir -p dist/variants/A && cp -r bin dist/bundle dist/variants/A/
//   tsx bench/peers/webhook-memory.ts --variant A=dist/variants/A --variant B=.[@--node-flag][@esi:--webhook-flag] [--rounds 2]
//     [--rate 500] [--seconds 8] [--snapshot DIR] [--node-args "--flag ..."]
//   A variant's `@node=PATH` runs it on another node binary (e.g. `--variant n20=.@node=/usr/bin/node`).
import { KubeConfig } from '@kubernetes/client-node';
import { mkdtemp, readdir } from 'node:fs/promises';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startControlPlane } from '../../test/support/platform/control-plane-process.js';
import { freePort } from '../../test/support/platform/processes.js';
import { closedLoop, fixedRate, LoadClient } from '../lib/load.js';
import { requestSource } from './pods.js';
import { memorySampler, treeCpuMs, treeMemory, type Memory } from './procstat.js';
import { startEsi, type ServerInputs } from './servers.js';
import { seed, tlsFiles } from './webhooks.js';

const { values: o } = parseArgs({
  options: {
    variant: { type: 'string', multiple: true }, rounds: { type: 'string', default: '2' }, rate: { type: 'string', default: '500' },
    seconds: { type: 'string', default: '8' }, snapshot: { type: 'string' }, 'node-args': { type: 'string', default: '' },
  },
});
const variants = (o.variant ?? []).map((v) => {
  const [name, rest] = v.split(/=(.*)/s) as [string, string];
  const [dir, ...flags] = rest.split('@');
  // `esi:FLAG` is an `esi webhook` flag (e.g. esi:--workers=2), `node=PATH` the node binary
  // (default: the images' Node.js, bench/lib/node.ts), any other a node flag.
  const esiArgs = flags.filter((f) => f.startsWith('esi:')).map((f) => f.slice(4));
  const node = flags.find((f) => f.startsWith('node='))?.slice(5);
  return { name, entry: join(resolve(dir!), 'bin', 'esi.js'), nodeArgs: flags.filter((f) => !f.startsWith('esi:') && !f.startsWith('node=')), esiArgs, node };
});
if (variants.length === 0) throw new Error('--variant NAME=DIR[@node-flag...] (DIR holds bin/esi.js and dist/bundle), at least one');
const mib = (kib: number) => (kib / 1024).toFixed(1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Row = { name: string; idle: Memory; peakRate: Memory; peakSat: Memory; satRps: number; cpuMsPerRequest: number; load: number };

/** Takes a heap snapshot of the server (node's --heapsnapshot-signal) and waits for the file. */
async function snapshot(pid: number, into: string): Promise<void> {
  const before = new Set(await readdir(into));
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 120 && (await readdir(into)).every((f) => before.has(f)); i++) await sleep(500);
  await sleep(3000); // the file appears before it is complete
}

/** One run of one variant: idle after sync, then the fixed-rate and the saturation step. */
async function oneRun(v: (typeof variants)[number], inp: ServerInputs, caPem: string): Promise<Row> {
  const snapArgs = o.snapshot ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${resolve(o.snapshot)}`] : [];
  const server = await startEsi(inp, await freePort(), [...o['node-args'].split(' ').filter(Boolean), ...v.nodeArgs, ...snapArgs], v.entry, v.esiArgs, v.node);
  try {
    await sleep(5000);
    const idle = treeMemory(server.pid);
    if (o.snapshot) await snapshot(server.pid, o.snapshot);
    const client = new LoadClient({ url: server.url, ca: caPem, maxIdleSockets: 25 });
    const source = requestSource('esi');
    const ms = Number(o.seconds) * 1000;
    let mem = memorySampler(server.pid);
    let cpu0 = 0;
    const mark = setTimeout(() => (cpu0 = treeCpuMs(server.pid)), 1000); // after the warm-up
    const fixed = await fixedRate(client, source, { rate: Number(o.rate), warmupMs: 1000, durationMs: ms });
    clearTimeout(mark);
    const cpuMsPerRequest = (treeCpuMs(server.pid) - cpu0) / Math.max(1, fixed.completed);
    const peakRate = mem.stop().peak;
    mem = memorySampler(server.pid);
    const sat = await closedLoop(client, source, { connections: 25, warmupMs: 1000, durationMs: ms / 2 });
    const peakSat = mem.stop().peak;
    client.close();
    const row = { name: v.name, idle, peakRate, peakSat, satRps: sat.throughput, cpuMsPerRequest, load: os.loadavg()[0]! };
    console.log(`${row.name}: idle RSS ${mib(idle.rssKiB)} (anon ${mib(idle.anonKiB)}) MiB; peak ${o.rate} req/s ${mib(peakRate.rssKiB)} ` +
      `(anon ${mib(peakRate.anonKiB)}), CPU ${cpuMsPerRequest.toFixed(3)} ms/req at ${fixed.throughput.toFixed(0)} req/s; peak saturation ` +
      `${mib(peakSat.rssKiB)} (anon ${mib(peakSat.anonKiB)}) at ${sat.throughput.toFixed(0)} req/s; load ${row.load.toFixed(1)}`);
    return row;
  } finally {
    await server.stop();
  }
}

const dir = await mkdtemp(join(os.tmpdir(), 'esi-webhook-memory-'));
console.log(`working directory (server logs): ${dir}`);
const cp = await startControlPlane(dir);
const rows: Row[] = [];
try {
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  console.log(`${await seed(kc)} objects created`);
  const tls = await tlsFiles(dir);
  const inp: ServerInputs = { dir, apiserver: cp.server, apiserverCa: cp.caPem, token: cp.token, kubeconfigPath: cp.kubeconfigPath, ...tls };
  const order = variants.length === 2 ? [variants[0]!, variants[1]!, variants[1]!, variants[0]!] : variants;
  for (let round = 0; round < Number(o.rounds); round++) {
    for (const v of order) {
      rows.push(await oneRun(v, inp, tls.caPem));
    }
  }
} finally {
  await cp.stop();
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log('\nmedians (MiB): variant | idle RSS | idle RssAnon | peak RSS rate | peak RSS saturation | saturation req/s | CPU ms/req at the rate');
for (const v of variants) {
  const r = rows.filter((x) => x.name === v.name);
  console.log(`${v.name} | ${mib(med(r.map((x) => x.idle.rssKiB)))} | ${mib(med(r.map((x) => x.idle.anonKiB)))} | ` +
    `${mib(med(r.map((x) => x.peakRate.rssKiB)))} | ${mib(med(r.map((x) => x.peakSat.rssKiB)))} | ${med(r.map((x) => x.satRps)).toFixed(0)} | ${med(r.map((x) => x.cpuMsPerRequest)).toFixed(3)}`);
}
