// The side-by-side table of first syncs (first-sync.ts): one row per run, in run order.
import { parseQuantity } from './cgroup.js';
import { chartNodeOptions, type SyncResult } from './first-sync.js';

/** Goals at 10 000 ExternalSecrets (docs/controller.md, "Memory"). */
export const GOALS = { peakRssMiB: 160, cpuS: 11, allReadyS: 60 };

const mark = (ok: boolean) => (ok ? '' : ' (missed)');

export function sideBySide(results: readonly SyncResult[], chartLimit: string): [string[], string[][]] {
  const head = ['Tree', 'NODE_OPTIONS (its chart)', 'Memory limit', 'Start → all Ready', 'Controller CPU', 'Peak RSS', 'Cgroup peak / OOM kills', 'kube-apiserver CPU', 'Load (1 min) before → after'];
  const rows = results.map((r) => [
    `${r.tree.label} (${r.tree.commit})`,
    `${r.nodeOptions || 'none'}${r.nodeOptions === chartNodeOptions(r.tree.dir) ? '' : ' (--node-options)'}`,
    r.inCgroup ? `${r.inCgroup.limitMiB} MiB cgroup${r.inCgroup.limitMiB * 2 ** 20 === parseQuantity(chartLimit) ? ' (chart)' : ''}` : 'none',
    r.died ? `**${r.died}**` : `${r.allReadyS.toFixed(1)} s${mark(r.allReadyS <= GOALS.allReadyS)}`,
    `${r.cpu.controller.toFixed(1)} s${mark(r.cpu.controller <= GOALS.cpuS)}`,
    `${r.peakRssMiB.toFixed(0)} MiB${mark(r.peakRssMiB <= GOALS.peakRssMiB)}`,
    r.inCgroup ? `${r.inCgroup.peakMiB.toFixed(0)} MiB / ${r.inCgroup.oomKills}${r.inCgroup.oomKills ? ' **(OOM)**' : ''}` : '–',
    `${r.cpu.apiserver.toFixed(1)} s`,
    r.load.map((l) => l.toFixed(1)).join(' → '),
  ]);
  return [head, rows];
}
