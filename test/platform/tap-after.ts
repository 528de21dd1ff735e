// tap `after` hook: stops the shared control plane.
import { readSharedState } from './controlPlane.js';

const state = readSharedState();
if (state) {
  process.kill(state.pid, 'SIGTERM');
  for (let i = 0; i < 100 && readSharedState(); i++) await new Promise((r) => setTimeout(r, 100));
}
