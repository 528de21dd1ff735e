// The Node.js the agent benchmarks run ESI's agent with: the images' own (NODE_VERSION in
// test/platform/versions.env, the official binary installed from the npm registry by
// test/platform/install-node.sh and cached under ~/.cache/esi/node), not whichever Node.js
// runs the benchmark script. What ships is what is measured; "bare node" floors use it too.
import { execFileSync } from 'node:child_process';
import { pinned, pinnedNode } from '../../test/support/platform/binaries.js';

let cached: { path: string; version: string } | undefined;

/** The images' node binary (installed on first use) and its `--version`. */
export function imageNode(): { path: string; version: string } {
  if (!cached) {
    const path = pinnedNode();
    const version = execFileSync(path, ['--version']).toString().trim();
    if (version !== `v${pinned('NODE_VERSION')}`) throw new Error(`${path} reports ${version}, not the pinned v${pinned('NODE_VERSION')}`);
    cached = { path, version };
  }
  return cached;
}

/** Path of the images' node binary. */
export const agentNode = (): string => imageNode().path;
