// The arithmetic behind BENCHMARKS.md "Side by side" (bench/peers/report.ts) and the /proc
// parsing it reads processes with (bench/peers/procstat.ts).
import t from 'tap';
import { parseStat, parseStatus } from '../../bench/peers/procstat.js';
import { budgetText, cpuPerRequest, fmt, median, ratio, ratioCell, withinBudget } from '../../bench/peers/report.js';

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
