// The control plane the tests use. `useControlPlane()` returns the one shared by the
// whole tap run (started by tap-before.ts), or, when a test file runs alone, starts a
// private one and stops it when the test ends.
//
// A test that needs controllers asks for them: `useControlPlane(t, { controllers:
// ['garbage-collector-controller'] })` runs kube-controller-manager with those (and only
// those) controllers on a private plane; the shared plane always runs SHARED_CONTROLLERS,
// and asking it for another controller fails with the line to change.
import { KubeConfig } from '@kubernetes/client-node';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startControlPlane, type ControlPlaneInfo, type ControlPlaneOptions, type ControllerName } from './control-plane-process.js';
import { alive } from './processes.js';

export interface ControlPlane extends ControlPlaneInfo {
  kc: KubeConfig;
  /** Stops a private control plane; a no-op for the shared one (tap-after stops it). */
  stop(): Promise<void>;
}

/** Controllers the shared plane of a tap run always runs: the garbage collector, so that
 *  deleting an owner (e.g. an ExternalSecret) deletes its dependents as in a cluster; the
 *  namespace controller, so that `kubectl delete namespace` empties and removes a namespace
 *  (what finalizers must not hold: test/e2e/adversarial/controller-namespace-deletion.test.ts). */
export const SHARED_CONTROLLERS: readonly ControllerName[] = ['garbage-collector-controller', 'namespace-controller'];

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Where the shared control plane of a test run keeps its state. Keyed by the tap
 *  runner's pid (the parent of both the `before` hook and every test process), so
 *  concurrent test runs never share or stop each other's control plane. */
export const SHARED_DIR = resolve(process.env.ESI_PLATFORM_DIR ?? join(import.meta.dirname, '..', '..', '..', '.esi-run', `platform-${process.ppid}`));


export function readSharedState(): (ControlPlaneInfo & { pid: number }) | undefined {
  const file = join(SHARED_DIR, 'state.json');
  if (!existsSync(file)) return undefined;
  let state: ControlPlaneInfo & { pid: number; error?: string };
  try {
    state = JSON.parse(readFileSync(file, 'utf8')) as typeof state;
  } catch {
    return undefined; // written by an older supervisor that did not rename: poll again
  }
  if (state.error || !alive(state.pid)) return undefined;
  return state;
}

function withClient(info: ControlPlaneInfo, stop: () => Promise<void>): ControlPlane {
  const kc = new KubeConfig();
  kc.loadFromFile(info.kubeconfigPath);
  return { ...info, kc, stop };
}

let privateOne: Promise<ControlPlane> | undefined;

export async function useControlPlane(t?: Teardown, opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const shared = readSharedState();
  if (shared) {
    const missing = (opts.controllers ?? []).filter((c) => !(shared.controllers ?? []).includes(c));
    if (missing.length) {
      throw new Error(`the shared control plane does not run ${missing.join(', ')}: add it to SHARED_CONTROLLERS in test/support/platform/controlPlane.ts`);
    }
    return withClient(shared, async () => {});
  }
  if (process.env.ESI_NO_PLATFORM === '1') {
    // `npm run test:unit` (test/run-unit.ts) runs only files that need no control plane.
    throw new Error('this test needs the control plane, but ESI_NO_PLATFORM=1 (npm run test:unit): test/run-unit.ts should not have chosen it');
  }
  if (!privateOne) {
    privateOne = (async () => {
      const dir = await mkdtemp(join(tmpdir(), 'esi-cp-'));
      const cp = await startControlPlane(dir, opts);
      return withClient(cp, cp.stop);
    })();
    const cp = await privateOne;
    t?.teardown(() => cp.stop());
    return cp;
  }
  return privateOne;
}
