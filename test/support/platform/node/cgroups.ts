// The node's processes live under one cgroup, /esi-node-<k>, in every hierarchy: the
// kubelet puts its pods there (cgroupRoot), and containerd with its shims go to
// /esi-node-<k>/runtime. Stopping the node kills exactly what is in that tree, so nothing
// it started survives it, and nothing else on the machine is touched.
import { existsSync, readdirSync, readFileSync, rmdirSync, mkdirSync, writeFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = '/sys/fs/cgroup';

/** The mounted hierarchies: v1 controllers (cgroup v1 or hybrid), or the v2 root. */
function hierarchies(): string[] {
  if (existsSync(join(ROOT, 'cgroup.controllers'))) return [ROOT];
  return readdirSync(ROOT).map((d) => join(ROOT, d)).filter((d) => existsSync(join(d, 'cgroup.procs')));
}

export function createCgroup(name: string): void {
  for (const h of hierarchies()) {
    for (const dir of [join(h, name), join(h, name, 'runtime')]) {
      mkdirSync(dir, { recursive: true });
      // A v1 cpuset cgroup takes no process until it has CPUs and memory nodes.
      for (const f of ['cpuset.cpus', 'cpuset.mems']) {
        const file = join(dir, f);
        if (existsSync(file) && !readFileSync(file, 'utf8').trim()) writeFileSync(file, readFileSync(join(dir, '..', f), 'utf8').trim());
      }
    }
  }
}

/** Moves `pid` (and its future children) into /<name>/runtime of every hierarchy. */
export function enterCgroup(name: string, pid: number): void {
  for (const h of hierarchies()) writeFileSync(join(h, name, 'runtime', 'cgroup.procs'), String(pid));
}

function subtree(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const dirs = [dir];
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) dirs.push(...subtree(p));
  }
  return dirs;
}

function pids(name: string): number[] {
  const all = new Set<number>();
  for (const h of hierarchies()) {
    for (const dir of subtree(join(h, name))) {
      for (const line of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (line) all.add(Number(line));
    }
  }
  return [...all];
}

/** SIGKILLs every process in /<name> (or only in /<name>/<sub>) until none is left
 *  (bounded), then removes the cgroups. Returns how many processes it killed. */
export async function killCgroup(name: string, opts: { sub?: string; remove?: boolean } = {}): Promise<number> {
  const scope = opts.sub ? join(name, opts.sub) : name;
  let killed = 0;
  for (let i = 0; i < 100; i++) {
    const left = pids(scope);
    if (!left.length) break;
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
        killed++;
      } catch {
        // exited meanwhile
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  if (opts.remove !== false && !opts.sub) {
    for (const h of hierarchies()) {
      for (const dir of subtree(join(h, name)).reverse()) {
        try {
          rmdirSync(dir);
        } catch {
          // still busy (a zombie being reaped): the next node start of the same k retries
        }
      }
    }
  }
  return killed;
}
