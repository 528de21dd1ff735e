// A third-party test server as a child process that stops by itself: it runs under
// coreutils `timeout`, its last output is kept for error messages, and stop() ends it
// (SIGTERM, then SIGKILL after 5 s). Shared by the backend starters.
import { spawn, type ChildProcess } from 'node:child_process';
import { waitFor } from '../processes.js';

export interface BoundedProcess {
  child: ChildProcess;
  /** The last 8 KB the process printed (stdout and stderr). */
  log(): string;
  stop(): Promise<void>;
}

/** `stopSignal` (default SIGTERM): what stop() and the time limit send first (PostgreSQL
 *  shuts down at once on SIGINT, but waits for its clients on SIGTERM). */
export function spawnBounded(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; limitSeconds?: number; stopSignal?: NodeJS.Signals } = {}): BoundedProcess {
  const signal = opts.stopSignal ?? 'SIGTERM';
  const limit = [...(opts.stopSignal ? ['-s', signal] : []), String(opts.limitSeconds ?? 1200)];
  const child = spawn('timeout', [...limit, cmd, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'], ...(opts.env ? { env: opts.env } : {}), ...(opts.cwd ? { cwd: opts.cwd } : {}),
  });
  let log = '';
  const keep = (d: Buffer) => (log = (log + d.toString('utf8')).slice(-8000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let spawnError: Error | undefined;
  child.on('error', (err) => (spawnError = err));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null || spawnError) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  return {
    child,
    log: () => (spawnError ? `cannot run ${cmd} under coreutils timeout: ${spawnError.message}\n${log}` : log),
    stop,
  };
}

/** Waits for `ready` while the process lives (waitFor, test/support/platform/processes.ts); a `ready`
 *  that throws counts as not ready yet. */
export async function waitUntilReady(p: BoundedProcess, name: string, ready: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  await waitFor(name, ready, timeoutMs, p.child, () => p.log());
}
