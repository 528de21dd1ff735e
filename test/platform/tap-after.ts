// tap `after` hook: stops the shared control plane and removes its state directory.
import { rm } from 'node:fs/promises';
import { SHARED_DIR, readSharedState } from './controlPlane.js';

const state = readSharedState();
if (state) {
  process.kill(state.pid, 'SIGTERM');
  for (let i = 0; i < 100 && readSharedState(); i++) await new Promise((r) => setTimeout(r, 100));
}
await rm(SHARED_DIR, { recursive: true, force: true });
