// The node's kubelet (same Kubernetes version as the apiserver, build-binaries.sh
// kube-components): its configuration keeps everything under the node's directory and
// cgroup, registers the node with the address of the node's network namespace, and turns
// off what would act on this shared machine (image garbage collection of the imported
// images, evictions on a busy disk, swap checks, DNS outside the namespace).
import { writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { NodeNetwork } from './network.js';

export interface KubeletFiles {
  config: string;
  kubeconfig: string;
  rootDir: string;
  podLogsDir: string;
}

export async function writeKubeletConfig(dir: string, net: NodeNetwork, cgroup: string, containerdSocket: string): Promise<Omit<KubeletFiles, 'kubeconfig'>> {
  const rootDir = join(dir, 'kubelet');
  const podLogsDir = join(dir, 'pod-logs');
  await mkdir(rootDir, { recursive: true });
  await mkdir(podLogsDir, { recursive: true });
  // Pods get no nameserver: nothing they resolve can leave the machine. In-cluster clients
  // use KUBERNETES_SERVICE_HOST (an address), not DNS.
  const resolvConf = join(dir, 'resolv.conf');
  await writeFile(resolvConf, 'options ndots:0\n');
  const config = join(dir, 'kubelet-config.json');
  await writeFile(config, JSON.stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: net.nodeIp, port: 10250, readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1', healthzPort: 10248,
    // The apiserver reaches the kubelet (logs, exec) without client certificates; only
    // this machine can route to the node address.
    authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
    authorization: { mode: 'AlwaysAllow' },
    containerRuntimeEndpoint: `unix://${containerdSocket}`,
    cgroupDriver: 'cgroupfs', cgroupsPerQOS: true, cgroupRoot: `/${cgroup}`,
    // failCgroupV1: false because test machines may still mount cgroup v1 (/sys/fs/cgroup a
    // tmpfs of v1 hierarchies): since 1.35 it defaults to true, and a kubelet with it true
    // refuses to start on cgroup v1 ("configured to not run on a host using cgroup v1").
    failSwapOn: false, failCgroupV1: false,
    resolvConf, clusterDomain: 'cluster.local',
    podLogsDir,
    staticPodPath: '',
    imageGCHighThresholdPercent: 100, imageGCLowThresholdPercent: 99,
    evictionHard: { 'memory.available': '50Mi', 'nodefs.available': '1%', 'imagefs.available': '1%', 'nodefs.inodesFree': '1%' },
    maxPods: 60, serializeImagePulls: false,
    // Faster reactions than a production node: the tests wait on them.
    nodeStatusUpdateFrequency: '4s', syncFrequency: '10s', fileCheckFrequency: '10s',
    runtimeRequestTimeout: '2m', shutdownGracePeriod: '0s',
  }, null, 2));
  return { config, rootDir, podLogsDir };
}

export function kubeletArgs(files: KubeletFiles, net: NodeNetwork, nodeName: string): string[] {
  return [
    `--config=${files.config}`, `--kubeconfig=${files.kubeconfig}`,
    `--root-dir=${files.rootDir}`, `--cert-dir=${join(files.rootDir, 'pki')}`,
    `--node-ip=${net.nodeIp}`, `--hostname-override=${nodeName}`, '--v=1',
  ];
}
