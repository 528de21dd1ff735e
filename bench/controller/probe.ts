// Readings of the benchmarked processes: RSS and CPU from /proc, the controller's own
// counters from its /metrics, its readiness.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const rssMiB = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
};

/** utime + stime of a process (all its threads), in seconds (/proc/PID/stat fields 14 and 15, USER_HZ = 100). */
export const cpuSeconds = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
};

/** The pid of this plane's kube-apiserver: the one whose --cert-dir is under `dir`. */
export function apiserverPid(dir: string): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmd.includes('kube-apiserver') && cmd.includes(`--cert-dir=${join(dir, 'certs')}`)) return Number(entry);
    } catch {
      // The process ended while we looked.
    }
  }
  throw new Error('kube-apiserver process not found');
}

export async function metric(port: number, name: string, match = ''): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return text.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `)).filter((l) => l.includes(match))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

/** Until the controller's /readyz answers 200. */
export async function waitReady(port: number, child: { exitCode: number | null; signalCode: string | null }): Promise<void> {
  while (!(await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false))) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error('controller exited');
    await sleep(250);
  }
}
