// Phase (b) of `npm run bench:peers`: ESI's agent (vault provider, `node bin/esi.js agent`
// as its container runs it) against OpenBao Agent (`bao agent`), both rendering the same
// 3 KV v2 secrets into one file from the same OpenBao dev server, refreshing every 5 s.
//   start → file: spawn → the rendered file's name appears (p50 of interleaved runs);
//   steady: both agents side by side for `steadyS` seconds (the same background load for
//   both): CPU (/proc utime+stime), peak RSS and RssAnon;
//   scrape: ESI's idle CPU over `scrapeWindowS` before and after one GET /metrics.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, watch } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import type { AgentConfig } from '../../src/agent-config/types.js';
import { createToken, startVaultServer, writePolicy, type VaultServer } from '../../test/platform/backends/openbao.js';
import { freePort, terminate } from '../../test/platform/processes.js';
import { memorySampler, treeCpuMs, type Memory } from './procstat.js';
import { median } from './report.js';
import { ROOT } from './servers.js';

export type AgentKind = 'esi' | 'bao';
const KEYS = [0, 1, 2];
const FILE = 'app.conf';
const OUT = '/var/run/esi/secrets';
const value = (i: number) => `peer-value-${i}-${'y'.repeat(24)}`;
/** What both agents must write. */
export const EXPECTED = KEYS.map((i) => `k${i}=${value(i)}`).join('\n') + '\n';

export interface AgentResults {
  baoVersion: string;
  startsMs: Record<AgentKind, number[]>;
  steady: Record<AgentKind, { cpuMs: number; seconds: number; peak: Memory; last: Memory; refreshes?: number }>;
  scrape: { beforeCpuMs: number; afterCpuMs: number; windowS: number; baoBeforeCpuMs: number; baoAfterCpuMs: number };
  load: { before: number[]; after: number[] };
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

interface Running {
  child: ChildProcess;
  /** The file's path once written. */
  file: string;
  stop(): Promise<void>;
  output(): string;
  port?: number;
}

function launch(cmd: string, args: string[], env: NodeJS.ProcessEnv): Omit<Running, 'file'> {
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString('utf8')).slice(-4000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const stop = () => terminate(child);
  return { child, stop, output: () => out };
}

async function startEsi(server: VaultServer, token: string, dir: string, nodeArgs: string[] = []): Promise<Running> {
  const root = join(dir, 'esi-root');
  const creds = '/var/run/esi/credentials';
  await mkdir(join(root, creds, 'vault-token'), { recursive: true });
  await writeFile(join(root, creds, 'vault-token', 'token'), token, { mode: 0o600 });
  await mkdir(join(root, OUT), { recursive: true });
  const port = await freePort();
  const storeKey = 'SecretStore/bench/vault';
  const config: AgentConfig = {
    version: 1, mode: 'sidecar', pod: { namespace: 'bench', name: 'bench-0', serviceAccountName: 'app' },
    outputDir: OUT, fileMode: 0o440, refreshSeconds: 5, port,
    stores: { [storeKey]: { kind: 'SecretStore', name: 'vault', credentialsDir: creds, provider: { vault: {
      server: server.addr, path: 'secret', version: 'v2', auth: { tokenSecretRef: { name: 'vault-token', key: 'token' } },
    } } } },
    secrets: [{ name: 'app', store: storeKey, dataFrom: [], data: KEYS.map((i) => ({ secretKey: `k${i}`, remoteRef: { key: `peers/key-${i}`, property: 'value' } })) }],
    templates: [{ file: FILE, template: KEYS.map((i) => `k${i}={{app.k${i}}}`).join('\n') + '\n' }],
  };
  const r = launch(process.execPath, [...nodeArgs, join(ROOT, 'bin', 'esi.js'), 'agent', '--root', root], {
    PATH: process.env.PATH, ESI_LOG_LEVEL: 'warn', ESI_AGENT_CONFIG: JSON.stringify(config),
  });
  return { ...r, file: join(root, OUT, FILE), port };
}

async function startBao(bin: string, server: VaultServer, token: string, dir: string): Promise<Running> {
  const out = join(dir, 'bao-out');
  await mkdir(out, { recursive: true });
  await writeFile(join(dir, 'token'), token, { mode: 0o600 });
  const contents = KEYS.map((i) => `k${i}={{ with secret "secret/data/peers/key-${i}" }}{{ .Data.data.value }}{{ end }}`).join('\n') + '\n';
  await writeFile(join(dir, 'agent.hcl'), [
    `vault { address = "${server.addr}" }`,
    `auto_auth {\n  method "token_file" {\n    config = { token_file_path = "${join(dir, 'token')}" }\n  }\n}`,
    'template_config {\n  static_secret_render_interval = "5s"\n  exit_on_retry_failure = true\n}',
    `template {\n  destination = "${join(out, FILE)}"\n  perms = "0440"\n  contents = <<EOT\n${contents}EOT\n}`,
    '',
  ].join('\n'));
  const r = launch(bin, ['agent', `-config=${join(dir, 'agent.hcl')}`, '-log-level=warn'], { PATH: process.env.PATH, HOME: dir });
  return { ...r, file: join(out, FILE) };
}

/** Spawns an agent in a fresh directory; ms from spawn to its file's name appearing. */
async function timeToFile(kind: AgentKind, start: (dir: string) => Promise<Running>, check: boolean): Promise<number> {
  const dir = await mkdtemp(join(os.tmpdir(), `esi-peers-${kind}-`));
  let agent: Running | undefined;
  try {
    // The output directory must exist to be watched: create it as the agent would find it.
    const outDir = kind === 'esi' ? join(dir, 'esi-root', OUT) : join(dir, 'bao-out');
    await mkdir(outDir, { recursive: true });
    const w = watch(outDir);
    const seen = new Promise<bigint>((resolve) => w.on('change', (_e, name) => {
      if (String(name) === FILE) resolve(process.hrtime.bigint());
    }));
    const t0 = process.hrtime.bigint();
    agent = await start(dir);
    const a = agent;
    const died = new Promise<never>((_, reject) => a.child.once('exit', (code) => reject(new Error(`${kind} agent exited (${code}): ${a.output().slice(-1500)}`))));
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${kind}: no ${FILE} within 20 s: ${a.output().slice(-1500)}`)), 20_000).unref());
    const t1 = await Promise.race([seen, died, timeout]);
    w.close();
    if (check) {
      await new Promise((r) => setTimeout(r, 200));
      const got = await readFile(agent.file, 'utf8');
      if (got.trim() !== EXPECTED.trim()) throw new Error(`${kind} wrote ${JSON.stringify(got.slice(0, 20))}…, not the expected content`);
    }
    return Number(t1 - t0) / 1e6;
  } finally {
    await agent?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const cpuOver = async (pids: number[], seconds: number) => {
  const before = pids.map(treeCpuMs);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  return pids.map((p, i) => treeCpuMs(p) - before[i]!);
};

function baoVersion(bin: string): string {
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
    const starters: Record<AgentKind, (dir: string) => Promise<Running>> = {
      esi: (dir) => startEsi(server, token, dir, opts.esiNodeArgs), bao: (dir) => startBao(opts.bao, server, token, dir),
    };
    const startsMs: AgentResults['startsMs'] = { esi: [], bao: [] };
    for (const kind of ['esi', 'bao'] as const) await timeToFile(kind, starters[kind], true); // warm-up, content checked
    for (let i = 0; i < opts.runs; i++) {
      for (const kind of (i % 2 ? ['bao', 'esi'] : ['esi', 'bao']) as AgentKind[]) startsMs[kind].push(await timeToFile(kind, starters[kind], false));
    }
    opts.log(`agents: start → file p50 esi ${median(startsMs.esi)?.toFixed(1)} ms, bao ${median(startsMs.bao)?.toFixed(1)} ms`);
    const dirs = { esi: await mkdtemp(join(os.tmpdir(), 'esi-peers-esi-')), bao: await mkdtemp(join(os.tmpdir(), 'esi-peers-bao-')) };
    teardowns.push(() => rm(dirs.esi, { recursive: true, force: true }), () => rm(dirs.bao, { recursive: true, force: true }));
    const esi = await starters.esi(dirs.esi);
    teardowns.push(esi.stop);
    const bao = await starters.bao(dirs.bao);
    teardowns.push(bao.stop);
    // Settle: both have started and written once.
    await new Promise((r) => setTimeout(r, 3000));
    const mem = { esi: memorySampler(esi.child.pid!, 500), bao: memorySampler(bao.child.pid!, 500) };
    const [esiCpu, baoCpu] = await cpuOver([esi.child.pid!, bao.child.pid!], opts.steadyS);
    const steadyMem = { esi: mem.esi.stop(), bao: mem.bao.stop() };
    opts.log(`agents: ${opts.steadyS} s steady: CPU esi ${esiCpu} ms, bao ${baoCpu} ms; RssAnon esi ${(steadyMem.esi.peak.anonKiB / 1024).toFixed(1)} MiB, bao ${(steadyMem.bao.peak.anonKiB / 1024).toFixed(1)} MiB`);
    const [before, baoBefore] = await cpuOver([esi.child.pid!, bao.child.pid!], opts.scrapeWindowS);
    const text = await fetch(`http://127.0.0.1:${esi.port}/metrics`).then((r) => r.text());
    const refreshes = Number(/^esi_agent_refresh_total\{result="success"\} (\d+)/m.exec(text)?.[1] ?? NaN);
    const [after, baoAfter] = await cpuOver([esi.child.pid!, bao.child.pid!], opts.scrapeWindowS);
    opts.log(`agents: ESI idle CPU ${before} ms before one /metrics scrape, ${after} ms after (${opts.scrapeWindowS} s each); bao ${baoBefore} / ${baoAfter} ms`);
    if (!readFileSync(bao.file, 'utf8').includes(value(2))) throw new Error('bao agent file lost its content');
    return {
      baoVersion: baoVersion(opts.bao), startsMs,
      steady: {
        esi: { cpuMs: esiCpu!, seconds: opts.steadyS, ...steadyMem.esi, refreshes },
        bao: { cpuMs: baoCpu!, seconds: opts.steadyS, ...steadyMem.bao },
      },
      scrape: { beforeCpuMs: before!, afterCpuMs: after!, windowS: opts.scrapeWindowS, baoBeforeCpuMs: baoBefore!, baoAfterCpuMs: baoAfter! },
      load: { before: load0, after: os.loadavg() },
    };
  } finally {
    for (const fn of teardowns.reverse()) await fn();
  }
}
