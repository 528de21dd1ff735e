// A memory cgroup (v1) for one benchmarked process, as a container runtime sets the chart's
// `resources.limits.memory`: the kernel charges the process's anonymous memory and the page
// cache it touches to the group, reclaims cache near the limit, and OOM-kills the process
// when it cannot. The group is created inside the cgroup this benchmark already runs in (so
// the limits above it still hold) and removed afterwards. Needs root and the v1 memory
// hierarchy mounted at /sys/fs/cgroup/memory.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = '/sys/fs/cgroup/memory';

export interface MemoryCgroup {
  dir: string;
  limitBytes: number;
  /** Shell words that move the shell into the group, then exec `argv` (same pid). */
  wrap(argv: readonly string[]): string[];
  /** memory.max_usage_in_bytes: the group's peak charge (anonymous memory + page cache). */
  peakBytes(): number;
  /** OOM kills inside the group (memory.oom_control's oom_kill). */
  oomKills(): number;
  /** How often the charge hit the limit (memory.failcnt): reclaim at the limit. */
  failcnt(): number;
  remove(): void;
}

/** Why a memory cgroup cannot be made here, or undefined when it can. */
export function cgroupUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  if (!existsSync(join(ROOT, 'memory.limit_in_bytes'))) return `no cgroup v1 memory hierarchy at ${ROOT}`;
  return undefined;
}

/** This process's own memory cgroup directory (v1). */
function ownGroup(): string {
  const line = readFileSync('/proc/self/cgroup', 'utf8').split('\n').find((l) => /^\d+:memory:/.test(l));
  return join(ROOT, line ? line.slice(line.indexOf(':memory:') + ':memory:'.length) : '/');
}

const readNumber = (dir: string, file: string) => Number(readFileSync(join(dir, file), 'utf8').trim());

export function memoryCgroup(name: string, limitBytes: number): MemoryCgroup {
  const dir = join(ownGroup(), name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'memory.limit_in_bytes'), String(limitBytes));
  return {
    dir, limitBytes,
    wrap: (argv) => ['sh', '-c', `echo $$ > ${join(dir, 'cgroup.procs')} && exec "$@"`, 'sh', ...argv],
    peakBytes: () => readNumber(dir, 'memory.max_usage_in_bytes'),
    oomKills: () => Number(/^oom_kill (\d+)/m.exec(readFileSync(join(dir, 'memory.oom_control'), 'utf8'))?.[1] ?? 0),
    failcnt: () => readNumber(dir, 'memory.failcnt'),
    remove: () => {
      // The page cache charged to an empty group is moved to its parent by rmdir.
      try {
        rmdirSync(dir);
      } catch {
        // a process still inside (it is being killed): a later run's name differs
      }
    },
  };
}

/** "256Mi", "1Gi", "300M" as bytes (the chart's quantities). */
export function parseQuantity(q: string): number {
  const m = /^(\d+)(Ki|Mi|Gi|K|M|G)?$/.exec(q);
  if (!m) throw new Error(`not a memory quantity: ${q}`);
  const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, K: 1e3, M: 1e6, G: 1e9 }[m[2] ?? ''] ?? 1;
  return Number(m[1]) * unit;
}

/** The controller's memory limit as the chart sets it (charts/esi/values.yaml). */
export function chartControllerLimit(valuesYaml: string): string {
  const section = valuesYaml.slice(valuesYaml.search(/^controller:/m));
  const m = /^ {2}resources:\n(?: {4}.*\n)*? {4}limits:\n {6}memory: (\S+)/m.exec(section);
  if (!m) throw new Error('charts/esi/values.yaml: controller.resources.limits.memory not found');
  return m[1]!;
}
