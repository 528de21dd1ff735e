// Runs the control plane as its own long-lived process and guarantees it stops by
// itself: on SIGTERM/SIGINT, when the owner process (e.g. the tap runner) is gone, or
// when the time limit passes. Writes <dir>/state.json once the apiserver is ready.
//
//   tsx test/support/platform/supervisor.ts --dir DIR [--owner PID] [--ttl SECONDS] [--controllers a,b]
import { rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startControlPlane, type ControllerName } from './control-plane-process.js';
import { alive } from './processes.js';

const { values } = parseArgs({
  options: {
    dir: { type: 'string' }, owner: { type: 'string' }, ttl: { type: 'string', default: '5400' },
    controllers: { type: 'string', default: '' },
  },
});
if (!values.dir) {
  console.error('supervisor: --dir is required');
  process.exit(2);
}
const dir = values.dir;
const owner = values.owner ? Number(values.owner) : undefined;
const ttlMs = Number(values.ttl) * 1000;


/** Readers poll state.json: write it whole (temp file + rename), never half-written. */
async function writeState(state: object): Promise<void> {
  const tmp = join(dir, `state.json.${process.pid}.tmp`);
  await writeFile(tmp, JSON.stringify(state));
  await rename(tmp, join(dir, 'state.json'));
}

const controllers = values.controllers.split(',').filter(Boolean) as ControllerName[];
const cp = await startControlPlane(dir, { controllers }).catch(async (err: Error) => {
  await writeState({ error: err.message });
  console.error(`supervisor: control plane failed to start: ${err.message}`);
  process.exit(1);
});
const { stop, ...info } = cp;
await writeState({ ...info, pid: process.pid });

let stopping = false;
async function shutdown(why: string) {
  if (stopping) return;
  stopping = true;
  console.error(`supervisor: stopping control plane (${why})`);
  await stop();
  await rm(join(dir, 'state.json'), { force: true });
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
setTimeout(() => void shutdown(`time limit of ${values.ttl}s reached`), ttlMs).unref();
setInterval(() => {
  if (owner && !alive(owner)) void shutdown(`owner process ${owner} exited`);
}, 1000);
