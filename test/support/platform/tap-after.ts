// tap `after` hook: stops the shared node (if a test/e2e/node/ file started one), then the
// shared control plane, and removes their state directory.
import { rm } from 'node:fs/promises';
import { SHARED_DIR, readSharedState } from './controlPlane.js';
import { readNodeState } from './node/useNode.js';

const node = readNodeState();
if (node && 'pid' in node) {
  process.kill(node.pid, 'SIGTERM');
  for (let i = 0; i < 600 && readNodeState(); i++) await new Promise((r) => setTimeout(r, 100));
}

const state = readSharedState();
if (state) {
  process.kill(state.pid, 'SIGTERM');
  for (let i = 0; i < 100 && readSharedState(); i++) await new Promise((r) => setTimeout(r, 100));
}
await rm(SHARED_DIR, { recursive: true, force: true });
