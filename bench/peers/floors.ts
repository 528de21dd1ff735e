// The Node.js floors of `npm run bench:peers`: a bare `node` doing each compared process's job
// with nothing but Node's own modules (floor/webhook.ts, floor/agent.ts), started with the same
// node binary and flags as ESI's process, measured by the same load generator and procstat.
// Each floor is compiled here to one plain JavaScript file (esbuild strips the types; no
// bundling: the floors import node: built-ins only), so the process loads no TypeScript loader.
import { transformSync } from 'esbuild';
import { readFileSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { agentNode } from '../lib/node.js';
import { KEYS, launch, type Running } from './agent-launch.js';

const FLOOR_DIR = join(import.meta.dirname, 'floor');

/** Compiles floor/<name>.ts to <dir>/floor-<name>.mjs and returns its path. */
export function floorScript(name: 'webhook' | 'agent', dir: string): string {
  const source = readFileSync(join(FLOOR_DIR, `${name}.ts`), 'utf8');
  const { code } = transformSync(source, { loader: 'ts', format: 'esm', platform: 'node', target: 'node20', charset: 'ascii' });
  const out = join(dir, `floor-${name}.mjs`);
  writeFileSync(out, code);
  return out;
}

/** The agent floor (floor/agent.ts compiled to `script`, see floorScript) in `dir`, on the
 *  agent's node binary with `nodeArgs` (the flags ESI's agent gets), reading
 *  `secret/data/peers/key-<i>` with `token` and writing `file` every 5 s. */
export async function startAgentFloor(script: string, addr: string, token: string, dir: string, file: string, nodeArgs: string[] = []): Promise<Running> {
  const tokenFile = join(dir, 'floor-token');
  await writeFile(tokenFile, token, { mode: 0o600 });
  const config = { addr, tokenFile, file, refreshSeconds: 5, reads: KEYS.map((i) => ({ name: `k${i}`, path: `secret/data/peers/key-${i}`, field: 'value' })) };
  const r = launch(agentNode(), [...nodeArgs, script], { PATH: process.env.PATH, FLOOR_AGENT_CONFIG: JSON.stringify(config) });
  return { ...r, file };
}
