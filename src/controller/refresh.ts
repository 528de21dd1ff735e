// When an ExternalSecret fetches again. Each object refreshes on a fixed grid anchored at
// its first sync (base + n·interval), shifted earlier by a stable per-object phase: the
// jitter spreads 10 000 objects created together over up to `jitterMaxMs`, and because
// the phase never changes the spread does not grow cycle after cycle — readers of one
// remote key stay within one coalescing window.
import { createHash } from 'node:crypto';
import type { ExternalSecret, RefreshPolicy } from '../api/types.js';
import { parseGoDuration } from './duration.js';

export const DEFAULT_REFRESH_INTERVAL = '1h';

export interface RefreshSpec {
  policy: RefreshPolicy;
  /** ms; 0 = fetch once. */
  intervalMs: number;
}

/** The ExternalSecret's refresh settings; throws naming the field when invalid. */
export function refreshSpec(es: ExternalSecret): RefreshSpec {
  const policy = es.spec.refreshPolicy ?? 'Periodic';
  if (!['Periodic', 'CreatedOnce', 'OnChange'].includes(policy)) {
    throw new Error(`spec.refreshPolicy "${policy}" must be Periodic, CreatedOnce or OnChange`);
  }
  return { policy, intervalMs: parseGoDuration(es.spec.refreshInterval ?? DEFAULT_REFRESH_INTERVAL, 'spec.refreshInterval') };
}

/** A stable fraction in [0, 1) per object. */
export function phaseOf(uid: string): number {
  return createHash('sha256').update(uid).digest().readUInt32BE(0) / 2 ** 32;
}

/** The jitter span of an interval: a tenth of it, at most `jitterMaxMs`. */
export function jitterSpan(intervalMs: number, jitterMaxMs: number): number {
  return Math.min(intervalMs / 10, jitterMaxMs);
}

/** The next refresh strictly after `now` on the grid anchored at `base`. */
// eslint-disable-next-line max-params -- a pure function of the refresh grid, called with named values at its two call sites.
export function nextRefresh(base: number, intervalMs: number, phase: number, jitterMaxMs: number, now: number): number {
  const shift = phase * jitterSpan(intervalMs, jitterMaxMs);
  const n = Math.max(1, Math.floor((now + shift - base) / intervalMs) + 1);
  return base + n * intervalMs - shift;
}
