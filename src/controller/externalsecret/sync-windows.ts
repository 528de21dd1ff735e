// `spec.syncWindows` (ESO's): when a periodic refresh may run. Each window opens at every
// firing of its `schedule` (5-field cron or a shorthand, in UTC) and stays open for its
// `duration`; `kind: allow` lets periodic refreshes run only inside an open window, `deny`
// only outside all of them. A window whose schedule or duration cannot be read is left out,
// as ESO does (a typo must not stop every refresh), and named to the caller so that the user
// is told (docs/controller.md, "Sync windows").
import { Cron } from 'croner';
import type { SyncWindows } from '../../api/types.js';
import { parseGoDuration } from '../../duration.js';

/** More windows than this is refused: each one costs a cron search per refresh. */
export const MAX_SYNC_WINDOWS = 16;

interface Window {
  /** The first firing strictly after `t` (ms), or undefined when there is none. */
  nextFiring(t: number): number | undefined;
  durationMs: number;
}

/** "@every D" with a duration of at least D: always open (see cronWindow). */
const ALWAYS: Window = { nextFiring: (t) => t, durationMs: 1 };

export interface SyncWindowGate {
  kind: 'allow' | 'deny';
  windows: Window[];
  /** Windows that are valid and never open ("@every" longer than the duration, duration 0). */
  never: number;
  /** `spec.syncWindows.windows[i]`: why it was left out. */
  ignored: string[];
}

const SHORTHANDS: Record<string, string> = {
  '@yearly': '0 0 1 1 *', '@annually': '0 0 1 1 *', '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0', '@daily': '0 0 * * *', '@midnight': '0 0 * * *', '@hourly': '0 * * * *',
};

/** The window, or undefined for one that never opens. */
function window(schedule: string, durationMs: number): Window | undefined {
  const every = /^@every\s+(\S+)$/.exec(schedule);
  if (every) {
    // ESO's cron library fires "@every D" D after the moment it is asked, so such a window
    // is open whenever its duration is at least D, and never otherwise.
    const d = parseGoDuration(every[1]!, 'schedule');
    if (d <= 0) throw new Error(`"@every ${every[1]}" needs a positive interval`);
    return d <= durationMs ? ALWAYS : undefined;
  }
  const pattern = SHORTHANDS[schedule] ?? schedule;
  if (pattern.split(/\s+/).length !== 5) throw new Error(`schedule "${schedule}" is not a 5-field cron expression or a shorthand (@daily, @every 1h, …)`);
  const cron = new Cron(pattern, { timezone: 'UTC', paused: true });
  return durationMs > 0 ? { nextFiring: (t) => cron.nextRun(new Date(t))?.getTime(), durationMs } : undefined;
}

/** The gate of `spec.syncWindows`, or undefined without windows; throws (naming the field)
 *  only for what no window can fix: an unknown kind or too many windows. */
export function syncWindowGate(sw: SyncWindows | undefined): SyncWindowGate | undefined {
  if (!sw || !sw.windows?.length) return undefined;
  if (sw.kind !== 'allow' && sw.kind !== 'deny') throw new Error(`spec.syncWindows.kind "${String(sw.kind)}" must be allow or deny`);
  if (sw.windows.length > MAX_SYNC_WINDOWS) throw new Error(`spec.syncWindows.windows has ${sw.windows.length} entries; ESI allows at most ${MAX_SYNC_WINDOWS}`);
  const gate: SyncWindowGate = { kind: sw.kind, windows: [], never: 0, ignored: [] };
  sw.windows.forEach((w, i) => {
    const field = `spec.syncWindows.windows[${i}]`;
    try {
      const durationMs = parseGoDuration(w.duration ?? '', `${field}.duration`);
      const open = window((w.schedule ?? '').trim(), durationMs);
      if (open) gate.windows.push(open);
      else gate.never++;
    } catch (err) {
      gate.ignored.push(`${field}: ${(err as Error).message}`);
    }
  });
  return gate;
}

/** The end of the window that is open at `t` (ms), or undefined when it is closed. */
function openUntil(w: Window, t: number): number | undefined {
  // Open at t ⇔ some firing f has f ≤ t < f + duration ⇔ the first firing after
  // t − duration is not after t.
  const f = w.nextFiring(t - w.durationMs);
  return f !== undefined && f <= t ? f + w.durationMs : undefined;
}

/** Whether a periodic refresh may run at `now`; when not, `next` is the first moment it may
 *  (undefined: no window will ever let it). */
export function refreshAllowed(gate: SyncWindowGate | undefined, now: number): { allowed: boolean; next?: number } {
  if (!gate) return { allowed: true };
  if (gate.kind === 'allow') {
    // Only windows left out for errors leave nothing to gate on (as ESO: no valid window, no gate).
    if (!gate.windows.length && !gate.never) return { allowed: true };
    if (gate.windows.some((w) => openUntil(w, now) !== undefined)) return { allowed: true };
    const opens = gate.windows.map((w) => w.nextFiring(now)).filter((f): f is number => f !== undefined);
    return { allowed: false, next: opens.length ? Math.min(...opens) : undefined };
  }
  // deny: blocked while any window is open; the refresh may run once all have closed. Windows
  // that overlap or follow each other are walked a bounded number of times.
  let t = now;
  for (let step = 0; step <= MAX_SYNC_WINDOWS; step++) {
    const ends = gate.windows.map((w) => openUntil(w, t)).filter((e): e is number => e !== undefined);
    if (!ends.length) return t === now ? { allowed: true } : { allowed: false, next: t };
    t = Math.max(...ends);
  }
  return { allowed: false };
}

