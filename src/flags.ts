// Command-line pieces shared by the long-running subcommands (`esi controller`, `esi
// webhook`): flag values checked with an error naming the flag, the kubeconfig, and the
// namespace the process runs in.
import { KubeConfig } from '@kubernetes/client-node';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { UsageError } from './usage.js';

/** Runs a command's flag checks: whatever they throw is a UsageError (docs/cli.md). */
export function checkFlags<T>(check: () => T): T {
  try {
    return check();
  } catch (err) {
    throw err instanceof UsageError ? err : new UsageError((err as Error).message);
  }
}

export function bool(name: string, raw: string): boolean {
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new UsageError(`--${name} must be true or false, got "${raw}"`);
}

export function positive(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${name} must be a positive number, got "${raw}"`);
  return n;
}

/** A TCP port: a whole number from 1 to 65535. */
export function port(name: string, raw: string): number {
  const n = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= 65535)) throw new UsageError(`--${name} must be a port number from 1 to 65535, got "${raw}"`);
  return n;
}

/** One of a fixed set of words. */
export function oneOf<T extends string>(name: string, raw: string, values: readonly T[]): T {
  if ((values as readonly string[]).includes(raw)) return raw as T;
  throw new UsageError(`--${name} must be one of ${values.join(', ')}, got "${raw}"`);
}

const IN_CLUSTER_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** --kubeconfig FILE, else in-cluster, then $KUBECONFIG / ~/.kube/config. A missing or
 *  unreadable kubeconfig is a UsageError naming it (client-node would otherwise build a
 *  client for http://localhost and the process would retry it for ever). */
export function loadKubeConfig(file: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  const load = (path: string, what: string) => {
    try {
      kc.loadFromFile(path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new UsageError(`${what} ${path} cannot be read (${code ?? (err as Error).message})`);
    }
  };
  if (file) load(file, '--kubeconfig');
  else {
    // client-node's order: $KUBECONFIG, ~/.kube/config, then in-cluster; each checked first.
    const listed = (process.env.KUBECONFIG ?? '').split(delimiter).filter(Boolean);
    for (const f of listed) if (!existsSync(f)) throw new UsageError(`$KUBECONFIG names ${f}, which cannot be read (ENOENT)`);
    const inCluster = !!process.env.KUBERNETES_SERVICE_HOST && existsSync(IN_CLUSTER_TOKEN);
    if (listed.length === 0 && !existsSync(join(homedir(), '.kube', 'config')) && !inCluster) {
      throw new UsageError('no kubeconfig: pass --kubeconfig FILE, set $KUBECONFIG, or run in a pod with a service account');
    }
    kc.loadFromDefault();
  }
  if (!kc.getCurrentCluster()) throw new UsageError(`the kubeconfig${file ? ` ${file}` : ''} names no current cluster (current-context "${kc.getCurrentContext()}")`);
  return kc;
}

/** The namespace the process keeps its own objects in, found as the tools users know find
 *  theirs: --namespace, else $POD_NAMESPACE (the chart sets it), else the in-cluster
 *  ServiceAccount's namespace, else the kubeconfig context's namespace, else `default`
 *  (kubectl's rule; a kind cluster's kubeconfig names none). */
export function ownNamespace(flag: string | undefined, kc?: KubeConfig): string {
  if (flag) return flag;
  if (process.env.POD_NAMESPACE) return process.env.POD_NAMESPACE;
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim();
  } catch {
    return kc?.getContextObject(kc.getCurrentContext())?.namespace || 'default';
  }
}
