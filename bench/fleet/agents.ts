// The fleet bench's moving parts: a store stand-in that counts reads (HTTP, read by the agents'
// webhook provider), N real agent processes (`node bin/esi.js agent --root DIR`, as in a
// container), their files, their RSS, and the channel files the kubelet would project.
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { dirname, join } from 'node:path';
import type { AgentConfig } from '../../src/agent-config/types.js';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'esi.js');
export const OUT_DIR = '/var/run/secrets/esi';
export const CHANNEL = '/var/run/esi/channel';

export interface StandIn {
  url: string;
  /** Epoch ms of every read, in order. */
  reads: number[];
  set(key: string, value: string): void;
  close(): Promise<void>;
}

export async function startStandIn(): Promise<StandIn> {
  const values = new Map<string, string>();
  const reads: number[] = [];
  const server = createServer((req, res) => {
    const key = decodeURIComponent(new URL(req.url!, 'http://x').pathname.slice('/s/'.length));
    reads.push(Date.now());
    const value = values.get(key);
    res.writeHead(value === undefined ? 404 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value === undefined ? {} : { value }));
  });
  server.keepAliveTimeout = 120_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`, reads, set: (k, v) => values.set(k, v),
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}

export interface Agent {
  index: number;
  root: string;
  proc: ChildProcess;
}

/** Keys an agent reads: the key every pod shares, and one of `groups` smaller ones. */
export const keysOf = (i: number, groups: number) => ['shared', `group-${i % groups}`];

export function agentConfig(i: number, o: { url: string; refreshSeconds: number; groups: number }): AgentConfig {
  const store = 'SecretStore/fleet/standin';
  return {
    version: 1, mode: 'native-sidecar', pod: { namespace: 'fleet', name: `pod-${i}`, serviceAccountName: 'default' },
    outputDir: OUT_DIR, fileMode: 0o440, refreshSeconds: o.refreshSeconds, port: 0, channelDir: CHANNEL,
    stores: { [store]: { kind: 'SecretStore', name: 'standin', provider: { webhook: { url: `${o.url}/s/{{ .remoteRef.key }}`, result: { jsonPath: '$.value' } } } } },
    secrets: [{ name: 'app', store, dataFrom: [], data: keysOf(i, o.groups).map((k) => ({ secretKey: k, remoteRef: { key: k } })) }],
    templates: [],
  };
}

/** One agent process; `files` (path in the pod → content) are placed under its root first,
 *  as the webhook's volumes would hold them (a store's credentials). */
export async function startAgent(dir: string, i: number, config: AgentConfig, extra: { env?: Record<string, string>; files?: Record<string, string> } = {}): Promise<Agent> {
  const root = join(dir, `pod-${i}`);
  await mkdir(join(root, CHANNEL), { recursive: true });
  for (const [path, content] of Object.entries(extra.files ?? {})) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), content, { mode: 0o600 });
  }
  await writeFile(join(root, 'config.json'), JSON.stringify(config));
  const proc = spawn(process.execPath, [BIN, 'agent', '--root', root, '--config-file', join(root, 'config.json')], {
    stdio: ['ignore', 'ignore', 'ignore'], env: { ...process.env, ...extra.env, ESI_LOG_LEVEL: 'warn' },
  });
  return { index: i, root, proc };
}

/** The content of an agent's file, or undefined. */
export async function fileOf(a: Agent, key: string): Promise<string | undefined> {
  return readFile(join(a.root, OUT_DIR, 'app', key), 'utf8').catch(() => undefined);
}

/** As the kubelet projects the pod's annotations: the whole file by rename. */
export async function project(a: Agent, file: 'refresh-floor' | 'change-generation', value: string): Promise<void> {
  const tmp = join(a.root, CHANNEL, `.${file}.tmp`);
  await writeFile(tmp, value);
  await rename(tmp, join(a.root, CHANNEL, file));
}

/** Resident memory of the agents, bytes. */
export function rssOf(agents: readonly Agent[]): number {
  let sum = 0;
  for (const a of agents) {
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${a.proc.pid}/status`, 'utf8'));
      sum += Number(m?.[1] ?? 0) * 1024;
    } catch {
      // exited
    }
  }
  return sum;
}

/** Ms from `since` until each agent's file shows `value`, sorted; `at` gets them by agent.
 *  The files are read when their directory changes (inotify) and every 250 ms as the safety
 *  net, so the measuring does not take the CPU the agents and the stand-in need. */
export async function arrival(agents: readonly Agent[], key: string, value: string, since: number, timeoutMs: number, at?: Map<number, number>): Promise<number[]> {
  const seen = at ?? new Map<number, number>();
  seen.clear();
  const check = async (a: Agent): Promise<void> => {
    if (!seen.has(a.index) && (await fileOf(a, key)) === value && !seen.has(a.index)) seen.set(a.index, Date.now() - since);
  };
  const watchers: FSWatcher[] = [];
  for (const a of agents) {
    for (const d of [join(a.root, OUT_DIR), join(a.root, OUT_DIR, 'app')]) {
      try {
        watchers.push(watch(d, { persistent: false }, () => void check(a)));
      } catch {
        // the poll below
      }
    }
  }
  const deadline = Date.now() + timeoutMs;
  try {
    while (seen.size < agents.length && Date.now() < deadline) {
      await Promise.all(agents.filter((a) => !seen.has(a.index)).map(check));
      await new Promise((r) => setTimeout(r, 250));
    }
  } finally {
    for (const w of watchers) w.close();
  }
  if (seen.size < agents.length) throw new Error(`${agents.length - seen.size} agents never showed the new value within ${timeoutMs} ms`);
  return [...seen.values()].sort((a, b) => a - b);
}

export const quantile = (sorted: readonly number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
