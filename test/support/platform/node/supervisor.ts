// Runs the test node (node.ts) as its own long-lived process attached to a running control
// plane, and guarantees it stops: on SIGTERM/SIGINT, when the owner process (the tap
// runner) is gone, or when the time limit passes. Writes <dir>/state.json (NodeInfo and
// its pid) once the node is Ready, or {error} if it failed.
//
//   tsx test/support/platform/node/supervisor.ts --plane PLANE_STATE_JSON --dir DIR [--owner PID] [--ttl SECONDS]
import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { ControlPlaneInfo } from '../control-plane-process.js';
import { alive } from '../processes.js';
import { startNode } from './node.js';

const { values } = parseArgs({
  options: { plane: { type: 'string' }, dir: { type: 'string' }, owner: { type: 'string' }, ttl: { type: 'string', default: '5400' } },
});
if (!values.plane || !values.dir) {
  console.error('node supervisor: --plane and --dir are required');
  process.exit(2);
}
const dir = values.dir;
const owner = values.owner ? Number(values.owner) : undefined;

const plane = JSON.parse(readFileSync(values.plane, 'utf8')) as ControlPlaneInfo;
const node = await startNode(plane, dir).catch(async (err: Error) => {
  await writeFile(join(dir, 'state.json'), JSON.stringify({ error: err.message }));
  console.error(`node supervisor: the node failed to start: ${err.message}`);
  process.exit(1);
});
const { stop, ...info } = node;
await writeFile(join(dir, 'state.json'), JSON.stringify({ ...info, pid: process.pid }));

let stopping = false;
async function shutdown(why: string) {
  if (stopping) return;
  stopping = true;
  console.error(`node supervisor: stopping the node (${why})`);
  await stop();
  await rm(join(dir, 'state.json'), { force: true });
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
setTimeout(() => void shutdown(`time limit of ${values.ttl}s reached`), Number(values.ttl) * 1000).unref();
setInterval(() => {
  if (owner && !alive(owner)) void shutdown(`owner process ${owner} exited`);
}, 1000);
