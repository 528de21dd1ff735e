// Where the third-party binaries built by build-binaries.sh live: ~/.cache/esi/bin (or
// $ESI_CACHE/bin), named with the version pinned in versions.env.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export type KubeBinary = 'kube-apiserver' | 'kube-controller-manager' | 'kube-scheduler' | 'kubelet';
export type Binary = KubeBinary | 'etcd';

export function versions(): { kubernetes: string; etcd: string } {
  const env = readFileSync(new URL('./versions.env', import.meta.url), 'utf8');
  const get = (k: string) => {
    const m = new RegExp(`^${k}=(\\S+)`, 'm').exec(env);
    if (!m?.[1]) throw new Error(`test/platform/versions.env: ${k} is not set`);
    return m[1];
  };
  return { kubernetes: get('KUBERNETES_VERSION'), etcd: get('ETCD_VERSION') };
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
