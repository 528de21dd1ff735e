// CPU time and memory of a process and its descendants, read from /proc: what the peers
// benchmark compares (a Node.js server that may fork workers against a Go binary).
import { readdirSync, readFileSync } from 'node:fs';

/** USER_HZ: /proc/<pid>/stat counts CPU time in ticks of 10 ms on Linux. */
const TICK_MS = 10;

export interface ProcStat {
  ppid: number;
  /** utime + stime of the process itself, in ms. */
  cpuMs: number;
}

/** Parses /proc/<pid>/stat (the command name may hold spaces and parentheses). */
export function parseStat(text: string): ProcStat {
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // After "pid (comm) ": state(0) ppid(1) … utime(11) stime(12)
  return { ppid: Number(f[1]), cpuMs: (Number(f[11]) + Number(f[12])) * TICK_MS };
}

export interface Memory {
  rssKiB: number;
  /** Private (anonymous) resident memory: what the process itself allocated. */
  anonKiB: number;
}

/** VmRSS and RssAnon from /proc/<pid>/status. */
export function parseStatus(text: string): Memory {
  const kib = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
  return { rssKiB: kib('VmRSS'), anonKiB: kib('RssAnon') };
}

function allStats(): Map<number, ProcStat> {
  const out = new Map<number, ProcStat>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      out.set(Number(d), parseStat(readFileSync(`/proc/${d}/stat`, 'utf8')));
    } catch {
      // exited while scanning
    }
  }
  return out;
}

/** `root` and every live descendant of it. */
export function processTree(root: number, stats = allStats()): number[] {
  const children = new Map<number, number[]>();
  for (const [pid, { ppid }] of stats) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  const out: number[] = [];
  const queue = [root];
  while (queue.length) {
    const pid = queue.pop()!;
    if (stats.has(pid)) out.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** CPU ms used so far by `root` and its live descendants. */
export function treeCpuMs(root: number): number {
  const stats = allStats();
  return processTree(root, stats).reduce((sum, pid) => sum + stats.get(pid)!.cpuMs, 0);
}

/** Memory of `root` and its live descendants (summed: each worker is memory the pod pays). */
export function treeMemory(root: number): Memory {
  let rssKiB = 0;
  let anonKiB = 0;
  for (const pid of processTree(root)) {
    try {
      const m = parseStatus(readFileSync(`/proc/${pid}/status`, 'utf8'));
      rssKiB += m.rssKiB;
      anonKiB += m.anonKiB;
    } catch {
      // exited
    }
  }
  return { rssKiB, anonKiB };
}

/** Samples memory every `everyMs` until stop(): peak and last readings. */
export function memorySampler(root: number, everyMs = 250) {
  let peak: Memory = { rssKiB: 0, anonKiB: 0 };
  let last: Memory = peak;
  const sample = () => {
    last = treeMemory(root);
    peak = { rssKiB: Math.max(peak.rssKiB, last.rssKiB), anonKiB: Math.max(peak.anonKiB, last.anonKiB) };
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop(): { peak: Memory; last: Memory } {
      clearInterval(timer);
      sample();
      return { peak, last };
    },
  };
}
