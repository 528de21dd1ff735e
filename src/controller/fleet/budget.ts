// The read budget of one store turned into a refresh floor for the injected pods reading it
// (docs/fleet.md, "Read budgets"). Pure arithmetic: the caller
// (fleet.ts) gathers the pods from its cache and sends the result through the channel.
//
// Each pod refreshes every max(own, floor) seconds and reads `reads` remote keys of the store
// per refresh (the agent coalesces identical reads within a cycle). The floor is the smallest
// one whose fleet rate, Σ reads / max(own, floor), fits in what the budget leaves after the
// reconciler's own reads of the store. Pods already slower than the floor keep their own
// interval, so a pod never refreshes more often than its annotation asks.
import { MAX_REFRESH_SECONDS } from '../../agent-config/limits.js';

export interface BudgetPod {
  /** The pod's own period (esi.dev/refresh-interval), seconds. */
  ownSeconds: number;
  /** Remote reads of this store per refresh. */
  reads: number;
}

export interface Floor {
  /** Seconds; 0 when the fleet fits the budget at its own intervals. */
  seconds: number;
  /** Reads per second the fleet makes with the floor applied (without the reconciler's). */
  rate: number;
  /** False when even MAX_REFRESH_SECONDS cannot bring the fleet within the budget. */
  fits: boolean;
}

/** Share of the budget the floor aims at: the jitter (±10 %), pods starting, and the change
 *  fetches notifications cause all land in the rest. */
export const BUDGET_HEADROOM = 0.9;

/** The fleet's reads per second at `floor`. */
export function fleetRate(pods: readonly BudgetPod[], floor: number): number {
  let rate = 0;
  for (const p of pods) rate += p.reads / Math.max(p.ownSeconds, floor);
  return rate;
}

/** The smallest whole-second floor keeping the fleet at or below `perSecond` reads/s once
 *  `reconcilerPerSecond` is taken off (after BUDGET_HEADROOM). Bounded: one sort and one
 *  pass over the pods. */
export function budgetFloor(pods: readonly BudgetPod[], perSecond: number, reconcilerPerSecond = 0): Floor {
  const target = perSecond * BUDGET_HEADROOM - reconcilerPerSecond;
  const active = pods.filter((p) => p.reads > 0 && p.ownSeconds > 0);
  if (fleetRate(active, 0) <= target) return { seconds: 0, rate: fleetRate(active, 0), fits: true };
  if (target <= 0) return { seconds: MAX_REFRESH_SECONDS, rate: fleetRate(active, MAX_REFRESH_SECONDS), fits: false };
  const sorted = [...active].sort((a, b) => a.ownSeconds - b.ownSeconds);
  // Water-filling: with the k fastest pods held at the floor T and the rest at their own
  // periods, rate(T) = held / T + rest; solve for T and keep it if it lies between the
  // k-th and the (k+1)-th own period.
  let rest = fleetRate(sorted, 0);
  let held = 0;
  for (let k = 0; k < sorted.length; k++) {
    const p = sorted[k]!;
    held += p.reads;
    rest -= p.reads / p.ownSeconds;
    const next = sorted[k + 1]?.ownSeconds ?? Infinity;
    if (target - rest <= 0) continue;
    const t = held / (target - rest);
    if (t >= p.ownSeconds && t <= next) {
      const seconds = Math.min(MAX_REFRESH_SECONDS, Math.ceil(t));
      const rate = fleetRate(sorted, seconds);
      return { seconds, rate, fits: rate <= target + 1e-9 };
    }
  }
  return { seconds: MAX_REFRESH_SECONDS, rate: fleetRate(sorted, MAX_REFRESH_SECONDS), fits: false };
}

/** `600/m`, `10/s`, `1000/h` → reads per second; the one parser of `esi.dev/read-budget`. */
export function parseReadBudget(raw: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*\/\s*(s|m|h)\s*$/.exec(raw);
  if (!m) throw new Error('must be "<reads>/s", "<reads>/m" or "<reads>/h", for example "600/m"');
  const n = Number(m[1]);
  if (!(n > 0) || n > 1e6) throw new Error('must be more than 0 and at most 1000000 reads per unit');
  return n / { s: 1, m: 60, h: 3600 }[m[2] as 's' | 'm' | 'h'];
}
