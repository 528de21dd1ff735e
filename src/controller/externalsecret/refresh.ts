// When an ExternalSecret fetches again. Every object with the same interval refreshes on
// one grid anchored at the Unix epoch (n·interval), shifted earlier by a stable per-object
// phase: the jitter spreads 10 000 objects over up to `jitterMaxMs`, and since the grid is
// shared and the phase never changes, all readers of one remote key refresh within one
// coalescing window however far apart they were created — one provider call per key per
// refresh window.
import { createHash } from 'node:crypto';
import type { ExternalSecret, RefreshPolicy } from '../../api/types.js';
import { parseGoDuration } from '../../duration.js';
import { syncWindowGate, type SyncWindowGate } from './sync-windows.js';

export const DEFAULT_REFRESH_INTERVAL = '1h';
/** The shortest refresh the reconciler honours (docs/controller.md, "Refresh"): a tenant's
 *  `refreshInterval: 1ms` would otherwise be a hot loop of reconciles and remote reads.
 *  Shorter intervals (but 0, "never") are raised to it. */
const MIN_REFRESH_INTERVAL_MS = 1000;

/** A refresh interval in ms (0 = never), at least MIN_REFRESH_INTERVAL_MS; throws naming `field`. */
export function refreshIntervalMs(raw: string, field: string): number {
  const ms = parseGoDuration(raw, field);
  return ms === 0 ? 0 : Math.max(ms, MIN_REFRESH_INTERVAL_MS);
}

export interface RefreshSpec {
  policy: RefreshPolicy;
  /** ms; 0 = fetch once. */
  intervalMs: number;
  /** `spec.syncWindows`: when a periodic refresh may run (src/controller/externalsecret/sync-windows.ts). */
  windows?: SyncWindowGate;
}

/** The ExternalSecret's refresh settings; throws naming the field when invalid. */
export function refreshSpec(es: ExternalSecret): RefreshSpec {
  const policy = es.spec.refreshPolicy ?? 'Periodic';
  if (!['Periodic', 'CreatedOnce', 'OnChange'].includes(policy)) {
    throw new Error(`spec.refreshPolicy "${policy}" must be Periodic, CreatedOnce or OnChange`);
  }
  return { policy, intervalMs: refreshIntervalMs(es.spec.refreshInterval ?? DEFAULT_REFRESH_INTERVAL, 'spec.refreshInterval'), windows: syncWindowGate(es.spec.syncWindows) };
}

/** A stable fraction in [0, 1) per object. */
export function phaseOf(uid: string): number {
  return createHash('sha256').update(uid).digest().readUInt32BE(0) / 2 ** 32;
}

/** The jitter span of an interval: a tenth of it, at most `jitterMaxMs`. */
export function jitterSpan(intervalMs: number, jitterMaxMs: number): number {
  return Math.min(intervalMs / 10, jitterMaxMs);
}

/** The next refresh strictly after `now` on the shared grid (multiples of the interval
 *  since the epoch), shifted earlier by this object's phase of the jitter span. */
export function nextRefresh(intervalMs: number, phase: number, jitterMaxMs: number, now: number): number {
  const shift = phase * jitterSpan(intervalMs, jitterMaxMs);
  const n = Math.floor((now + shift) / intervalMs) + 1;
  return n * intervalMs - shift;
}

/** The refresh after a read requested at `readAt`: the first slot of the object's grid at
 *  least one interval (less the jitter span) later. Consecutive refreshes stay exactly one
 *  interval apart, and an object first synced just before a slot does not read again
 *  moments later: a first sync that spans a grid point reads each key once, not twice. */
export function refreshAfterRead(intervalMs: number, phase: number, jitterMaxMs: number, readAt: number): number {
  return nextRefresh(intervalMs, phase, jitterMaxMs, readAt + intervalMs - jitterSpan(intervalMs, jitterMaxMs) - 1);
}
