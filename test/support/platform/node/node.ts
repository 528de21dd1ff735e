// A real node attached to a running local control plane: kubelet + containerd + runc with
// CNI bridge networking in a network namespace the platform creates (network.ts), plus
// what a node needs from the control plane side: kube-scheduler and the controllers that
// make Deployments, ReplicaSets, Jobs and Service endpoints work and publish the
// kube-root-ca.crt ConfigMap that service-account token volumes mount.
//
// Needs root (network namespaces, mounts, cgroups). Everything it starts lives in the
// cgroup /esi-node-<k> and a private mount namespace; stop() kills that cgroup, so nothing
// survives it. Startup: ~1 min cold (image build), ~30-40 s warm (mostly `ctr import`).
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { binaryPath } from '../binaries.js';
import { writeKubeconfig, type ControlPlaneInfo, type ControllerName } from '../control-plane-process.js';
import { startControllerManager } from '../controller-manager.js';
import { ensureImages, ESI_IMAGE } from '../../../platform/images/build-images.js';
import { alive, launch, tail, terminate, waitFor } from '../processes.js';
import { startScheduler } from '../scheduler.js';
import { createCgroup, enterCgroup, killCgroup } from './cgroups.js';
import { importImages, writeContainerdConfig } from './containerd.js';
import { kubeletArgs, writeKubeletConfig } from './kubelet.js';
import { createNetwork, deleteNetwork, existingNetworks, networkFor, type NodeNetwork } from './network.js';

/** Controllers a node needs; those the plane already runs are not started twice. */
export const NODE_CONTROLLERS: readonly ControllerName[] = [
  'garbage-collector-controller', 'root-ca-certificate-publisher-controller', 'deployment-controller',
  'replicaset-controller', 'job-controller', 'endpoints-controller', 'endpointslice-controller',
  // Lifts the node.kubernetes.io/not-ready taint the apiserver puts on a new Node.
  'node-lifecycle-controller',
];

export interface NodeInfo {
  /** Node name (also the network namespace's name). */
  name: string;
  /** InternalIP of the node, inside its network namespace. */
  ip: string;
  podCidr: string;
  dir: string;
  /** Image holding `esi` (webhook, agent) and Node.js for test apps; never pulled. */
  esiImage: string;
}

export interface RunningNode extends NodeInfo {
  stop(): Promise<void>;
}

const OWNERS = '/run/esi-node';
const log = (msg: string) => process.stderr.write(`[node] ${msg}\n`);


/** Removes node networks and cgroups left by runs that died without stopping their node. */
async function removeStaleNodes(): Promise<void> {
  for (const k of existingNetworks()) {
    const owner = join(OWNERS, String(k));
    const pid = existsSync(owner) ? Number(readFileSync(owner, 'utf8')) : NaN;
    if (Number.isFinite(pid) && alive(pid)) continue;
    const net = networkFor(k);
    log(`removing stale node ${net.netns} (owner ${Number.isFinite(pid) ? pid : 'unknown'} is gone)`);
    await killCgroup(net.netns);
    deleteNetwork(net);
    rmSync(owner, { force: true });
  }
}

/** A private mount namespace, persisted on a file, that containerd and the kubelet share:
 *  their mounts (overlay root filesystems, volume tmpfs, pod netns pins) never show on the
 *  host and all vanish with it. */
function createMountNamespace(dir: string): string {
  const nsDir = join(dir, 'ns');
  mkdirSync(nsDir, { recursive: true });
  execFileSync('mount', ['--bind', nsDir, nsDir]);
  execFileSync('mount', ['--make-private', nsDir]);
  const file = join(nsDir, 'mnt');
  writeFileSync(file, '');
  execFileSync('unshare', [`--mount=${file}`, '--propagation', 'slave', 'true']);
  return file;
}

function removeMountNamespace(dir: string): void {
  for (const target of [join(dir, 'ns', 'mnt'), join(dir, 'ns')]) {
    try {
      execFileSync('umount', ['-l', target], { stdio: 'ignore' });
    } catch {
      // not mounted
    }
  }
}

/** Spawns `argv` inside the node's namespaces; it gets SIGTERM if this process dies. */
function launchInNode(mnt: string | undefined, net: NodeNetwork, argv: string[], logFile: string): ChildProcess {
  const ns = [...(mnt ? [`--mount=${mnt}`] : []), `--net=${net.netnsPath}`];
  return launch('setpriv', ['--pdeathsig', 'SIGTERM', 'nsenter', ...ns, '--', ...argv], logFile);
}

/** A forward.ts process (in the node's network namespace when `net` is given), once listening.
 *  Exported for tests that expose a host service to pods (test/support/fixtures/node.ts). */
export async function forwarder(dir: string, name: string, listen: string, connect: string, net?: NodeNetwork): Promise<ChildProcess> {
  const script = join(import.meta.dirname, 'forward.ts');
  const argv = [process.execPath, ...process.execArgv, script, '--listen', listen, '--connect', connect];
  const logFile = join(dir, `forward-${name}.log`);
  // stdin stays open as the forwarder's lifeline: it exits when this process is gone.
  const child = net
    ? spawn('setpriv', ['--pdeathsig', 'SIGTERM', 'nsenter', `--net=${net.netnsPath}`, '--', ...argv], { stdio: ['pipe', 'pipe', 'pipe'] })
    : spawn(argv[0]!, argv.slice(1), { stdio: ['pipe', 'pipe', 'pipe'] });
  const out = (d: Buffer) => writeFileSync(logFile, d, { flag: 'a' });
  child.stdout!.on('data', out);
  child.stderr!.on('data', out);
  // It prints one line once listening.
  await waitFor(`forwarder ${listen}`, async () => existsSync(logFile) && readFileSync(logFile, 'utf8').includes('forward: '), 30_000, child, logFile)
    .catch(async (err: unknown) => {
      await terminate(child);
      throw err;
    });
  return child;
}

async function nodeReady(kc: KubeConfig, name: string): Promise<boolean> {
  const node = await kc.makeApiClient(CoreV1Api).readNode({ name });
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** Starts a node registered to `plane`; resolves once the Node is Ready. */
export async function startNode(plane: ControlPlaneInfo, dir: string): Promise<RunningNode> {
  if (process.getuid?.() !== 0) throw new Error('the test node needs root (network namespaces, mounts, cgroups)');
  const kubelet = binaryPath('kubelet');
  const started = Date.now();
  execFileSync('bash', [join(import.meta.dirname, '../../../platform/node/node-install.sh')], { stdio: ['ignore', 'ignore', 'inherit'] });
  const images = await ensureImages();
  mkdirSync(dir, { recursive: true });
  await removeStaleNodes();
  const net = createNetwork();
  const name = net.netns;
  mkdirSync(OWNERS, { recursive: true });
  writeFileSync(join(OWNERS, String(net.k)), String(process.pid));
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  const cleanups: Array<() => unknown> = [];
  const stop = async () => {
    for (const fn of cleanups.reverse()) {
      try {
        await fn();
      } catch (err) {
        log(`stop: ${(err as Error).message}`);
      }
    }
    cleanups.length = 0;
  };
  cleanups.push(() => rmSync(join(OWNERS, String(net.k)), { force: true }), () => deleteNetwork(net));
  try {
    const port = new URL(plane.server).port;
    const sock = join(dir, 'apiserver.sock');
    const hostSide = await forwarder(dir, 'host', `unix:${sock}`, `tcp:127.0.0.1:${port}`);
    cleanups.push(() => terminate(hostSide));
    const nodeSide = await forwarder(dir, 'node', `tcp:${net.serviceIp}:443`, `unix:${sock}`, net);
    cleanups.push(() => terminate(nodeSide));

    const controllers = NODE_CONTROLLERS.filter((c) => !plane.controllers.includes(c));
    const kcm = await startControllerManager({
      dir, kubeconfigPath: plane.kubeconfigPath, caPemFile: join(plane.dir, 'certs', 'apiserver.crt'), saKeyFile: join(plane.dir, 'sa.key'),
    }, controllers, 'node-controller-manager');
    cleanups.push(() => kcm.stop());
    const scheduler = await startScheduler(dir, plane.kubeconfigPath);
    cleanups.push(() => scheduler.stop());

    // Stop order (reverse): kubelet, containerd, every process left in the cgroup (shims,
    // containers), then the mount namespace holding their mounts.
    createCgroup(name);
    const mnt = createMountNamespace(dir);
    cleanups.push(() => removeMountNamespace(dir));
    cleanups.push(() => killCgroup(name));

    const cfg = await writeContainerdConfig(dir, net);
    const containerdLog = join(dir, 'containerd.log');
    const containerd = launchInNode(mnt, net, ['containerd', '--config', cfg.config], containerdLog);
    enterCgroup(name, containerd.pid!);
    cleanups.push(() => terminate(containerd));
    await waitFor('containerd', async () => {
      execFileSync('ctr', ['--address', cfg.socket, 'version'], { stdio: 'ignore', timeout: 5000 });
      return true;
    }, 30_000, containerd, containerdLog);
    const importStart = Date.now();
    await importImages(cfg.socket, [images.pause, images.esi]);
    log(`images imported in ${Math.round((Date.now() - importStart) / 1000)}s`);

    const files = await writeKubeletConfig(dir, net, name, cfg.socket);
    const kubeconfig = join(dir, 'kubelet.kubeconfig');
    await writeKubeconfig(kubeconfig, `https://${net.serviceIp}:443`, plane.caPem, plane.token);
    const kubeletLog = join(dir, 'kubelet.log');
    const kubeletProc = launchInNode(mnt, net, [kubelet, ...kubeletArgs({ ...files, kubeconfig }, net, name)], kubeletLog);
    enterCgroup(name, kubeletProc.pid!);
    cleanups.push(async () => {
      await terminate(kubeletProc);
      await kc.makeApiClient(CoreV1Api).deleteNode({ name }).catch(() => undefined);
    });
    await waitFor(`node ${name} Ready`, () => nodeReady(kc, name), 120_000, kubeletProc, kubeletLog);
    log(`node ${name} Ready in ${Math.round((Date.now() - started) / 1000)}s (pods ${net.podCidr}, logs ${dir})`);
    return { name, ip: net.nodeIp, podCidr: net.podCidr, dir, esiImage: ESI_IMAGE, stop };
  } catch (err) {
    log(`start failed; kubelet log tail:\n${tail(join(dir, 'kubelet.log'), 30)}`);
    await stop();
    throw err;
  }
}
