// Where the third-party binaries built by build-binaries.sh live: ~/.cache/esi/bin (or
// $ESI_CACHE/bin), named with the version pinned in versions.env.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export type KubeBinary = 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler' | 'kubelet';
export type Binary = KubeBinary | 'etcd';

export function versions(): { kubernetes: string; etcd: string } {
  return { kubernetes: pinned('KUBERNETES_VERSION'), etcd: pinned('ETCD_VERSION') };
}

export function cacheDir(): string {
  return process.env.ESI_CACHE ?? join(homedir(), '.cache', 'esi');
}

/** Path of a cached binary; throws with the command that builds it when it is missing. */
export function binaryPath(name: Binary): string {
  const v = versions();
  const p = join(cacheDir(), 'bin', `${name}-${name === 'etcd' ? v.etcd : v.kubernetes}`);
  if (!existsSync(p)) {
    const target = name === 'etcd' || name === 'kube-apiserver' ? name : 'kube-components';
    throw new Error(`${name} binary missing at ${p}: run \`npm run platform:build\` (test/platform/build-binaries.sh ${target})`);
  }
  return p;
}

/** A version pinned in versions.env (e.g. NODE_VERSION); throws when it is not set. */
export function pinned(key: string): string {
  const env = readFileSync(new URL('../../platform/versions.env', import.meta.url), 'utf8');
  const m = new RegExp(`^${key}=(\\S+)`, 'm').exec(env);
  if (!m?.[1]) throw new Error(`test/platform/versions.env: ${key} is not set`);
  return m[1];
}

/** The Node.js binary the images run (NODE_VERSION), installed by install-node.sh from the
 *  npm registry and cached under ~/.cache/esi/node: installs it the first time. */
export function pinnedNode(): string {
  const p = join(cacheDir(), 'node', `v${pinned('NODE_VERSION')}`, 'bin', 'node');
  if (existsSync(p)) return p;
  try {
    return execFileSync('bash', [new URL('../../platform/install-node.sh', import.meta.url).pathname, '--print'], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 600_000 })
      .toString().trim().split('\n').pop()!;
  } catch (err) {
    const stderr = String((err as { stderr?: Buffer }).stderr ?? '').trim().split('\n').slice(-10).join('\n');
    throw new Error(`installing the pinned Node.js failed (test/platform/install-node.sh):\n${stderr}`, { cause: err });
  }
}
