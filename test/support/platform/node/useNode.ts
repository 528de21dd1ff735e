// The node the test/e2e/node/ files run their pods on. In a tap run, the first file that asks
// starts one node for the whole run (a detached supervisor owned by the tap runner, stopped
// by tap-after.ts or when the runner exits); later files reuse it. A file run alone gets a
// private control plane and node, stopped when it ends.
import { existsSync, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { SHARED_DIR, readSharedState, useControlPlane, type ControlPlane } from '../controlPlane.js';
import { alive } from '../processes.js';
import { NODE_CONTROLLERS, startNode, type NodeInfo } from './node.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export const SHARED_NODE_DIR = join(SHARED_DIR, 'node');
/** Cold: image build (~1-2 min) + import (~30 s) + kubelet registration. */
const START_TIMEOUT_MS = 600_000;


export function readNodeState(): (NodeInfo & { pid: number }) | { error: string } | undefined {
  const file = join(SHARED_NODE_DIR, 'state.json');
  if (!existsSync(file)) return undefined;
  const state = JSON.parse(readFileSync(file, 'utf8')) as (NodeInfo & { pid: number }) | { error: string };
  if ('pid' in state && !alive(state.pid)) return undefined;
  return state;
}

async function sharedNode(): Promise<NodeInfo> {
  // mkdir is atomic: exactly one test file of the run starts the supervisor.
  let starter = false;
  try {
    mkdirSync(SHARED_NODE_DIR);
    starter = true;
  } catch {
    // another file is starting it (or started it)
  }
  if (starter) {
    const out = openSync(join(SHARED_NODE_DIR, 'supervisor.log'), 'a');
    const child = spawn(process.execPath, [...process.execArgv, join(import.meta.dirname, 'supervisor.ts'),
      '--plane', join(SHARED_DIR, 'state.json'), '--dir', SHARED_NODE_DIR, '--owner', String(process.ppid), '--ttl', '5400'],
    { detached: true, stdio: ['ignore', out, out] });
    child.unref();
  }
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    const state = readNodeState();
    if (state && 'error' in state) throw new Error(`the test node failed to start: ${state.error}\n(see ${SHARED_NODE_DIR}/supervisor.log)`);
    if (state) return state;
    if (Date.now() > deadline) throw new Error(`the test node was not ready after ${START_TIMEOUT_MS / 1000}s (see ${SHARED_NODE_DIR}/supervisor.log)`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** The control plane and a Ready node registered to it. */
export async function useNode(t: Teardown): Promise<{ cp: ControlPlane; node: NodeInfo }> {
  if (readSharedState()) {
    const cp = await useControlPlane(t);
    return { cp, node: await sharedNode() };
  }
  const cp = await useControlPlane(undefined, { controllers: NODE_CONTROLLERS });
  const dir = join(cp.dir, 'node');
  const node = await startNode(cp, dir).catch(async (err: unknown) => {
    await cp.stop();
    throw err;
  });
  t.teardown(async () => {
    await node.stop();
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  return { cp, node };
}
