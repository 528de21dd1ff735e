// Command-line pieces shared by the long-running subcommands (`esi controller`, `esi
// webhook`): flag values checked with an error naming the flag, the kubeconfig, and the
// namespace the process runs in.
import { KubeConfig } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';

export function bool(name: string, raw: string): boolean {
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new Error(`--${name} must be true or false, got "${raw}"`);
}

export function positive(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} must be a positive number, got "${raw}"`);
  return n;
}

/** --kubeconfig FILE, else in-cluster, then $KUBECONFIG / ~/.kube/config. */
export function loadKubeConfig(file: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  if (file) kc.loadFromFile(file);
  else kc.loadFromDefault();
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
