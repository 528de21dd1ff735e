// The node's container runtime: a private containerd (Debian package, node-install.sh)
// with its own root, state, socket and CNI configuration under the node's directory, run
// inside the node's network and mount namespaces. Images come from OCI archives
// (images/build-images.ts) imported with `ctr`; nothing is ever pulled.
import { execFile } from 'node:child_process';
import { writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { NodeNetwork } from './network.js';

const run = promisify(execFile);

export const PAUSE_IMAGE = 'esi.local/pause:3.10';

export interface ContainerdPaths {
  config: string;
  socket: string;
  cniConfDir: string;
}

export async function writeContainerdConfig(dir: string, net: NodeNetwork): Promise<ContainerdPaths> {
  const root = join(dir, 'containerd');
  const cniConfDir = join(dir, 'cni', 'conf');
  await mkdir(cniConfDir, { recursive: true });
  const socket = join(dir, 'containerd.sock');
  const config = join(dir, 'containerd.toml');
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  await writeFile(config, [
    'version = 2',
    `root = "${root}/root"`,
    `state = "${root}/state"`,
    // Plugins that look outside the node's directory (or need kernel modules) are off.
    'disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",',
    '  "io.containerd.snapshotter.v1.devmapper", "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp"]',
    '[grpc]', `  address = "${socket}"`,
    '[ttrpc]', `  address = "${socket}.ttrpc"`,
    `[${cri}]`,
    `  sandbox_image = "${PAUSE_IMAGE}"`,
    '  disable_apparmor = true',
    // This machine denies lowering oom_score_adj (no CAP_SYS_RESOURCE), which runc does
    // for the sandbox (-998): keep pod scores at or above containerd's own.
    '  restrict_oom_score_adj = true',
    // Pod network namespaces are pinned under the node's state, not /run/netns.
    '  netns_mounts_under_state_dir = true',
    '  stream_server_address = "127.0.0.1"',
    '  stream_server_port = "0"',
    `[${cri}.containerd]`,
    '  snapshotter = "overlayfs"',
    '  default_runtime_name = "runc"',
    `[${cri}.containerd.runtimes.runc]`,
    '  runtime_type = "io.containerd.runc.v2"',
    `[${cri}.cni]`,
    '  bin_dir = "/usr/lib/cni"',
    `  conf_dir = "${cniConfDir}"`,
    '',
  ].join('\n'));
  await writeFile(join(cniConfDir, '10-esi-node.conflist'), JSON.stringify({
    cniVersion: '1.0.0', name: 'esi-node',
    plugins: [{
      type: 'bridge', bridge: 'cni0', isGateway: true, ipMasq: false, hairpinMode: true,
      ipam: { type: 'host-local', ranges: [[{ subnet: net.podCidr }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: join(dir, 'cni', 'ipam') },
    }],
  }, null, 2));
  return { config, socket, cniConfDir };
}

/** Imports OCI archives into the k8s.io namespace, where the CRI plugin finds them. */
export async function importImages(socket: string, archives: string[]): Promise<void> {
  for (const archive of archives) {
    await run('ctr', ['--address', socket, '--namespace', 'k8s.io', 'images', 'import', archive], { timeout: 300_000 })
      .catch((err: Error & { stderr?: string }) => {
        throw new Error(`ctr images import ${archive} failed: ${err.stderr ?? err.message}`);
      });
  }
}
