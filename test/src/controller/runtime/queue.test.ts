// WorkQueue: the controller's one retry decision (src/controller/runtime/queue.ts).
import t from 'tap';
import { WorkQueue, type Requeue } from '../../../../src/controller/runtime/queue.js';
import { Schedule } from '../../../../src/controller/runtime/schedule.js';
import { until } from '../../../support/platform/until.js';

t.test('WorkQueue: a key queued twice runs once; an event during a run runs it again; failures back off', async (t) => {
  const runs: string[] = [];
  let fail = true;
  const schedule = new Schedule<string>((k) => q.add(k));
  const q: WorkQueue<string> = new WorkQueue<string>({
    workers: 2, baseDelayMs: 20, maxDelayMs: 1000, schedule,
    handle: async (k) => {
      runs.push(k);
      if (k === 'x' && runs.length === 1) q.add('x'); // arrives while x runs: dirty
      if (k === 'f' && fail) {
        fail = false;
        throw new Error('transient');
      }
      await new Promise((r) => setTimeout(r, 5));
    },
  });
  q.add('x');
  q.add('x');
  q.add('f');
  q.start();
  await new Promise((r) => setTimeout(r, 150));
  t.same(runs.filter((k) => k === 'x').length, 2, 'deduped, then re-run once for the event during the run');
  t.same(runs.filter((k) => k === 'f').length, 2, 'retried after its backoff');
  t.equal(q.retry('g'), 20);
  t.equal(q.retry('g'), 40, 'exponential per key');
  q.forget('g');
  t.equal(q.failuresOf('g'), 0);
  await q.stop();
  schedule.stop();
});

t.test('WorkQueue: the one loop applies what a reconcile returns (next run, backoff, later, cancel)', async (t) => {
  const results = new Map<string, Requeue[]>();
  const runs: string[] = [];
  const schedule = new Schedule<string>((k) => q.add(k));
  const q: WorkQueue<string> = new WorkQueue<string>({
    workers: 1, baseDelayMs: 30, maxDelayMs: 1000, schedule,
    handle: async (k) => {
      runs.push(k);
      return results.get(k)?.shift() ?? {};
    },
  });
  const far = Date.now() + 3_600_000;
  results.set('periodic', [{ next: far }]);
  results.set('failing', [{ backoff: true }, { backoff: true }, {}]);
  results.set('later', [{ after: 20 }, {}]);
  results.set('cancelled', [{ next: far }, { next: 'cancel' }]);
  for (const k of ['periodic', 'failing', 'later', 'cancelled']) q.add(k);
  const ran = (k: string, n: number) => async () => runs.filter((r) => r === k).length >= n && !q.busy;
  q.start();
  await until('the first runs', ran('cancelled', 1), 30_000, 5);
  t.equal(schedule.due('periodic'), far, 'next: the periodic run is scheduled');
  t.equal(schedule.due('cancelled'), far);
  q.add('cancelled');
  await until('three runs of the failing key', ran('failing', 3), 30_000, 5);
  await until('two runs of the later key, the second of cancelled', async () => (await ran('later', 2)()) && (await ran('cancelled', 2)()), 30_000, 5);
  t.equal(runs.filter((k) => k === 'failing').length, 3, 'backoff: run again after its backoff, twice');
  t.equal(q.failuresOf('failing'), 0, 'a run without backoff clears it');
  t.equal(runs.filter((k) => k === 'later').length, 2, 'after: run again without counting a failure');
  t.equal(schedule.due('cancelled'), undefined, "next: 'cancel' drops the periodic run");
  await q.stop();
  schedule.stop();
});
