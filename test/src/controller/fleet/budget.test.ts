// A store's read budget as refresh floors (src/controller/fleet/budget.ts): the fleet's rate
// at the floor stays within the budget (after headroom and the reconciler's share), a pod
// already slower than the floor keeps its own period, and the budget annotation's parser.
import t from 'tap';
import { BUDGET_HEADROOM, budgetFloor, fleetRate, parseReadBudget } from '../../../../src/controller/fleet/budget.js';

t.test('the floor brings the fleet within the budget, for any fleet size', async (t) => {
  for (const n of [1, 10, 200, 10_000]) {
    const pods = Array.from({ length: n }, (_, i) => ({ ownSeconds: i % 3 === 0 ? 3600 : 60, reads: 1 + (i % 4) }));
    const budget = 10;
    const f = budgetFloor(pods, budget, 1);
    t.ok(f.fits, `${n} pods fit`);
    t.ok(fleetRate(pods, f.seconds) + 1 <= budget * BUDGET_HEADROOM + 1e-9, `${n} pods: ${fleetRate(pods, f.seconds).toFixed(3)} reads/s + the reconciler's 1 at floor ${f.seconds}s`);
    if (f.seconds > 1) t.ok(fleetRate(pods, f.seconds - 1) + 1 > budget * BUDGET_HEADROOM - 1e-9 || f.seconds <= 60, 'and it is the smallest whole-second floor that does');
  }
});

t.test('no floor when the fleet already fits; pods slower than the floor keep their own period', async (t) => {
  t.same(budgetFloor([{ ownSeconds: 60, reads: 1 }], 1), { seconds: 0, rate: 1 / 60, fits: true });
  const pods = [{ ownSeconds: 10, reads: 10 }, { ownSeconds: 86_400, reads: 1 }];
  const f = budgetFloor(pods, 0.2);
  t.ok(f.seconds > 10 && f.seconds < 86_400, `floor ${f.seconds}s between the two`);
  t.ok(Math.abs(fleetRate(pods, f.seconds) - (10 / f.seconds + 1 / 86_400)) < 1e-12, 'the slow pod counts at its own day');
});

t.test('a budget the reconciler alone uses up: the longest period, reported as not fitting', async (t) => {
  const f = budgetFloor([{ ownSeconds: 60, reads: 1 }], 1, 5);
  t.equal(f.seconds, 86_400);
  t.equal(f.fits, false);
});

t.test('esi.dev/read-budget values', async (t) => {
  t.equal(parseReadBudget('600/m'), 10);
  t.equal(parseReadBudget('10/s'), 10);
  t.equal(parseReadBudget('1000/h'), 1000 / 3600);
  for (const bad of ['600', '0/m', '-1/s', '10/d', 'lots/m', '1e9/s']) t.throws(() => parseReadBudget(bad), /reads/, bad);
});
