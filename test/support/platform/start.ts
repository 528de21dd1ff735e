// Starts the local control plane in the foreground for debugging:
//   npm run platform:start [-- --ttl SECONDS] [--controllers a,b] [--node]
// --controllers runs kube-controller-manager with those controllers (e.g.
// garbage-collector-controller); --node also starts a node (kubelet + containerd, root
// only; test/platform/node/) with the controllers and scheduler it needs.
// Prints the kubeconfig path; Ctrl-C (or the time limit, default 2 h) stops it.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startControlPlane, type ControllerName } from './control-plane-process.js';
import { NODE_CONTROLLERS, startNode, type RunningNode } from './node/node.js';

const { values } = parseArgs({
  options: { ttl: { type: 'string', default: '7200' }, controllers: { type: 'string', default: '' }, node: { type: 'boolean', default: false } },
});
const controllers = values.controllers.split(',').filter(Boolean) as ControllerName[];
const dir = await mkdtemp(join(tmpdir(), 'esi-cp-'));
const started = Date.now();
const cp = await startControlPlane(dir, { controllers: values.node ? [...controllers, ...NODE_CONTROLLERS] : controllers });
let node: RunningNode | undefined;
if (values.node) {
  node = await startNode(cp, join(dir, 'node')).catch(async (err: Error) => {
    await cp.stop();
    console.error(err.message);
    process.exit(1);
  });
}
console.log(`control plane ready in ${Date.now() - started} ms
  server:      ${cp.server}
  kubeconfig:  ${cp.kubeconfigPath}
  controllers: ${cp.controllers.join(', ') || '(none)'}${node ? `
  node:        ${node.name} (${node.ip}, pods ${node.podCidr}, image ${node.esiImage})` : ''}
  logs:        ${dir}
  try:         KUBECONFIG=${cp.kubeconfigPath} kubectl get ${node ? 'nodes' : 'ns'}
Ctrl-C stops it (it stops by itself after ${values.ttl}s).`);
const stop = async () => {
  await node?.stop();
  await cp.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
setTimeout(() => void stop(), Number(values.ttl) * 1000);
