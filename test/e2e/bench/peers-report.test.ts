// The arithmetic behind BENCHMARKS.md "Side by side" (bench/peers/report.ts) and the /proc
// parsing it reads processes with (bench/peers/procstat.ts), and the Go-template rows' table
// and the expected file of its Go template (bench/lib/go-template.ts).
import t from 'tap';
import { parseStat, parseStatus } from '../../../bench/peers/procstat.js';
import { aggregate, goTemplateMarkdown, keptSubsections, reachedRate, webhookMarkdown } from '../../../bench/peers/markdown.js';
import type { GoTemplateResults } from '../../../bench/peers/agents-gotemplate.js';
import { ESO_TEMPLATE, expectedGoFile } from '../../../bench/lib/go-template.js';
import { renderGoText } from '../../../src/templating/go/text.js';
import type { StepRun, WebhookResults } from '../../../bench/peers/webhooks.js';
import { budgetText, cpuPerRequest, fmt, median, ratio, ratioCell, withinBudget } from '../../../bench/peers/report.js';

t.test('ratio is ESI over the peer, undefined without a usable peer figure', (t) => {
  t.equal(ratio(3, 2), 1.5);
  t.equal(ratio(1, 0), undefined);
  t.equal(ratio(undefined, 2), undefined);
  t.equal(ratio(1, Number.NaN), undefined);
  t.end();
});

t.test('median of odd and even counts; empty has none', (t) => {
  t.equal(median([5, 1, 3]), 3);
  t.equal(median([4, 1, 3, 2]), 2.5);
  t.equal(median([]), undefined);
  t.end();
});

t.test('budgets: at most, at least, and how cells show them', (t) => {
  t.equal(withinBudget(0.8, { max: 0.8 }), true);
  t.equal(withinBudget(0.81, { max: 0.8 }), false);
  t.equal(withinBudget(1.1, { min: 1.2 }), false);
  t.equal(withinBudget(undefined, { min: 1.2 }), undefined);
  t.equal(budgetText({ max: 1.5 }), '≤ 1.5×');
  t.equal(budgetText({ min: 1.2 }), '≥ 1.2×');
  t.equal(ratioCell(0.5, { max: 1 }), '0.50 (met)');
  t.equal(ratioCell(1.57, { max: 1 }), '**1.57** (missed)');
  t.equal(ratioCell(undefined, { max: 1 }), '–');
  t.end();
});

t.test('CPU per request and number formatting', (t) => {
  t.equal(cpuPerRequest(1000, 1500, 1000), 0.5);
  t.equal(cpuPerRequest(1000, 1500, 0), undefined);
  t.equal(fmt(0.123456), '0.123');
  t.equal(fmt(123.456), '123');
  t.equal(fmt(undefined), '–');
  t.end();
});

t.test('/proc parsing copes with spaces and parentheses in the command name', (t) => {
  const stat = '4242 (node (worker) 1) S 4000 4242 4000 0 -1 4194560 1 0 0 0 150 25 3 4 20 0 11 0 100 0 0';
  t.same(parseStat(stat), { ppid: 4000, cpuMs: 1750 });
  t.same(parseStatus('Name:\tnode\nVmRSS:\t  51200 kB\nRssAnon:\t  12000 kB\nRssFile:\t 39200 kB\n'), { rssKiB: 51200, anonKiB: 12000 });
  t.end();
});

t.test('CPU per request leaves out a fixed-rate run that did not reach its rate, unless none did', (t) => {
  const run = (throughput: number, completed: number, cpuMs: number) => ({
    injector: 'esi', cpuMs, cpuMsPerRequest: cpuMs / completed, serverCores: 0.5, clientCores: 0.3, otherCores: 0,
    peak: { rssKiB: 1, anonKiB: 1 }, load: { before: [0], after: [0] },
    result: { throughput, completed, errors: 0, non2xx: 0, invalid: 0, latencyMs: { p50: 1, p99: 2 } },
  }) as unknown as StepRun;
  const ok = run(1000, 10_000, 5_000);
  const collapsed = run(238, 2_380, 7_800);
  t.equal(reachedRate(ok, 1000), true);
  t.equal(reachedRate(collapsed, 1000), false);
  t.equal(reachedRate(collapsed, undefined), true, 'saturation has no rate to reach');
  const both = aggregate([ok, collapsed], 1000);
  t.equal(both.cpuPerRequest, 0.5, 'only the run that reached the rate');
  t.equal(both.dropped, 1);
  t.equal(both.throughput, (1000 + 238) / 2, 'throughput still over all runs');
  const none = aggregate([collapsed], 1000);
  t.equal(none.cpuPerRequest, 7_800 / 2_380, 'no run reached it: all runs count');
  t.equal(none.dropped, 0);
  t.end();
});

t.test('a step where a server has no run at its rate is not compared on CPU', (t) => {
  const run = (injector: string, throughput: number) => ({
    injector, cpuMs: 1000, cpuMsPerRequest: 0.1, serverCores: 0.5, clientCores: 0.3, otherCores: 0,
    peak: { rssKiB: 1, anonKiB: 1 }, load: { before: [0], after: [0] },
    result: { throughput, completed: 10_000, errors: 0, non2xx: 0, invalid: 0, latencyMs: { p50: 1, p99: 2 } },
  }) as unknown as StepRun;
  const w = {
    steps: [{ name: '1000 req/s', rate: 1000, runs: [run('esi', 1000), run('vault-k8s', 300), run('vault-k8s', 400), run('esi', 990)] },
      { name: 'saturation', runs: [run('esi', 2000), run('vault-k8s', 2000)] }],
    idle: { esi: { rssKiB: 1, anonKiB: 1 }, 'vault-k8s': { rssKiB: 1, anonKiB: 1 } }, reviewBytes: { esi: 1, 'vault-k8s': 1 }, objects: 1,
  } as unknown as WebhookResults;
  const text = webhookMarkdown(w);
  t.match(text, /\| CPU per admission \(1000 req\/s\) \| \(rate not reached\) \|/);
  t.match(text, /vault-k8s at 1000 req\/s: 300 req\/s/);
  t.end();
});

t.test("the Node floor's column: floor / vault-k8s beside ESI / vault-k8s, from the same step", (t) => {
  const run = (injector: string, cpuMs: number, p50: number, throughput = 100) => ({
    injector, cpuMs, cpuMsPerRequest: cpuMs / 1000, serverCores: 0.5, clientCores: 0.3, otherCores: 0,
    peak: { rssKiB: 1024 * (injector === 'esi' ? 90 : injector === 'floor' ? 30 : 60), anonKiB: 1 }, load: { before: [0], after: [0] },
    result: { throughput, completed: 1000, errors: 0, non2xx: 0, invalid: 0, latencyMs: { p50, p99: 2 * p50 } },
  }) as unknown as StepRun;
  const w = {
    steps: [{ name: '100 req/s', rate: 100, runs: [run('esi', 2000, 3), run('vault-k8s', 1000, 2), run('floor', 500, 1), run('floor', 500, 1), run('vault-k8s', 1000, 2), run('esi', 2000, 3)] },
      { name: 'saturation', runs: [run('esi', 500, 9, 1500), run('vault-k8s', 500, 9, 2000), run('floor', 100, 3, 3000)] }],
    idle: { esi: { rssKiB: 1, anonKiB: 1 }, 'vault-k8s': { rssKiB: 1, anonKiB: 1 }, floor: { rssKiB: 1, anonKiB: 1 } }, reviewBytes: { esi: 1, 'vault-k8s': 1 }, objects: 1,
  } as unknown as WebhookResults;
  const text = webhookMarkdown(w);
  t.match(text, /\| CPU per admission \(100 req\/s\) \| 2\.00 \| 0\.50 \| ≤ 0\.8× \| \*\*2\.00\*\* \(missed\) worst rate; ms: 2\.00 · 1\.00 · 0\.500 \|/);
  t.match(text, /\| p50 latency at fixed rates \| 1\.50 \| 0\.50 \|/);
  t.match(text, /\| saturation throughput \| 0\.75 \| 1\.50 \|/);
  t.match(text, /\| RSS under load \(peak\) \| 1\.50 \| 0\.50 \|/);
  t.match(text, /\| 100 req\/s \| 100 \/ 100 \/ 100 \| 3\.00 \/ 2\.00 \/ 1\.00 \|/, 'each step cell is ESI / vault-k8s / floor');
  t.end();
});

t.test('the Go-template rows: with / without against 1.2×, with / OpenBao Agent against its budgets', (t) => {
  const steady = (anonMiB: number, rssMiB: number, cpuMs: number) => ({ cpuMs, seconds: 60, peak: { rssKiB: rssMiB * 1024, anonKiB: anonMiB * 1024 }, last: { rssKiB: 0, anonKiB: 0 } });
  const g: GoTemplateResults = {
    bytes: 353,
    startsMs: { 'esi-none': [100, 120, 110], 'esi-go': [130, 126, 121], 'bao-go': [100, 100, 100] },
    steady: { 'esi-none': steady(15, 55, 300), 'esi-go': steady(15.5, 56, 330), 'bao-go': steady(11, 75, 30) },
    load: { before: [2.5, 2, 1], after: [3.25, 2, 1] },
  };
  const text = goTemplateMarkdown(g);
  // start: p50 126 / 110 = 1.15 (met); 126 / 100 = 1.26 against ≤ 1× (missed).
  t.match(text, /\| start → file written \(p50, ms\) \| 110 \| 126 \| 100 \| 1\.15 \(met\), ≤ 1\.2× \| \*\*1\.26\*\* \(missed\), ≤ 1× \|/);
  t.match(text, /\| RssAnon \(private memory, peak, MiB\) \| 15\.0 \| 15\.5 \| 11\.0 \| 1\.03 \(met\), ≤ 1\.2× \| \*\*1\.41\*\* \(missed\), ≤ 1× \|/);
  t.match(text, /\| RSS \(peak, MiB\) \| 55\.0 \| 56\.0 \| 75\.0 \| 1\.02 \(met\), ≤ 1\.2× \| 0\.75 \|/, 'total RSS has no peer budget');
  t.match(text, /\| CPU over 60 s of refreshes \(ms\) \| 300 \| 330 \| 30 \| 1\.10 \| \*\*11\.00\*\* \(missed\), ≤ 1× \|/);
  t.match(text, /median of the rounds' ratios\): 1\.10\./, 'per-round ratios 1.30, 1.05, 1.10');
  t.match(text, /byte-identical \(353 bytes/);
  t.match(text, /2\.50 → 3\.25/);
  t.end();
});

t.test("the Go-template rows' expected file is what ESI's TypeScript engine renders from the ESO template", (t) => {
  const values = ['peer-value-0-yy', 'peer-value-1-yy', 'peer-value-2-yy'];
  const data = Object.fromEntries(values.map((v, i) => [`k${i}`, Buffer.from(v)]));
  const out = renderGoText('config.yaml', ESO_TEMPLATE, data, { maxOutput: 1 << 20, deadline: performance.now() + 10_000, onTimeout: () => new Error('timeout') });
  const expected = expectedGoFile(values[0]!, values[1]!, values[2]!);
  t.equal(Buffer.from(out).toString('utf8'), expected);
  t.match(expected, /^user: "peer-value-0-yy"\npassword: "peer-value-1-yy"\ndsn: [A-Za-z0-9+/=]+\nregion: PEER-VALUE-2-YY\nhosts:\n {2}- 0: peer\n/);
  t.end();
});

t.test('a one-phase run keeps the other phase from the previous section, naming the run that measured it', (t) => {
  const previous = [
    '## Side by side', '', '### Machine', '', '- Load average when the run started (1/5/15 min): 1.40 / 0.84 / 0.81; date 2026-11-23T20:27:22Z', '',
    '### Webhook: ESI vs vault-k8s', '', 'webhook text', '', '| a | b |', '',
    '### Agent: ESI vs OpenBao Agent', '', 'agent text', '', '### Agent with one ESO Go template', '', 'go rows', '',
    '### How to run', '', 'npm run bench:peers', '',
  ].join('\n');
  const webhook = keptSubsections(previous, 'Webhook');
  t.same(webhook, ['### Webhook: ESI vs vault-k8s', '',
    '_Kept from the previous run of this phase (2026-11-23T20:27:22Z, load average at its start 1.40 / 0.84 / 0.81): this run left that phase out (`--only`)._',
    '', 'webhook text', '', '| a | b |']);
  const agents = keptSubsections(previous, 'Agent');
  t.equal(agents.filter((l) => l.startsWith('### ')).length, 2, 'both agent subsections');
  t.notOk(agents.some((l) => l.includes('How to run')));
  // Kept again by a later one-phase run: the note still names the run that measured it.
  const later = previous.replace('1.40 / 0.84 / 0.81; date 2026-11-23T20:27:22Z', '9.00 / 9.00 / 9.00; date 2026-11-28T12:00:00Z')
    .replace(/### Webhook[^]*?(?=### Agent)/, `${webhook.join('\n')}\n\n`);
  t.same(keptSubsections(later, 'Webhook'), webhook);
  t.same(keptSubsections('## Side by side\n\n### Machine\n', 'Webhook'), []);
  t.end();
});
