// The process helpers of the tests, the test platform (etcd, kube-apiserver,
// kube-controller-manager, the node) and the benchmarks (bench/): spawn with the output in
// a log file, stop gracefully then forcibly, whether a pid is alive, poll until ready, pick
// a free loopback port. Polling for a test's own conditions is until.ts.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';

export async function terminate(child: ChildProcess, graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** Spawns `bin args` with stdout and stderr appended to `logFile`. */
export function launch(bin: string, args: string[], logFile: string, opts: SpawnOptions = {}): ChildProcess {
  const log = createWriteStream(logFile, { flags: 'a' });
  const child = spawn(bin, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  return child;
}

export function tail(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Polls `check` every 150 ms until it returns true, while `child` lives: fails early when it
 *  exits, or after `timeoutMs`, with the end of its log (`log`: a log file's path, or a
 *  function returning the captured output). The one wait-for-a-started-process helper of
 *  test/ and bench/. */
export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, child: ChildProcess, log: string | (() => string)) {
  const end = () => (typeof log === 'string' ? tail(log) : log().trimEnd().split('\n').slice(-15).join('\n') || '(no log)');
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}); last log lines:\n${end()}`);
    }
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`${what} not ready after ${timeoutMs} ms; last log lines:\n${end()}`);
}

/** GET `url`; true on 200. Without `ca` the certificate is not verified (readiness polls of
 *  self-signed local servers only). */
export function httpsOk(url: string, token?: string, ca?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const headers = token ? { authorization: `Bearer ${token}` } : undefined;
    const req = request(url, { headers, ca, rejectUnauthorized: !!ca, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}
