// spec.syncWindows (src/controller/externalsecret/sync-windows.ts): ESO's allow/deny windows over periodic
// refreshes, evaluated in UTC; the moment a blocked refresh may run; bad windows left out and
// named; bounded for any input.
import t from 'tap';
import { MAX_SYNC_WINDOWS, refreshAllowed, syncWindowGate } from '../../../../src/controller/externalsecret/sync-windows.js';

const at = (iso: string) => Date.parse(iso);
// 2026-11-27 is a Friday, 2026-11-28 a Saturday.
const weekdayNights = syncWindowGate({ kind: 'allow', windows: [{ schedule: '0 22 * * 1-5', duration: '8h' }] });

t.test('allow: only inside an open window; blocked until the next opening', async (t) => {
  t.same(refreshAllowed(weekdayNights, at('2026-11-27T22:00:00Z')), { allowed: true }, 'at the opening');
  t.same(refreshAllowed(weekdayNights, at('2026-11-28T05:59:59Z')), { allowed: true }, 'inside (after midnight)');
  t.same(refreshAllowed(weekdayNights, at('2026-11-28T06:00:00Z')), { allowed: false, next: at('2026-11-30T22:00:00Z') }, 'closed at the end; Monday night next');
  t.same(refreshAllowed(weekdayNights, at('2026-11-27T12:00:00Z')), { allowed: false, next: at('2026-11-27T22:00:00Z') });
});

t.test('deny: blocked while any window is open, until all have closed', async (t) => {
  const freeze = syncWindowGate({ kind: 'deny', windows: [
    { schedule: '0 9 * * *', duration: '2h' },
    { schedule: '30 10 * * *', duration: '1h' }, // overlaps the first one: the freeze ends 11:30
  ] });
  t.same(refreshAllowed(freeze, at('2026-11-27T08:59:00Z')), { allowed: true });
  t.same(refreshAllowed(freeze, at('2026-11-27T09:15:00Z')), { allowed: false, next: at('2026-11-27T11:30:00Z') });
  t.same(refreshAllowed(freeze, at('2026-11-27T11:30:00Z')), { allowed: true });
});

t.test('shorthands and @every', async (t) => {
  const daily = syncWindowGate({ kind: 'allow', windows: [{ schedule: '@midnight', duration: '1h' }] });
  t.same(refreshAllowed(daily, at('2026-11-27T00:30:00Z')), { allowed: true });
  t.same(refreshAllowed(daily, at('2026-11-27T01:30:00Z')), { allowed: false, next: at('2026-11-28T00:00:00Z') });
  const always = syncWindowGate({ kind: 'deny', windows: [{ schedule: '@every 1h', duration: '2h' }] });
  t.same(refreshAllowed(always, at('2026-11-27T01:30:00Z')), { allowed: false }, 'a deny window that is always open: never, with no moment to wait for');
  const never = syncWindowGate({ kind: 'allow', windows: [{ schedule: '@every 2h', duration: '1h' }] });
  t.same(refreshAllowed(never, at('2026-11-27T01:30:00Z')), { allowed: false }, 'an allow window that never opens blocks');
});

t.test('a window that cannot be read is left out (as ESO) and named; the others still gate', async (t) => {
  const g = syncWindowGate({ kind: 'allow', windows: [
    { schedule: 'not a cron', duration: '1h' },
    { schedule: '0 22 * * *', duration: '8 hours' },
    { schedule: '0 0 0 * * *', duration: '1h' }, // six fields: not ESO's syntax
    { schedule: '0 22 * * 1-5', duration: '8h' },
  ] })!;
  t.equal(g.ignored.length, 3);
  t.match(g.ignored[0], /^spec\.syncWindows\.windows\[0\]: /);
  t.match(g.ignored[1], /^spec\.syncWindows\.windows\[1\]: .*duration/);
  t.match(g.ignored[2], /5-field/);
  t.same(refreshAllowed(g, at('2026-11-27T12:00:00Z')), { allowed: false, next: at('2026-11-27T22:00:00Z') });
  const onlyBad = syncWindowGate({ kind: 'allow', windows: [{ schedule: 'x', duration: '1h' }] });
  t.same(refreshAllowed(onlyBad, at('2026-11-27T12:00:00Z')), { allowed: true }, 'no valid window: no gate (a typo does not stop every refresh)');
});

t.test('refused as a whole: unknown kind, too many windows; absent or empty: no gate', async (t) => {
  t.throws(() => syncWindowGate({ kind: 'sometimes' as 'allow', windows: [{ schedule: '@daily', duration: '1h' }] }), /spec\.syncWindows\.kind "sometimes" must be allow or deny/);
  const many = Array.from({ length: MAX_SYNC_WINDOWS + 1 }, () => ({ schedule: '@daily', duration: '1h' }));
  t.throws(() => syncWindowGate({ kind: 'deny', windows: many }), /at most 16/);
  t.equal(syncWindowGate(undefined), undefined);
  t.equal(syncWindowGate({ kind: 'deny', windows: [] }), undefined);
});

t.test('bounded: a schedule that never fires, many windows', async (t) => {
  const feb30 = syncWindowGate({ kind: 'allow', windows: [{ schedule: '0 0 30 2 *', duration: '1h' }] });
  t.same(refreshAllowed(feb30, at('2026-11-27T12:00:00Z')), { allowed: false });
  const chain = syncWindowGate({ kind: 'deny', windows: Array.from({ length: MAX_SYNC_WINDOWS }, (_, i) => ({ schedule: `${i * 3} 9 * * *`, duration: '5m' })) });
  const r = refreshAllowed(chain, at('2026-11-27T09:01:00Z'));
  t.same(r, { allowed: false, next: at('2026-11-27T09:50:00Z') }, 'sixteen chained windows walked to their end');
});
