// Runs kube-controller-manager (same Kubernetes version as the apiserver, built by
// build-binaries.sh kube-components) against a local control plane with only the
// controllers a test needs, e.g. the garbage collector that deletes dependents whose
// owner is gone. Listens on 127.0.0.1 only; no leader election (one instance per plane).
import { join } from 'node:path';
import { binaryPath } from './binaries.js';
import { freePort, httpsOk, launch, terminate, waitFor } from './processes.js';

/** Controller names as kube-controller-manager's --controllers flag spells them. */
export type ControllerName =
  | 'garbage-collector-controller'
  | 'root-ca-certificate-publisher-controller'
  | 'serviceaccount-controller'
  | 'serviceaccount-token-controller'
  | 'namespace-controller'
  | 'deployment-controller'
  | 'replicaset-controller'
  | 'job-controller'
  | 'endpoints-controller'
  | 'endpointslice-controller'
  | 'disruption-controller'
  | 'pod-garbage-collector-controller'
  | 'node-lifecycle-controller';

export interface ControllerManagerInput {
  dir: string;
  kubeconfigPath: string;
  /** PEM of the apiserver's CA: published as the kube-root-ca.crt ConfigMap in every
   *  namespace (root-ca-certificate-publisher-controller), which service-account token
   *  volumes of real pods need. */
  caPemFile: string;
  /** Private key signing service-account tokens (serviceaccount-token-controller). */
  saKeyFile: string;
}

export interface RunningControllerManager {
  controllers: readonly ControllerName[];
  stop(): Promise<void>;
}

export async function startControllerManager(input: ControllerManagerInput, controllers: readonly ControllerName[], name = 'kube-controller-manager'): Promise<RunningControllerManager> {
  const bin = binaryPath('kube-controller-manager');
  const port = await freePort();
  const log = join(input.dir, `${name}.log`);
  const args = [
    `--kubeconfig=${input.kubeconfigPath}`,
    `--controllers=${controllers.join(',')}`,
    '--leader-elect=false', '--bind-address=127.0.0.1', `--secure-port=${port}`,
    `--cert-dir=${join(input.dir, `${name}-certs`)}`,
    `--root-ca-file=${input.caPemFile}`,
    `--service-account-private-key-file=${input.saKeyFile}`,
    // One controller-manager serves a throwaway plane: react fast rather than batch.
    '--concurrent-gc-syncs=5', '--node-monitor-grace-period=40s', '--profiling=false', '--v=1',
  ];
  const child = launch(bin, args, log);
  const stop = () => terminate(child);
  try {
    // /healthz is always allowed anonymously; it turns 200 once the controllers started.
    await waitFor('kube-controller-manager', () => httpsOk(`https://127.0.0.1:${port}/healthz`), 60_000, child, log);
  } catch (err) {
    await stop();
    throw err;
  }
  return { controllers, stop };
}
