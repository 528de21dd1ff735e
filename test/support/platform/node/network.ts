// The test node's network: a network namespace the platform creates, joined to this host
// by one veth pair, with the pod bridge (CNI `bridge`, inside the namespace) on a /24
// that only exists in there. Nothing leaves the machine: the namespace has no default
// route and the host does not forward (its ip_forward is untouched); the host only gets a
// route to the pod /24 through the veth, so the apiserver can call webhook pods and the
// kubelet.
//
//   host                                 netns esi-node-<k>
//   10.201.<k>.1/30  esinode<k>h <=====> esinode<k>n 10.201.<k>.2/30  (node InternalIP)
//   route 10.202.<k>.0/24 via .2                 cni0 10.202.<k>.1/24 -> pods
//                                                lo   10.96.0.1/32    (apiserver forwarder)
//
// 10.96.0.1 is the `kubernetes` Service address (first of --service-cluster-ip-range):
// in-cluster clients in pods (the agent, the webhook) and the kubelet reach the apiserver
// there, through forward.ts — there is no kube-proxy.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';

export interface NodeNetwork {
  /** Instance number, unique on this machine while the node runs. */
  k: number;
  netns: string;
  /** /run/netns/<netns>, for nsenter --net=. */
  netnsPath: string;
  hostIp: string;
  nodeIp: string;
  podCidr: string;
  serviceIp: string;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();
const inNs = (netns: string, ...args: string[]) => ip('-n', netns, ...args);

export function networkFor(k: number): NodeNetwork {
  return {
    k, netns: `esi-node-${k}`, netnsPath: `/run/netns/esi-node-${k}`,
    hostIp: `10.201.${k}.1`, nodeIp: `10.201.${k}.2`, podCidr: `10.202.${k}.0/24`, serviceIp: '10.96.0.1',
  };
}

/** Instance numbers of the node networks present on this machine (running or stale). */
export function existingNetworks(): number[] {
  if (!existsSync('/run/netns')) return [];
  return readdirSync('/run/netns').map((n) => /^esi-node-(\d+)$/.exec(n)?.[1]).filter((k): k is string => !!k).map(Number);
}

/** Creates the namespace, veth pair, addresses and routes for a free instance number. */
export function createNetwork(): NodeNetwork {
  const taken = new Set(existingNetworks());
  const routes = ip('-4', 'route', 'show');
  for (let attempt = 0; attempt < 20; attempt++) {
    const k = 1 + Math.floor(Math.random() * 250);
    const net = networkFor(k);
    if (taken.has(k) || routes.includes(`10.201.${k}.`) || routes.includes(`10.202.${k}.`)) continue;
    try {
      ip('netns', 'add', net.netns); // fails if another run took k meanwhile
    } catch {
      continue;
    }
    try {
      const [h, n] = [`esinode${k}h`, `esinode${k}n`];
      ip('link', 'add', h, 'type', 'veth', 'peer', 'name', n, 'netns', net.netns);
      ip('addr', 'add', `${net.hostIp}/30`, 'dev', h);
      ip('link', 'set', h, 'up');
      inNs(net.netns, 'link', 'set', 'lo', 'up');
      inNs(net.netns, 'addr', 'add', `${net.serviceIp}/32`, 'dev', 'lo');
      inNs(net.netns, 'addr', 'add', `${net.nodeIp}/30`, 'dev', n);
      inNs(net.netns, 'link', 'set', n, 'up');
      // The namespace routes between the veth (host) and the pod bridge.
      execFileSync('ip', ['netns', 'exec', net.netns, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=1']);
      ip('route', 'add', net.podCidr, 'via', net.nodeIp, 'dev', h);
      return net;
    } catch (err) {
      deleteNetwork(net);
      throw new Error(`creating the node network ${net.netns} failed: ${(err as Error).message}`, { cause: err });
    }
  }
  throw new Error('no free node network number (10.201.<k>.0/30): remove stale ones with `ip netns del esi-node-<k>`');
}

/** Deleting the namespace destroys the veth pair (and with it the host route) and the bridge. */
export function deleteNetwork(net: NodeNetwork): void {
  try {
    ip('netns', 'del', net.netns);
  } catch {
    // already gone
  }
  try {
    ip('link', 'del', `esinode${net.k}h`);
  } catch {
    // went with the namespace
  }
}
