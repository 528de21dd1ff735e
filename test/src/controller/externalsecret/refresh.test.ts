// When an ExternalSecret is refreshed (src/controller/externalsecret/refresh.ts).
import t from 'tap';
import { parseGoDuration } from '../../../../src/duration.js';
import { jitterSpan, nextRefresh, phaseOf, refreshAfterRead } from '../../../../src/controller/externalsecret/refresh.js';

t.test('refresh grid: shared by every object of an interval, jitter bounded and stable', async (t) => {
  const hour = 3_600_000;
  const now = Date.UTC(2026, 0, 1, 10, 17);
  const times = ['a', 'b', 'c', 'd'].map((uid) => nextRefresh(hour, phaseOf(uid), 30_000, now));
  for (const at of times) t.ok(at > now && at <= Date.UTC(2026, 0, 1, 11) && at >= Date.UTC(2026, 0, 1, 11) - 30_000, 'next grid point minus ≤ 30 s');
  t.ok(new Set(times).size > 1, 'objects are spread by their phase');
  t.equal(phaseOf('a'), phaseOf('a'));
  t.equal(jitterSpan(60_000, 30_000), 6_000, 'a tenth of the interval when smaller');
  // After a read: the first slot at least an interval (less the jitter span) later.
  const minute = 60_000;
  const slot = nextRefresh(minute, phaseOf('a'), 30_000, now);
  t.equal(refreshAfterRead(minute, phaseOf('a'), 30_000, slot), slot + minute, 'a refresh read schedules the next slot, one interval on');
  t.equal(refreshAfterRead(minute, phaseOf('a'), 30_000, slot - 1_000), slot + minute, 'a first sync just before a slot skips it');
  t.equal(refreshAfterRead(minute, phaseOf('a'), 30_000, slot - minute + 6_000 - 2), slot, 'a read more than an interval less the jitter span before a slot refreshes at it');
  t.equal(refreshAfterRead(minute, 0.5, 0, slot), nextRefresh(minute, 0.5, 0, slot + minute - 1), 'without jitter: one interval on');
  t.equal(parseGoDuration('1h30m'), 5_400_000);
  t.equal(parseGoDuration('0'), 0);
  t.throws(() => parseGoDuration('1d', 'spec.refreshInterval'), /spec.refreshInterval "1d" must be a Go duration/);
});
