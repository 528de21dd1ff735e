// How the peers benchmark starts agents (agents.ts, agents-gotemplate.ts): ESI's agent as its
// container runs it (`node bin/esi.js agent`, vault provider, a token file) and OpenBao Agent
// (`bao agent`, token_file auto-auth), both against one OpenBao dev server holding the KV v2
// secrets `peers/key-0..2`; and the one start → file measurement both phases time.
import { spawn, type ChildProcess } from 'node:child_process';
import { watch } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import type { AgentConfig, AgentSecret, AgentTemplate } from '../../src/agent-config/types.js';
import type { VaultServer } from '../../test/support/platform/backends/openbao.js';
import { freePort, terminate } from '../../test/support/platform/processes.js';
import { treeCpuMs } from './procstat.js';
import { ROOT } from './servers.js';
import { agentNode } from '../lib/node.js';

export const KEYS = [0, 1, 2];
export const OUT = '/var/run/esi/secrets';
export const value = (i: number) => `peer-value-${i}-${'y'.repeat(24)}`;

export interface Running {
  child: ChildProcess;
  /** The file's path once written. */
  file: string;
  stop(): Promise<void>;
  output(): string;
  port?: number;
}

/** How to start one agent in a fresh directory, and the name whose appearance means done. */
export interface Starter {
  /** The directory the agent writes `name` into (created before spawn, to be watched). */
  outDir(dir: string): string;
  name: string;
  start(dir: string): Promise<Running>;
}

export function launch(cmd: string, args: string[], env: NodeJS.ProcessEnv): Omit<Running, 'file'> {
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString('utf8')).slice(-4000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const stop = () => terminate(child);
  return { child, stop, output: () => out };
}

/** ESI's agent config for the vault provider, reading the KV v2 secrets `peers/*` with a token. */
export async function esiVaultConfig(server: VaultServer, token: string, root: string, secrets: Omit<AgentSecret, 'store'>[], templates: AgentTemplate[]): Promise<AgentConfig> {
  const creds = '/var/run/esi/credentials';
  await mkdir(join(root, creds, 'vault-token'), { recursive: true });
  await writeFile(join(root, creds, 'vault-token', 'token'), token, { mode: 0o600 });
  await mkdir(join(root, OUT), { recursive: true });
  const storeKey = 'SecretStore/bench/vault';
  return {
    version: 1, mode: 'sidecar', pod: { namespace: 'bench', name: 'bench-0', serviceAccountName: 'app' },
    outputDir: OUT, fileMode: 0o440, refreshSeconds: 5, port: await freePort(),
    stores: { [storeKey]: { kind: 'SecretStore', name: 'vault', credentialsDir: creds, provider: { vault: {
      server: server.addr, path: 'secret', version: 'v2', auth: { tokenSecretRef: { name: 'vault-token', key: 'token' } },
    } } } },
    secrets: secrets.map((s) => ({ ...s, store: storeKey })), templates,
  };
}

/** `node bin/esi.js agent --root <root>` as its container runs it. */
export function launchEsi(config: AgentConfig, root: string, nodeArgs: string[] = []): Omit<Running, 'file'> {
  const r = launch(agentNode(), [...nodeArgs, join(ROOT, 'bin', 'esi.js'), 'agent', '--root', root], {
    PATH: process.env.PATH, ESI_LOG_LEVEL: 'warn', ESI_AGENT_CONFIG: JSON.stringify(config),
  });
  return { ...r, port: config.port };
}

/** The OpenBao Agent config: token_file auto-auth, one template rendered every 5 s. */
export async function launchBao(bin: string, server: VaultServer, token: string, dir: string, template: string, destination: string): Promise<Omit<Running, 'file'>> {
  await writeFile(join(dir, 'token'), token, { mode: 0o600 });
  // The template in its own file (`source`): no HCL heredoc interpolation to escape.
  await writeFile(join(dir, 'template.ctmpl'), template);
  await writeFile(join(dir, 'agent.hcl'), [
    `vault { address = "${server.addr}" }`,
    `auto_auth {\n  method "token_file" {\n    config = { token_file_path = "${join(dir, 'token')}" }\n  }\n}`,
    'template_config {\n  static_secret_render_interval = "5s"\n  exit_on_retry_failure = true\n}',
    `template {\n  destination = "${destination}"\n  perms = "0440"\n  source = "${join(dir, 'template.ctmpl')}"\n}`,
    '',
  ].join('\n'));
  return launch(bin, ['agent', `-config=${join(dir, 'agent.hcl')}`, '-log-level=warn'], { PATH: process.env.PATH, HOME: dir });
}

/** Spawns an agent in a fresh directory; ms from spawn to its file's name appearing.
 *  `check` reads the written file (the warm-up runs). */
export async function timeToFile(label: string, starter: Starter, check?: (file: string) => Promise<void>): Promise<number> {
  const dir = await mkdtemp(join(os.tmpdir(), `esi-peers-${label}-`));
  let agent: Running | undefined;
  try {
    // The output directory must exist to be watched: create it as the agent would find it.
    const outDir = starter.outDir(dir);
    await mkdir(outDir, { recursive: true });
    const w = watch(outDir);
    const seen = new Promise<bigint>((resolve) => w.on('change', (_e, name) => {
      if (String(name) === starter.name) resolve(process.hrtime.bigint());
    }));
    const t0 = process.hrtime.bigint();
    agent = await starter.start(dir);
    const a = agent;
    const died = new Promise<never>((_, reject) => a.child.once('exit', (code) => reject(new Error(`${label} agent exited (${code}): ${a.output().slice(-1500)}`))));
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${label}: no ${starter.name} within 20 s: ${a.output().slice(-1500)}`)), 20_000).unref());
    const t1 = await Promise.race([seen, died, timeout]);
    w.close();
    if (check) {
      await new Promise((r) => setTimeout(r, 200));
      await check(agent.file);
    }
    return Number(t1 - t0) / 1e6;
  } finally {
    await agent?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

export const cpuOver = async (pids: number[], seconds: number) => {
  const before = pids.map(treeCpuMs);
  await new Promise((r) => setTimeout(r, seconds * 1000));
  return pids.map((p, i) => treeCpuMs(p) - before[i]!);
};

/** Starts one long-running agent of each kind in its own temporary directory, for the
 *  steady-state readings; each directory and process is handed to `teardowns`. */
export async function startEach<K extends string>(kinds: readonly K[], starters: Record<K, Starter>, teardowns: (() => unknown)[]): Promise<Record<K, Running>> {
  const running = {} as Record<K, Running>;
  for (const kind of kinds) {
    const dir = await mkdtemp(join(os.tmpdir(), `esi-peers-${kind}-`));
    teardowns.push(() => rm(dir, { recursive: true, force: true }));
    await mkdir(starters[kind].outDir(dir), { recursive: true });
    running[kind] = await starters[kind].start(dir);
    teardowns.push(running[kind].stop);
  }
  return running;
}
