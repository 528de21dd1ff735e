// Starts the local control plane in the foreground for debugging:
//   npm run platform:start [-- --ttl SECONDS]
// Prints the kubeconfig path; Ctrl-C (or the time limit, default 2 h) stops it.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startControlPlane } from './control-plane-process.js';

const { values } = parseArgs({ options: { ttl: { type: 'string', default: '7200' } } });
const dir = await mkdtemp(join(tmpdir(), 'esi-cp-'));
const started = Date.now();
const cp = await startControlPlane(dir);
console.log(`control plane ready in ${Date.now() - started} ms
  server:     ${cp.server}
  kubeconfig: ${cp.kubeconfigPath}
  logs:       ${dir}
  try:        KUBECONFIG=${cp.kubeconfigPath} kubectl get ns
Ctrl-C stops it (it stops by itself after ${values.ttl}s).`);
const stop = async () => {
  await cp.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
setTimeout(() => void stop(), Number(values.ttl) * 1000);
