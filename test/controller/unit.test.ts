// The reconciler's pure parts: the timer heap, the work queue's dedupe and backoff, the
// refresh grid with jitter, Go durations, and the Secret plan (ownership, no-op, repair).
import type { V1Secret } from '@kubernetes/client-node';
import t from 'tap';
import type { ExternalSecret } from '../../src/api/types.js';
import { parseGoDuration } from '../../src/duration.js';
import { keyOf, queueKey } from '../../src/controller/runtime/keys.js';
import { WorkQueue, type Requeue } from '../../src/controller/runtime/queue.js';
import { jitterSpan, nextRefresh, phaseOf, refreshAfterRead } from '../../src/controller/externalsecret/refresh.js';
import { Schedule } from '../../src/controller/runtime/schedule.js';
import { desiredSecret, planSecret } from '../../src/controller/externalsecret/secret.js';
import { editedByHand } from '../../src/controller/runtime/labels.js';
import { until } from '../platform/until.js';

t.test('Schedule: one timer, earliest first, rescheduling supersedes', async (t) => {
  const fired: string[] = [];
  const s = new Schedule<string>((k) => fired.push(k));
  const now = Date.now();
  s.at('b', now + 60);
  s.at('a', now + 20);
  s.at('c', now + 40);
  s.at('c', now + 100); // supersedes the earlier entry
  s.sooner('b', 5_000); // already due sooner: unchanged
  await new Promise((r) => setTimeout(r, 200));
  t.same(fired, ['a', 'b', 'c']);
  t.equal(s.size, 0);
  s.stop();
});

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

t.test('queue keys: built in one place, read back', async (t) => {
  t.equal(queueKey('es', 'team-a', 'db'), 'es/team-a/db');
  t.equal(queueKey('css', '', 'shared'), 'css/shared');
  t.equal(queueKey('cps', 'ignored', 'x'), 'cps/x', 'cluster-scoped kinds have no namespace');
  t.same(keyOf(queueKey('ps', 'team-a', 'push')), { kind: 'ps', namespace: 'team-a', name: 'push' });
  t.same(keyOf(queueKey('ces', '', 'all')), { kind: 'ces', namespace: '', name: 'all' });
});

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

t.test('Secret plan: create, no-op, repair, conflicts, Merge', async (t) => {
  const es = { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'db', namespace: 'n', uid: 'u1' }, spec: {} } as ExternalSecret;
  const d = desiredSecret(es, { kind: 'SecretStore', name: 's' }, { data: { pw: new TextEncoder().encode('x') }, labels: {}, annotations: {} });
  const create = planSecret(d, es, undefined, () => false);
  t.equal(create.action, 'create');
  const body = (create as { body: V1Secret }).body;
  t.equal(planSecret(d, es, body, () => false).action, 'none', 'identical: no write');
  t.notOk(editedByHand(body));
  const edited = { ...body, data: { pw: Buffer.from('tampered').toString('base64') } };
  t.ok(editedByHand(edited), 'hash mismatch = hand edit');
  t.equal(planSecret(d, es, edited, () => false).action, 'replace');
  const other = { ...body, metadata: { ...body.metadata, ownerReferences: [{ apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', name: 'x', uid: 'u2', controller: true }] } };
  t.match(planSecret(d, es, other, () => true), { action: 'refuse', reason: 'SecretConflict', message: /owned by ExternalSecret "x"/ });
  t.match(planSecret(d, es, { metadata: { name: 'db' }, data: {} }, () => false), { action: 'refuse', message: /not managed by ESI/ });
  // Adoption: the writer's ownerReference to this very ExternalSecret, or esi.dev/adopt naming it.
  const esoWritten = { metadata: { name: 'db', ownerReferences: [{ apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', name: 'db', uid: 'u1', controller: true }] }, data: {} };
  t.match(planSecret(d, es, esoWritten, () => true), { action: 'replace', adopted: /controller ownerReference is this ExternalSecret/ });
  t.match(planSecret(d, es, { metadata: { name: 'db', annotations: { 'esi.dev/adopt': 'db' } }, data: {} }, () => false), { action: 'replace', adopted: /esi\.dev\/adopt: db/ });
  t.match(planSecret(d, es, { metadata: { name: 'db', annotations: { 'esi.dev/adopt': 'other' } }, data: {} }, () => false), { action: 'refuse', reason: 'SecretConflict' });
  t.notOk((planSecret(d, es, edited, () => false) as { adopted?: string }).adopted, 'a managed Secret is not adopted');
  const merge = desiredSecret({ ...es, spec: { target: { creationPolicy: 'Merge' } } }, { kind: 'SecretStore', name: 's' }, { data: { pw: new TextEncoder().encode('x') }, labels: {}, annotations: {} });
  t.match(planSecret(merge, es, undefined, () => false), { action: 'refuse', reason: 'SecretMissing' });
  const merged = planSecret(merge, es, { metadata: { name: 'db' }, data: { own: 'eA==' } }, () => false) as { body: { data: Record<string, string> } };
  t.same(Object.keys(merged.body.data).sort(), ['own', 'pw'], 'Merge keeps the other keys');
});

t.test('Secret plan: Merge drops the keys it merged before and no longer has; template finalizers', async (t) => {
  const es = { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'db', namespace: 'n', uid: 'u1' }, spec: { target: { creationPolicy: 'Merge' } } } as ExternalSecret;
  const enc = (s: string) => new TextEncoder().encode(s);
  const want = (data: Record<string, string>, spec: ExternalSecret['spec'] = es.spec) => desiredSecret({ ...es, spec }, { kind: 'SecretStore', name: 's' },
    { data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, enc(v)])), labels: {}, annotations: {} });
  const first = (planSecret(want({ a: '1', b: '2' }), es, { metadata: { name: 'db' }, data: { own: 'eA==' } }, () => false) as { body: V1Secret }).body;
  const second = planSecret(want({ b: '2' }), es, first, () => false) as { action: string; body: V1Secret };
  t.equal(second.action, 'replace', 'a merged key gone is a change');
  t.same(Object.keys(second.body.data!).sort(), ['b', 'own'], 'the key no longer merged is removed, the user\'s stays');
  t.equal(planSecret(want({ b: '2' }), es, second.body, () => false).action, 'none');

  const owner = { target: { template: { metadata: { finalizers: ['esi.test/a'] } } } };
  const withFin = (planSecret(want({ a: '1' }, owner), es, undefined, () => false) as { body: V1Secret }).body;
  t.same(withFin.metadata?.finalizers, ['esi.test/a']);
  const others = { ...withFin, metadata: { ...withFin.metadata, finalizers: ['esi.test/a', 'other/b'] } };
  t.equal(planSecret(want({ a: '1' }, owner), es, others, () => false).action, 'none', 'another actor\'s finalizer is no change');
  const dropped = planSecret(want({ a: '1' }, { target: {} }), es, others, () => false) as { action: string; body: V1Secret };
  t.equal(dropped.action, 'replace');
  t.same(dropped.body.metadata?.finalizers, ['other/b'], 'the dropped finalizer is removed, the other kept');
});
