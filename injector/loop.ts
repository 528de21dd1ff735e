// The refresh loop. `init-only`: one cycle, exit 0 or 1. Sidecar modes: retry the first
// cycle until it succeeds (the startup probe holds the app until then), report ready,
// then refresh every `refreshSeconds` ± jitter (so a fleet of pods does not hit the store
// in lockstep). A failed cycle keeps the last good files, is logged by the cycle and
// counted, and is retried with capped exponential backoff instead of waiting a full period.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { InjectionMode } from '../src/agent-config/types.js';

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

async function attempt(cycle: () => Promise<void>): Promise<boolean> {
  try {
    await cycle();
    return true;
  } catch {
    return false;
  }
}

/** Runs until aborted (sidecar) or after one cycle (init-only); resolves to an exit code. */
export async function runLoop(opts: LoopOptions): Promise<number> {
  const { signal, logger } = opts;
  const random = opts.random ?? Math.random;
  const periodMs = opts.refreshSeconds * 1000;
  const base = opts.backoffBaseMs ?? 1000;
  const cap = Math.max(base, opts.backoffMaxMs ?? Math.min(periodMs, 300_000));

  if (opts.mode === 'init-only') return (await attempt(opts.cycle)) ? 0 : 1;

  let failures = 0;
  while (!(await attempt(opts.cycle))) {
    failures++;
    const delay = backoffDelay(failures, base, cap, random);
    logger.warn({ failures, retryInMs: delay }, 'first render failed; the application stays gated until it succeeds');
    if (!(await wait(delay, signal))) return 0;
  }
  opts.onReady?.();
  failures = 0;
  let delay = jittered(periodMs, opts.jitter ?? 0.1, random);
  for (;;) {
    if (!(await wait(delay, signal))) return 0;
    if (await attempt(opts.cycle)) {
      if (failures > 0) logger.info({ failures }, 'refresh recovered');
      failures = 0;
      delay = jittered(periodMs, opts.jitter ?? 0.1, random);
    } else {
      failures++;
      delay = backoffDelay(failures, base, cap, random);
      logger.warn({ failures, retryInMs: delay }, 'refresh failed; keeping the last good files');
    }
  }
}
