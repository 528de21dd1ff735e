// The fleet model (docs/fleet.md, "Cost"), checked against the bench's measured points and
// extrapolated to 10,000 pods:
//  - reads/s polling      = pods · keys / interval
//  - reads/s with budget  = min(polling, headroom · budget)
//  - change p99 polling   ≈ 0.99 · interval · 1.1 (uniform phase, ±10 % jitter)
//  - change p99 notified  ≈ the controller's debounce (0.2 s) + its fan-out, (pods − burst) /
//                           patch rate (the rate limiter lets a burst of one second's writes
//                           through at once) + the kubelet's hop (p99 ≈ 0.7 s,
//                           test/e2e/node/channel-latency.test.ts) + the agent noticing the file
//                           (inotify, ~0; the 0.5 s poll only when no watch runs) + the fetch
//  - reads/month          = reads/s · 2,592,000; cost = reads/month / 10,000 · $0.05 (AWS SM)
import { BUDGET_HEADROOM } from '../../src/controller/fleet/budget.js';

export interface Measured {
  agents: number;
  refreshSeconds: number;
  keysPerPod: number;
  budgetPerSecond: number;
  pollingRate: number;
  budgetRate: number;
  polledP50: number;
  polledP99: number;
  notifiedP50: number;
  notifiedP99: number;
  writesPerChange: number;
  patchQps: number;
  rssBytes: number;
}

const DEBOUNCE_S = 0.2;
const KUBELET_P99_S = 0.7;
/** The agent watches the channel directory (injector/channel.ts): a few ms, not the poll. */
const AGENT_NOTICE_S = 0.05;
const MONTH_S = 30 * 86_400;
const AWS_PER_10K = 0.05;

export function model(pods: number, m: Pick<Measured, 'refreshSeconds' | 'keysPerPod' | 'budgetPerSecond' | 'patchQps'>, fetchS = 0.1) {
  const polling = (pods * m.keysPerPod) / m.refreshSeconds;
  return {
    polling,
    budget: Math.min(polling, BUDGET_HEADROOM * m.budgetPerSecond),
    polledP99: 0.99 * m.refreshSeconds * 1.1,
    notifiedP99: DEBOUNCE_S + Math.max(0, pods - Math.ceil(m.patchQps)) / m.patchQps + KUBELET_P99_S + AGENT_NOTICE_S + fetchS,
    readsPerMonth: polling * MONTH_S,
  };
}

const usd = (n: number) => `$${n.toLocaleString('en-US', { maximumFractionDigits: 0 })}`;

/** Rows: the measured point (measured / model), then the model alone at larger fleets. */
export function modelRows(m: Measured): string[][] {
  const at = model(m.agents, m);
  const rows = [[
    `${m.agents} (measured / model)`,
    `${m.pollingRate.toFixed(1)} / ${at.polling.toFixed(1)}`,
    `${m.budgetRate.toFixed(1)} / ${at.budget.toFixed(1)}`,
    `${(m.polledP99 / 1000).toFixed(1)} s / ${at.polledP99.toFixed(1)} s`,
    `${(m.notifiedP99 / 1000).toFixed(1)} s / ${at.notifiedP99.toFixed(1)} s`,
    `${(at.readsPerMonth / 1e6).toFixed(1)} M`,
    usd((at.readsPerMonth / 10_000) * AWS_PER_10K),
  ]];
  for (const pods of [1_000, 10_000]) {
    const x = model(pods, m);
    rows.push([String(pods), x.polling.toFixed(1), x.budget.toFixed(1), `${x.polledP99.toFixed(1)} s`, `${x.notifiedP99.toFixed(1)} s`, `${(x.readsPerMonth / 1e6).toFixed(1)} M`, usd((x.readsPerMonth / 10_000) * AWS_PER_10K)]);
  }
  return rows;
}
