// Whole-machine CPU use, to tell whether other processes competed with a benchmark phase
// (shared CI runners, other test suites, a VM's noisy neighbours via steal time).
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface CpuSample {
  /** CPU-milliseconds spent busy (incl. steal) and in total, summed over all CPUs. */
  busyMs: number;
  totalMs: number;
  stealMs: number;
  at: number;
}

function fromProcStat(): CpuSample | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n').find((l) => l.startsWith('cpu '));
    if (!line) return undefined;
    // user nice system idle iowait irq softirq steal (guest time is already in user)
    const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
    const [user, nice, system, idle, iowait, irq, softirq, steal] = f as [number, number, number, number, number, number, number, number];
    const tick = 10; // USER_HZ is 100 on Linux
    const busy = user + nice + system + irq + softirq + steal;
    return { busyMs: busy * tick, totalMs: (busy + idle + iowait) * tick, stealMs: steal * tick, at: Date.now() };
  } catch {
    return undefined;
  }
}

export function cpuSample(): CpuSample {
  const proc = fromProcStat();
  if (proc) return proc;
  let busy = 0;
  let total = 0;
  for (const c of os.cpus()) {
    const t = c.times;
    busy += t.user + t.nice + t.sys + t.irq;
    total += t.user + t.nice + t.sys + t.irq + t.idle;
  }
  return { busyMs: busy, totalMs: total, stealMs: 0, at: Date.now() };
}

/** Cores' worth of CPU used between two samples (all processes), and of steal. */
export function coresBusy(a: CpuSample, b: CpuSample): { busy: number; steal: number } {
  const wallMs = Math.max(1, b.at - a.at);
  return { busy: (b.busyMs - a.busyMs) / wallMs, steal: (b.stealMs - a.stealMs) / wallMs };
}

/** Waits until the machine's busy CPU (everything, nothing of ours running yet) stays under
 *  `maxCores` for a `windowMs` sample, or `timeoutMs` passes. Returns the last reading. */
export async function waitForQuiet(maxCores: number, timeoutMs: number, windowMs = 3000, onBusy?: (cores: number) => void): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const a = cpuSample();
    await new Promise((r) => setTimeout(r, windowMs));
    const { busy } = coresBusy(a, cpuSample());
    if (busy <= maxCores || Date.now() >= deadline) return busy;
    onBusy?.(busy);
  }
}
