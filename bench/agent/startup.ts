// Start-up experiments for the agent with the vault provider, against OpenBao Agent: the set-up
// of `npm run bench:peers -- --only agents` (bench/peers/agents.ts: 3 KV v2 secrets rendered into
// one file from one OpenBao dev server), with several ways of starting ESI's agent measured in
// interleaved rounds (variant order rotated every round), so each variant sees the same
// background load. Per variant: spawn → the file's name appearing (p50, p25–p75), and the peak
// RssAnon of one agent over its first `--rss-seconds` (sampled every 250 ms; the agent
// refreshes every 5 s). The results are the record in docs/performance/agent-startup.md.
//
//   npx tsx bench/agent/startup.ts --runs 15 \
//     --variant 'today=bin/esi.js' --variant 'semi1=--max-semi-space-size=1 bin/esi.js' [--bao]
//
// A variant is `name=` then node's arguments (flags, then the script), split on spaces; the
// agent's own arguments (`agent --root DIR`) follow. `--bao` adds OpenBao Agent as a variant.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, watch } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { AgentConfig } from '../../src/agent-config/types.js';
import { createToken, serverBinary, startVaultServer, writePolicy, type VaultServer } from '../../test/support/platform/backends/openbao.js';
import { freePort, terminate } from '../../test/support/platform/processes.js';
import { agentNode } from '../lib/node.js';

const ROOT = join(import.meta.dirname, '..', '..');
const { values: opts } = parseArgs({ options: {
  runs: { type: 'string', default: '11' }, variant: { type: 'string', multiple: true, default: [] },
  bao: { type: 'boolean' }, 'rss-seconds': { type: 'string', default: '0' },
} });
const KEYS = [0, 1, 2];
const FILE = 'app.conf';
const OUT = '/var/run/esi/secrets';
const value = (i: number) => `peer-value-${i}-${'y'.repeat(24)}`;
const EXPECTED = KEYS.map((i) => `k${i}=${value(i)}`).join('\n') + '\n';

interface Started { child: ChildProcess; outDir: string; output: () => string }
type Starter = (dir: string) => Promise<Started>;

function launch(cmd: string, args: string[], env: NodeJS.ProcessEnv, outDir: string): Started {
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'], cwd: ROOT });
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString('utf8')).slice(-4000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { child, outDir, output: () => out };
}

function esiStarter(server: VaultServer, token: string, nodeArgs: string[]): Starter {
  return async (dir) => {
    const root = join(dir, 'esi-root');
    const creds = '/var/run/esi/credentials';
    await mkdir(join(root, creds, 'vault-token'), { recursive: true });
    await writeFile(join(root, creds, 'vault-token', 'token'), token, { mode: 0o600 });
    const storeKey = 'SecretStore/bench/vault';
    const config: AgentConfig = {
      version: 1, mode: 'sidecar', pod: { namespace: 'bench', name: 'bench-0', serviceAccountName: 'app' },
      outputDir: OUT, fileMode: 0o440, refreshSeconds: 5, port: await freePort(),
      stores: { [storeKey]: { kind: 'SecretStore', name: 'vault', credentialsDir: creds, provider: { vault: {
        server: server.addr, path: 'secret', version: 'v2', auth: { tokenSecretRef: { name: 'vault-token', key: 'token' } },
      } } } },
      secrets: [{ name: 'app', store: storeKey, dataFrom: [], data: KEYS.map((i) => ({ secretKey: `k${i}`, remoteRef: { key: `peers/key-${i}`, property: 'value' } })) }],
      templates: [{ file: FILE, template: KEYS.map((i) => `k${i}={{app.k${i}}}`).join('\n') + '\n' }],
    };
    return launch(agentNode(), [...nodeArgs, 'agent', '--root', root], {
      PATH: process.env.PATH, ESI_LOG_LEVEL: 'warn', ESI_AGENT_CONFIG: JSON.stringify(config),
    }, join(root, OUT));
  };
}

function baoStarter(server: VaultServer, token: string): Starter {
  return async (dir) => {
    const out = join(dir, 'bao-out');
    await writeFile(join(dir, 'token'), token, { mode: 0o600 });
    const contents = KEYS.map((i) => `k${i}={{ with secret "secret/data/peers/key-${i}" }}{{ .Data.data.value }}{{ end }}`).join('\n') + '\n';
    await writeFile(join(dir, 'agent.hcl'), [
      `vault { address = "${server.addr}" }`,
      `auto_auth {\n  method "token_file" {\n    config = { token_file_path = "${join(dir, 'token')}" }\n  }\n}`,
      'template_config {\n  static_secret_render_interval = "5s"\n  exit_on_retry_failure = true\n}',
      `template {\n  destination = "${join(out, FILE)}"\n  perms = "0440"\n  contents = <<EOT\n${contents}EOT\n}`,
      '',
    ].join('\n'));
    return launch(serverBinary().path, ['agent', `-config=${join(dir, 'agent.hcl')}`, '-log-level=warn'], { PATH: process.env.PATH, HOME: dir }, out);
  };
}

/** CPU time of every thread of `pid` so far, in ms (schedstat counts in ns; less moved by
 *  other processes' load than wall time). */
function cpuMs(pid: number): number {
  let ns = 0;
  for (const t of readdirSync(`/proc/${pid}/task`)) ns += Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
  return ns / 1e6;
}
const anonKiB = (pid: number) => Number(/^RssAnon:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);

/** One agent in a fresh directory: ms from spawn to its file's name, and its peak RssAnon. */
async function once(name: string, start: Starter, rssSeconds: number, check: boolean): Promise<{ ms: number; cpu: number; anonKiB: number }> {
  const dir = await mkdtemp(join(os.tmpdir(), 'esi-startup-'));
  let agent: Started | undefined;
  try {
    const outDir = name === 'bao' ? join(dir, 'bao-out') : join(dir, 'esi-root', OUT);
    await mkdir(outDir, { recursive: true });
    const w = watch(outDir);
    const seen = new Promise<bigint>((resolve) => w.on('change', (_e, f) => { if (String(f) === FILE) resolve(process.hrtime.bigint()); }));
    const t0 = process.hrtime.bigint();
    agent = await start(dir);
    const a = agent;
    const died = new Promise<never>((_, reject) => a.child.once('exit', (code) => reject(new Error(`${name} exited (${code}): ${a.output().slice(-1500)}`))));
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${name}: no file within 20 s: ${a.output()}`)), 20_000).unref());
    const t1 = await Promise.race([seen, died, timeout]);
    const cpu = cpuMs(a.child.pid!);
    w.close();
    let peak = 0;
    for (const end = Date.now() + rssSeconds * 1000; Date.now() < end;) {
      peak = Math.max(peak, anonKiB(a.child.pid!));
      await new Promise((r) => setTimeout(r, 250));
    }
    if (check) {
      await new Promise((r) => setTimeout(r, 200));
      const got = await readFile(join(outDir, FILE), 'utf8');
      if (got.trim() !== EXPECTED.trim()) throw new Error(`${name} wrote ${JSON.stringify(got.slice(0, 20))}…, not the expected content`);
    }
    return { ms: Number(t1 - t0) / 1e6, cpu, anonKiB: peak };
  } finally {
    if (agent) await terminate(agent.child);
    await rm(dir, { recursive: true, force: true });
  }
}

const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;

const teardowns: (() => unknown)[] = [];
try {
  const server = await startVaultServer({ teardown: (fn) => teardowns.push(fn) });
  await writePolicy(server, 'peers-read', 'path "secret/data/peers/*" { capabilities = ["read"] }');
  for (const i of KEYS) await server.api('POST', `secret/data/peers/key-${i}`, { data: { value: value(i) } });
  const token = await createToken(server, ['peers-read'], '24h');
  const variants: [string, Starter][] = opts.variant.map((v) => {
    const i = v.indexOf('=');
    return [v.slice(0, i), esiStarter(server, token, v.slice(i + 1).split(' ').filter(Boolean))];
  });
  if (opts.bao) variants.push(['bao', baoStarter(server, token)]);
  const rssSeconds = Number(opts['rss-seconds']);
  for (const [name, start] of variants) await once(name, start, 0, true); // warm-up, content checked
  const res = new Map<string, { ms: number[]; cpu: number[]; kib: number[] }>(variants.map(([n]) => [n, { ms: [], cpu: [], kib: [] }]));
  for (let r = 0; r < Number(opts.runs); r++) {
    for (let k = 0; k < variants.length; k++) {
      const [name, start] = variants[(r + k) % variants.length]!;
      const o = await once(name, start, rssSeconds, false);
      res.get(name)!.ms.push(o.ms);
      res.get(name)!.kib.push(o.anonKiB);
      res.get(name)!.cpu.push(o.cpu);
    }
  }
  console.log(`load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}; ${opts.runs} rounds`);
  for (const [name, { ms, cpu, kib }] of res) {
    const anon = rssSeconds ? `  RssAnon p50 ${(q(kib, 0.5) / 1024).toFixed(1)} MiB (max ${(Math.max(...kib) / 1024).toFixed(1)})` : '';
    console.log(`${name.padEnd(14)} start→file p50 ${q(ms, 0.5).toFixed(1)} ms (p25 ${q(ms, 0.25).toFixed(1)}, p75 ${q(ms, 0.75).toFixed(1)}); CPU to file p50 ${q(cpu, 0.5).toFixed(1)} ms${anon}`);
  }
} finally {
  for (const fn of teardowns.reverse()) await fn();
}
