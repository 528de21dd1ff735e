// Stage 4: tell the application its files changed. Either an HTTP request to a loopback
// URL (the app's reload endpoint) or a signal to a process found by name in /proc (the
// pod shares its process namespace). Delivery runs in the background with retries and
// backoff: the refresh loop never waits for it. Several changes while a delivery is
// retrying collapse into one more delivery.
import { request } from 'node:http';
import { readdir, readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { OnChange } from '../src/agent-config/types.js';
import { isLoopbackHost } from './config.js';

export interface NotifierOptions {
  logger: Logger;
  /** Where to look for processes; tests point it at a fake tree. */
  procRoot?: string;
  maxAttempts?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  timeoutMs?: number;
  /** Outcome of each delivery (after retries), for metrics. */
  onResult?: (ok: boolean) => void;
}

export interface Notifier {
  /** Schedules a delivery; returns at once. */
  notify(): void;
  /** Resolves when no delivery is pending (tests, shutdown). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/** One HTTP request to a loopback URL; resolves on a 2xx answer. */
export async function sendHttp(url: string, method: string, timeoutMs: number): Promise<number> {
  const u = new URL(url);
  if (u.protocol !== 'http:') throw new Error(`onChange URL must be http://, got ${u.protocol}`);
  if (!isLoopbackHost(u.hostname)) throw new Error(`refusing non-loopback onChange host "${u.hostname}"`);
  // Connect to the loopback address itself, not whatever "localhost" resolves to.
  const host = u.hostname.toLowerCase() === 'localhost' ? '127.0.0.1' : u.hostname.replace(/^\[|\]$/g, '');
  return new Promise((resolve, reject) => {
    const req = request(
      { host, port: u.port || 80, path: `${u.pathname}${u.search}`, method, headers: { host: u.host, 'user-agent': 'esi-agent' }, timeout: timeoutMs },
      (res) => {
        res.resume();
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) resolve(status);
        else reject(new Error(`HTTP ${status}`));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** PIDs whose `comm`, or the basename of whose argv[0], equals `name`. */
export async function findProcesses(name: string, procRoot = '/proc'): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir(procRoot)) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const dir = join(procRoot, entry);
    const comm = (await readFile(join(dir, 'comm'), 'utf8').catch(() => '')).trim();
    const argv0 = (await readFile(join(dir, 'cmdline'), 'utf8').catch(() => '')).split('\0')[0] ?? '';
    if (comm === name || (argv0 !== '' && basename(argv0) === name)) pids.push(Number(entry));
  }
  return pids;
}

async function sendSignal(processName: string, signal: NodeJS.Signals, procRoot?: string): Promise<number[]> {
  const pids = await findProcesses(processName, procRoot);
  if (pids.length === 0) throw new Error(`no process named "${processName}" (does the pod set shareProcessNamespace: true?)`);
  for (const pid of pids) process.kill(pid, signal);
  return pids;
}

function describe(onChange: OnChange): Record<string, unknown> {
  if (onChange.type === 'signal') return { action: 'signal', process: onChange.process, signal: onChange.signal };
  // The path only: a query string is nobody's business in a log line.
  const u = new URL(onChange.url);
  return { action: 'http', method: onChange.method, url: `${u.protocol}//${u.host}${u.pathname}` };
}

export function createNotifier(onChange: OnChange | undefined, opts: NotifierOptions): Notifier {
  const maxAttempts = opts.maxAttempts ?? 6;
  const base = opts.baseDelayMs ?? 500;
  const cap = opts.maxDelayMs ?? 30_000;
  const timeoutMs = opts.timeoutMs ?? 5_000;
  const abort = new AbortController();
  let dirty = false;
  let running: Promise<void> | undefined;

  const deliverOnce = async (): Promise<void> => {
    if (!onChange) return;
    if (onChange.type === 'http') await sendHttp(onChange.url, onChange.method, timeoutMs);
    else await sendSignal(onChange.process, onChange.signal, opts.procRoot);
  };

  const deliver = async (): Promise<void> => {
    const log = opts.logger.child(describe(onChange!));
    for (let attempt = 1; attempt <= maxAttempts && !abort.signal.aborted; attempt++) {
      try {
        await deliverOnce();
        log.info({ attempt }, 'application notified of changed files');
        opts.onResult?.(true);
        return;
      } catch (err) {
        const last = attempt === maxAttempts;
        log.warn({ attempt, err: (err as Error).message }, last ? 'notification failed, giving up' : 'notification failed, retrying');
        if (last) break;
        await sleep(Math.min(cap, base * 2 ** (attempt - 1)), undefined, { signal: abort.signal }).catch(() => undefined);
        // A newer change arrived while waiting: the next loop run delivers for both.
        if (dirty) return;
      }
    }
    opts.onResult?.(false);
  };

  const pump = async (): Promise<void> => {
    while (dirty && !abort.signal.aborted) {
      dirty = false;
      await deliver();
    }
  };

  return {
    notify(): void {
      if (!onChange || abort.signal.aborted) return;
      dirty = true;
      // Start on a later turn of the event loop so the caller never pays for any of
      // the delivery; `finally` clears `running` only after it was set.
      running ??= new Promise<void>((r) => setImmediate(r))
        .then(pump)
        .finally(() => {
          running = undefined;
        });
    },
    async idle(): Promise<void> {
      while (running) await running;
    },
    async close(): Promise<void> {
      abort.abort();
      await running;
    },
  };
}
