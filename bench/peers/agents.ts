// Phase (b) of `npm run bench:peers`: ESI's agent (vault provider, `node bin/esi.js agent`
// as its container runs it) against OpenBao Agent (`bao agent`), both rendering the same
// 3 KV v2 secrets into one file from the same OpenBao dev server, refreshing every 5 s.
//   start → file: spawn → the rendered file's name appears (p50 of interleaved runs);
//   steady: both agents side by side for `steadyS` seconds (the same background load for
//   both): CPU (/proc utime+stime), peak RSS and RssAnon;
//   scrape: ESI's idle CPU over `scrapeWindowS` before and after one GET /metrics.
// Node.js's floor (floor/agent.ts: a bare `node` on the agent's node binary and flags, reading
// the same secrets with node:http and writing the same file) is measured beside them, by the
// same code: its starts interleaved with theirs, its steady figures in the same window.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { createToken, startVaultServer, writePolicy, type VaultServer } from '../../test/support/platform/backends/openbao.js';
import { cpuOver, esiVaultConfig, startEach, KEYS, launchBao, launchEsi, OUT, timeToFile, value, type Running, type Starter } from './agent-launch.js';
import { runGoTemplateAgents, type GoTemplateResults } from './agents-gotemplate.js';
import { floorScript, startAgentFloor } from './floors.js';
import { memorySampler, type Memory } from './procstat.js';
import { median } from './report.js';

export type AgentKind = 'esi' | 'bao' | 'floor';
const KINDS: readonly AgentKind[] = ['esi', 'bao', 'floor'];
const FILE = 'app.conf';
/** What both agents must write. */
export const EXPECTED = KEYS.map((i) => `k${i}=${value(i)}`).join('\n') + '\n';

export interface AgentResults {
  baoVersion: string;
  startsMs: Record<AgentKind, number[]>;
  steady: Record<AgentKind, { cpuMs: number; seconds: number; peak: Memory; last: Memory; refreshes?: number }>;
  scrape: { beforeCpuMs: number; afterCpuMs: number; windowS: number; baoBeforeCpuMs: number; baoAfterCpuMs: number };
  load: { before: number[]; after: number[] };
  /** The rows with one ESO Go template (agents-gotemplate.ts). */
  goTemplate: GoTemplateResults;
}

export interface AgentOptions {
  runs: number;
  steadyS: number;
  scrapeWindowS: number;
  bao: string;
  /** Extra node flags for the ESI agent (experiments; the section records what the image runs). */
  esiNodeArgs?: string[];
  log: (line: string) => void;
}

async function startEsi(server: VaultServer, token: string, dir: string, nodeArgs: string[] = []): Promise<Running> {
  const root = join(dir, 'esi-root');
  const secret = { name: 'app', dataFrom: [], data: KEYS.map((i) => ({ secretKey: `k${i}`, remoteRef: { key: `peers/key-${i}`, property: 'value' } })) };
  const config = await esiVaultConfig(server, token, root, [secret], [{ file: FILE, template: KEYS.map((i) => `k${i}={{app.k${i}}}`).join('\n') + '\n' }]);
  return { ...launchEsi(config, root, nodeArgs), file: join(root, OUT, FILE) };
}

async function startBao(bin: string, server: VaultServer, token: string, dir: string): Promise<Running> {
  const out = join(dir, 'bao-out');
  await mkdir(out, { recursive: true });
  const contents = KEYS.map((i) => `k${i}={{ with secret "secret/data/peers/key-${i}" }}{{ .Data.data.value }}{{ end }}`).join('\n') + '\n';
  return { ...(await launchBao(bin, server, token, dir, contents, join(out, FILE))), file: join(out, FILE) };
}

export function baoVersion(bin: string): string {
  try {
    return execFileSync(bin, ['version'], { encoding: 'utf8' }).split('\n')[0]!.trim();
  } catch {
    return bin;
  }
}

export async function runAgents(opts: AgentOptions): Promise<AgentResults> {
  const teardowns: (() => unknown)[] = [];
  const load0 = os.loadavg();
  try {
    const server = await startVaultServer({ teardown: (fn) => teardowns.push(fn) });
    await writePolicy(server, 'peers-read', 'path "secret/data/peers/*" { capabilities = ["read"] }');
    for (const i of KEYS) await server.api('POST', `secret/data/peers/key-${i}`, { data: { value: value(i) } });
    const token = await createToken(server, ['peers-read'], '24h');
    // Compiled before anything is timed: the floor's start is node's, not esbuild's.
    const scripts = await mkdtemp(join(os.tmpdir(), 'esi-peers-floor-'));
    teardowns.push(() => rm(scripts, { recursive: true, force: true }));
    const floorJs = floorScript('agent', scripts);
    const starters: Record<AgentKind, Starter> = {
      esi: { outDir: (dir) => join(dir, 'esi-root', OUT), name: FILE, start: (dir) => startEsi(server, token, dir, opts.esiNodeArgs) },
      bao: { outDir: (dir) => join(dir, 'bao-out'), name: FILE, start: (dir) => startBao(opts.bao, server, token, dir) },
      floor: { outDir: (dir) => join(dir, 'floor-out'), name: FILE, start: (dir) => startAgentFloor(floorJs, server.addr, token, dir, join(dir, 'floor-out', FILE), opts.esiNodeArgs) },
    };
    const startsMs: AgentResults['startsMs'] = { esi: [], bao: [], floor: [] };
    for (const kind of KINDS) {
      await timeToFile(kind, starters[kind], async (file) => { // warm-up, content checked
        const got = await readFile(file, 'utf8');
        if (got.trim() !== EXPECTED.trim()) throw new Error(`${kind} wrote ${JSON.stringify(got.slice(0, 20))}…, not the expected content`);
      });
    }
    // One round = the three back to back, the order rotated each round (load changes hit all alike).
    for (let i = 0; i < opts.runs; i++) {
      for (let k = 0; k < KINDS.length; k++) {
        const kind = KINDS[(k + i) % KINDS.length]!;
        startsMs[kind].push(await timeToFile(kind, starters[kind]));
      }
    }
    opts.log(`agents: start → file p50 ${KINDS.map((k) => `${k} ${median(startsMs[k])?.toFixed(1)} ms`).join(', ')}`);
    const running = await startEach(KINDS, starters, teardowns);
    const { esi, bao } = running;
    // Settle: all have started and written once.
    await new Promise((r) => setTimeout(r, 3000));
    const mem = KINDS.map((kind) => memorySampler(running[kind].child.pid!, 500));
    const cpu = await cpuOver(KINDS.map((kind) => running[kind].child.pid!), opts.steadyS);
    const steady = Object.fromEntries(KINDS.map((kind, i) => [kind, { cpuMs: cpu[i]!, seconds: opts.steadyS, ...mem[i]!.stop() }])) as AgentResults['steady'];
    opts.log(`agents: ${opts.steadyS} s steady: CPU ${KINDS.map((k) => `${k} ${steady[k].cpuMs} ms`).join(', ')}; RssAnon ${KINDS.map((k) => `${k} ${(steady[k].peak.anonKiB / 1024).toFixed(1)} MiB`).join(', ')}`);
    const [before, baoBefore] = await cpuOver([esi.child.pid!, bao.child.pid!], opts.scrapeWindowS);
    const text = await fetch(`http://127.0.0.1:${esi.port}/metrics`).then((r) => r.text());
    const refreshes = Number(/^esi_agent_refresh_total\{result="success"\} (\d+)/m.exec(text)?.[1] ?? NaN);
    const [after, baoAfter] = await cpuOver([esi.child.pid!, bao.child.pid!], opts.scrapeWindowS);
    opts.log(`agents: ESI idle CPU ${before} ms before one /metrics scrape, ${after} ms after (${opts.scrapeWindowS} s each); bao ${baoBefore} / ${baoAfter} ms`);
    for (const kind of KINDS) if (readFileSync(running[kind].file, 'utf8').trim() !== EXPECTED.trim()) throw new Error(`${kind} agent's file lost its content`);
    const load1 = os.loadavg();
    // The Go-template rows run alone: these agents would be background load.
    for (const kind of KINDS) await running[kind].stop();
    const goTemplate = await runGoTemplateAgents(server, token, { runs: opts.runs, steadyS: opts.steadyS, bao: opts.bao, log: opts.log, ...(opts.esiNodeArgs ? { esiNodeArgs: opts.esiNodeArgs } : {}) });
    return {
      baoVersion: baoVersion(opts.bao), startsMs,
      steady: { ...steady, esi: { ...steady.esi, refreshes } },
      scrape: { beforeCpuMs: before!, afterCpuMs: after!, windowS: opts.scrapeWindowS, baoBeforeCpuMs: baoBefore!, baoAfterCpuMs: baoAfter! },
      load: { before: load0, after: load1 },
      goTemplate,
    };
  } finally {
    for (const fn of teardowns.reverse()) await fn();
  }
}
