// The refresh loop. `init-only`: one cycle, exit 0 or 1. Sidecar modes: retry the first
// cycle until it succeeds (the startup probe holds the app until then), report ready,
// then refresh every `refreshSeconds` ± jitter (so a fleet of pods does not hit the store
// in lockstep). A failed cycle keeps the last good files, is logged by the cycle and
// counted, and is retried with capped exponential backoff instead of waiting a full period.
// The period is stretched to the floor the store's read budget sets, a change generation
// wakes the wait (docs/fleet.md), and the backoff
// outlives a restart of the container (injector/backoff-state.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { InjectionMode } from '../src/agent-config/types.js';
import type { BackoffState } from './backoff-state.js';

export interface LoopOptions {
  mode: InjectionMode;
  refreshSeconds: number;
  /** One fetch → render → write → notify pass; throws on failure (already logged). */
  cycle: () => Promise<void>;
  /** Called once, after the first successful cycle (sidecar modes). */
  onReady?: () => void;
  signal: AbortSignal;
  logger: Logger;
  /** Fraction of the period used as ± jitter; 0.1 by default. */
  jitter?: number;
  backoffBaseMs?: number;
  /** Backoff cap; the refresh period (at most 5 minutes) by default. */
  backoffMaxMs?: number;
  random?: () => number;
  /** The floor the store's read budget sets (seconds), read at every wait: the period is
   *  max(refreshSeconds, floor). */
  floorSeconds?: () => number | undefined;
  /** Wakes a wait: 'change' runs a cycle at once, 'floor' re-times the wait. */
  wakeup?: Wakeup;
  /** Failure count and next attempt, kept across container restarts (injector/backoff-state.ts). */
  state?: { load(): Promise<BackoffState>; save(s: BackoffState): Promise<void> };
  /** A failure the store answered with its rate limit or quota (src/providers/throttle.ts). */
  throttled?: (err: unknown) => boolean;
  now?: () => number;
}

/** A throttled store's retries start here (and the cap is at least THROTTLED_MAX_MS): every
 *  agent of the fleet reading it slows the same way (docs/fleet.md). */
export const THROTTLED_BASE_MS = 30_000;
const THROTTLED_MAX_MS = 15 * 60_000;

/** Interrupts the loop's wait (the channel's callbacks call wake). */
export class Wakeup {
  private pending: 'change' | 'floor' | undefined;
  private resolve: ((why: 'change' | 'floor') => void) | undefined;

  wake(why: 'change' | 'floor'): void {
    if (this.resolve) {
      const r = this.resolve;
      this.resolve = undefined;
      r(why);
    } else if (this.pending !== 'change') this.pending = why;
  }

  /** Sleeps `ms` (clamped) unless woken or aborted. */
  async wait(ms: number, signal: AbortSignal): Promise<'timeout' | 'change' | 'floor' | 'aborted'> {
    if (signal.aborted) return 'aborted';
    if (this.pending) {
      const p = this.pending;
      this.pending = undefined;
      return p;
    }
    const ac = new AbortController();
    const onAbort = () => ac.abort();
    signal.addEventListener('abort', onAbort, { once: true });
    const woken = new Promise<'change' | 'floor'>((r) => (this.resolve = r));
    try {
      return await Promise.race([
        sleep(Math.min(Math.max(0, ms), MAX_TIMER_MS), 'timeout' as const, { signal: ac.signal }).catch(() => 'aborted' as const),
        woken,
      ]);
    } finally {
      this.resolve = undefined;
      ac.abort();
      signal.removeEventListener('abort', onAbort);
    }
  }
}

/** `ms` ± `fraction`·`ms`, uniformly. */
export function jittered(ms: number, fraction: number, random: () => number = Math.random): number {
  return Math.max(0, Math.round(ms * (1 + fraction * (2 * random() - 1))));
}

/** Delay before retry number `failures` (1-based): base·2^(n-1), capped, with ±10% jitter. */
export function backoffDelay(failures: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const raw = Math.min(maxMs, baseMs * 2 ** Math.min(failures - 1, 30));
  return Math.min(maxMs, jittered(raw, 0.1, random));
}

/** Longest delay a Node timer honours: a longer one fires after 1 ms (a hot loop). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Sleeps unless aborted; returns false when aborted. Every delay is clamped. */
async function wait(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await sleep(Math.min(Math.max(0, ms), MAX_TIMER_MS), undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

async function attempt(cycle: () => Promise<void>): Promise<{ ok: true } | { ok: false; err: unknown }> {
  try {
    await cycle();
    return { ok: true };
  } catch (err) {
    return { ok: false, err };
  }
}

/** The failure count and the next retry, mirrored into the persisted state. */
class Backoff {
  failures = 0;
  lastThrottled = false;
  constructor(private readonly opts: LoopOptions, private readonly periodMs: () => number, private readonly now: () => number) {}

  private get base(): number {
    return this.opts.backoffBaseMs ?? 1000;
  }

  /** Restores a previous start's backoff; resolves false when aborted while waiting it out. */
  async resume(): Promise<boolean> {
    const { failures, nextAttemptAt } = (await this.opts.state?.load()) ?? { failures: 0, nextAttemptAt: 0 };
    this.failures = failures;
    if (failures === 0) return true;
    const rest = Math.max(0, nextAttemptAt - this.now());
    this.opts.logger.warn({ failures, retryInMs: rest }, 'resuming the backoff of the previous start');
    return rest === 0 || wait(rest, this.opts.signal);
  }

  /** Counts a failure; returns the delay before the retry. */
  async failed(err: unknown): Promise<number> {
    this.failures++;
    this.lastThrottled = this.opts.throttled?.(err) ?? false;
    const cap = Math.max(this.base, this.opts.backoffMaxMs ?? Math.min(this.periodMs(), 300_000));
    const random = this.opts.random ?? Math.random;
    const delay = this.lastThrottled
      ? backoffDelay(this.failures, Math.max(this.base, THROTTLED_BASE_MS), Math.max(cap, THROTTLED_MAX_MS), random)
      : backoffDelay(this.failures, this.base, cap, random);
    await this.opts.state?.save({ failures: this.failures, nextAttemptAt: this.now() + delay });
    return delay;
  }

  async succeeded(): Promise<void> {
    this.failures = 0;
    await this.opts.state?.save({ failures: 0, nextAttemptAt: 0 });
  }
}

/** Runs until aborted (sidecar) or after one cycle (init-only); resolves to an exit code. */
export async function runLoop(opts: LoopOptions): Promise<number> {
  const { signal, logger } = opts;
  const now = opts.now ?? Date.now;
  const periodMs = () => Math.max(opts.refreshSeconds, opts.floorSeconds?.() ?? 0) * 1000;
  const backoff = new Backoff(opts, periodMs, now);
  // A previous run of this container left a backoff: wait out its remainder first.
  if (!(await backoff.resume())) return opts.mode === 'init-only' ? 1 : 0;

  if (opts.mode === 'init-only') {
    const r = await attempt(opts.cycle);
    if (r.ok) await backoff.succeeded();
    else logger.warn({ failures: backoff.failures + 1, retryInMs: await backoff.failed(r.err) }, 'render failed; the next start waits out the backoff');
    return r.ok ? 0 : 1;
  }
  for (;;) {
    const r = await attempt(opts.cycle);
    if (r.ok) break;
    const delay = await backoff.failed(r.err);
    logger.warn({ failures: backoff.failures, retryInMs: delay, throttled: backoff.lastThrottled }, 'first render failed; the application stays gated until it succeeds');
    if (!(await wait(delay, signal))) return 0;
  }
  opts.onReady?.();
  await backoff.succeeded();
  return refreshLoop(opts, backoff, periodMs, now);
}

async function refreshLoop(opts: LoopOptions, backoff: Backoff, periodMs: () => number, now: () => number): Promise<number> {
  const { logger, signal } = opts;
  const wakeup = opts.wakeup ?? new Wakeup();
  const draw = () => jittered(1000, opts.jitter ?? 0.1, opts.random ?? Math.random) / 1000;
  let factor = draw();
  let last = now();
  let delay = Math.round(periodMs() * factor);
  for (;;) {
    const why = await wakeup.wait(delay - (now() - last), signal);
    if (why === 'aborted') return 0;
    if (why === 'floor') {
      // Re-time the wait from the last cycle with the new period (same jitter draw).
      if (backoff.failures === 0) delay = Math.round(periodMs() * factor);
      continue;
    }
    // A change waits out a backoff in progress (a throttled store is not read sooner for it).
    if (why === 'change' && backoff.failures > 0) continue;
    if (why === 'change') logger.info('a source changed (change generation); fetching now');
    last = now();
    const r = await attempt(opts.cycle);
    if (r.ok) {
      if (backoff.failures > 0) logger.info({ failures: backoff.failures }, 'refresh recovered');
      await backoff.succeeded();
      factor = draw();
      delay = Math.round(periodMs() * factor);
    } else {
      delay = await backoff.failed(r.err);
      logger.warn({ failures: backoff.failures, retryInMs: delay, throttled: backoff.lastThrottled }, 'refresh failed; keeping the last good files');
    }
  }
}
