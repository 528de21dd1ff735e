// Runs kube-scheduler (same Kubernetes version, build-binaries.sh kube-components) against a
// local control plane, so that pods of Deployments and Jobs land on the test node. Listens
// on 127.0.0.1 only; no leader election.
import { join } from 'node:path';
import { binaryPath } from './binaries.js';
import { freePort, httpsOk, launch, terminate, waitFor } from './processes.js';

export async function startScheduler(dir: string, kubeconfigPath: string): Promise<{ stop(): Promise<void> }> {
  const port = await freePort();
  const log = join(dir, 'kube-scheduler.log');
  const child = launch(binaryPath('kube-scheduler'), [
    `--kubeconfig=${kubeconfigPath}`, '--leader-elect=false', '--bind-address=127.0.0.1', `--secure-port=${port}`,
    `--cert-dir=${join(dir, 'kube-scheduler-certs')}`, '--profiling=false', '--v=1',
  ], log);
  const stop = () => terminate(child);
  try {
    await waitFor('kube-scheduler', () => httpsOk(`https://127.0.0.1:${port}/healthz`), 60_000, child, log);
  } catch (err) {
    await stop();
    throw err;
  }
  return { stop };
}
