// A third-party test server as a child process that stops by itself: it runs under
// coreutils `timeout`, its last output is kept for error messages, and stop() ends it
// (SIGTERM, then SIGKILL after 5 s). Shared by the backend starters.
import { spawn, type ChildProcess } from 'node:child_process';

export interface BoundedProcess {
  child: ChildProcess;
  /** The last 8 KB the process printed (stdout and stderr). */
  log(): string;
  stop(): Promise<void>;
}

export function spawnBounded(cmd: string, args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; limitSeconds?: number } = {}): BoundedProcess {
  const child = spawn('timeout', [String(opts.limitSeconds ?? 1200), cmd, ...args], {
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
    child.kill('SIGTERM');
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

/** Polls `ready` every 100 ms; throws with the output tail when the process exits or
 *  `timeoutMs` passes. A `ready` that throws counts as not ready yet. */
export async function waitUntilReady(p: BoundedProcess, name: string, ready: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (p.child.exitCode !== null || p.child.signalCode !== null) {
      throw new Error(`${name} exited (${p.child.exitCode ?? p.child.signalCode}):\n${p.log()}`);
    }
    if (await ready().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${name} not ready within ${timeoutMs / 1000} s:\n${p.log()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
