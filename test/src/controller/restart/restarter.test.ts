// The restart bounds of src/controller/restart/restarter.ts with an API double (the end-to-end proof on
// the real apiserver is test/e2e/controller/restart.test.ts): changes inside the minimum interval
// coalesce into one delayed restart; a failed restart is retried a bounded number of times;
// a delayed restart re-reads the workload and skips one that opted out meanwhile.
import t, { type Test } from 'tap';
import pino from 'pino';
import type { KubeRest } from '../../../../src/kube/rest.js';
import type { EventRecorder } from '../../../../src/controller/runtime/events.js';
import { Restarter, type RestartOptions } from '../../../../src/controller/restart/restarter.js';
import { WorkQueue } from '../../../../src/controller/runtime/queue.js';
import { Schedule } from '../../../../src/controller/runtime/schedule.js';
import { queueKey } from '../../../../src/controller/runtime/keys.js';
import { RESTART_ON_CHANGE_ANNOTATION, RESTARTED_AT_ANNOTATION } from '../../../../src/controller/restart/match.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ES = { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', name: 'db', namespace: 'app' };

/** A Restarter on a work queue of its own, as the controller runs it on the one queue. */
function restarter(t: Test, o: Omit<RestartOptions, 'queue' | 'schedule'>): Restarter {
  const schedule = new Schedule((k) => queue.add(k));
  const queue: WorkQueue = new WorkQueue({ workers: 4, baseDelayMs: 20, maxDelayMs: 1000, schedule, handle: (k) => r.handle(k) });
  const r = new Restarter({ ...o, queue, schedule });
  queue.start();
  t.teardown(async () => {
    r.stop();
    schedule.stop();
    await queue.stop();
  });
  return r;
}

function api(opts: { failPatches?: number } = {}) {
  const deployments: Record<string, { metadata: { name: string; annotations: Record<string, string> }; spec: { template: { metadata: { annotations: Record<string, string> }; spec: object } } }> = {
    web: {
      metadata: { name: 'web', annotations: { [RESTART_ON_CHANGE_ANNOTATION]: 'true' } },
      spec: { template: { metadata: { annotations: {} }, spec: { containers: [{ name: 'c', envFrom: [{ secretRef: { name: 'db' } }] }] } } },
    },
  };
  const patches: string[] = [];
  const lists: string[] = [];
  let failures = opts.failPatches ?? 0;
  const rest = {
    get: async (path: string) => {
      if (path.includes('/deployments?')) {
        lists.push(path);
        return { metadata: {}, items: Object.values(deployments).map((d) => structuredClone(d)) };
      }
      if (path.includes('/deployments/')) return structuredClone(deployments[path.split('/').pop()!]);
      return { metadata: {}, items: [] };
    },
    patch: async (path: string, body: { spec: { template: { metadata: { annotations: Record<string, string> } } } }) => {
      if (failures-- > 0) throw new Error('deployments.apps "web" is forbidden');
      patches.push(path);
      Object.assign(deployments[path.split('/').pop()!]!.spec.template.metadata.annotations, body.spec.template.metadata.annotations);
      return {};
    },
  } as unknown as KubeRest;
  const events: string[] = [];
  const recorder = { emit: (_o: unknown, type: string, reason: string, message: string) => events.push(`${type} ${reason} ${message}`) } as unknown as EventRecorder;
  return { rest, recorder, events, patches, lists, deployments };
}

t.test('one restart per interval: changes inside it coalesce into one delayed restart', async (t) => {
  const a = api();
  const r = restarter(t, { rest: a.rest, events: a.recorder, logger: pino({ level: 'silent' }), minIntervalMs: 400 });
  r.secretChanged('app', 'db', ES);
  await sleep(50);
  t.equal(a.patches.length, 1, 'the first change restarts at once');
  t.match(a.patches[0], /^\/apis\/apps\/v1\/namespaces\/app\/deployments\/web$/);
  t.match(a.deployments.web!.spec.template.metadata.annotations[RESTARTED_AT_ANNOTATION], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  t.match(a.events.at(-1), /^Normal Restarted Restarted Deployment "web" \(Secret "db" changed; esi\.dev\/restartedAt=/);
  r.secretChanged('app', 'db', ES);
  await sleep(50);
  r.secretChanged('app', 'db', ES);
  await sleep(50);
  t.equal(a.patches.length, 1, 'inside the interval: delayed');
  t.match(a.events.at(-1), /RestartDelayed Restart of Deployment "web" delayed to /);
  await sleep(450);
  t.equal(a.patches.length, 2, 'two changes inside the interval: one delayed restart');
  await sleep(450);
  t.equal(a.patches.length, 2, 'and no more');
});

t.test('the last restart is read back from the workload: the bound holds across controller restarts', async (t) => {
  const a = api();
  a.deployments.web!.spec.template.metadata.annotations[RESTARTED_AT_ANNOTATION] = new Date().toISOString();
  const r = restarter(t, { rest: a.rest, events: a.recorder, logger: pino({ level: 'silent' }), minIntervalMs: 300 });
  r.secretChanged('app', 'db', ES);
  await sleep(100);
  t.equal(a.patches.length, 0, 'restarted moments ago (by an earlier controller): delayed');
  await sleep(350);
  t.equal(a.patches.length, 1);

  const b = api();
  b.deployments.web!.spec.template.metadata.annotations[RESTARTED_AT_ANNOTATION] = '3000-01-01T00:00:00Z';
  const r2 = restarter(t, { rest: b.rest, events: b.recorder, logger: pino({ level: 'silent' }), minIntervalMs: 300 });
  r2.secretChanged('app', 'db', ES);
  await sleep(100);
  t.equal(b.patches.length, 0, 'a time in the future counts as now');
  await sleep(350);
  t.equal(b.patches.length, 1, 'so the wait is one interval, not a millennium');
});

t.test('a failed restart is reported and retried, a bounded number of times', async (t) => {
  const a = api({ failPatches: 100 });
  const r = restarter(t, { rest: a.rest, events: a.recorder, logger: pino({ level: 'silent' }), minIntervalMs: 100, attempts: 3, retryDelayMs: 20 });
  r.secretChanged('app', 'db', ES);
  await sleep(400);
  const failed = a.events.filter((e) => e.startsWith('Warning RestartFailed'));
  t.equal(failed.length, 3, 'three tries, each reported');
  t.match(failed.at(-1), /cannot restart Deployment "web": deployments\.apps "web" is forbidden \(giving up\)/);
  t.equal(a.patches.length, 0);

  const b = api({ failPatches: 1 });
  const r2 = restarter(t, { rest: b.rest, events: b.recorder, logger: pino({ level: 'silent' }), minIntervalMs: 100, attempts: 3, retryDelayMs: 20 });
  r2.secretChanged('app', 'db', ES);
  await sleep(200);
  t.equal(b.patches.length, 1, 'the retry restarts it');
});

t.test('a delayed restart skips a workload that opted out meanwhile; unrelated Secrets restart nothing', async (t) => {
  const a = api();
  const r = restarter(t, { rest: a.rest, events: a.recorder, logger: pino({ level: 'silent' }), minIntervalMs: 300 });
  r.secretChanged('app', 'other', ES);
  await sleep(50);
  t.equal(a.patches.length, 0, 'not referenced');
  r.secretChanged('app', 'db', ES);
  await sleep(50);
  r.secretChanged('app', 'db', ES);
  await sleep(50);
  t.equal(a.patches.length, 1);
  a.deployments.web!.metadata.annotations[RESTART_ON_CHANGE_ANNOTATION] = 'false';
  await sleep(350);
  t.equal(a.patches.length, 1, 'opted out before the delayed restart');
});

t.test('many changes in one namespace at once: one scan of each kind for the lot', async (t) => {
  const a = api();
  const r = restarter(t, { rest: a.rest, events: a.recorder, logger: pino({ level: 'silent' }), minIntervalMs: 300 });
  for (let i = 0; i < 50; i++) r.secretChanged('app', i === 49 ? 'db' : `s${i}`, ES);
  await sleep(100);
  t.ok(a.lists.length <= 2, `${a.lists.length} Deployment lists for 50 changes (the first, and one for the rest)`);
  t.equal(a.patches.length, 1);
});

t.test('the work is keys of the work queue: a scan per namespace, a delayed restart per workload', async (t) => {
  const a = api();
  const queued: string[] = [];
  const scheduled: string[] = [];
  const r = new Restarter({
    rest: a.rest, events: a.recorder, logger: pino({ level: 'silent' }), minIntervalMs: 60_000,
    queue: { add: (k) => queued.push(k) }, schedule: { at: (k) => scheduled.push(k) },
  });
  t.teardown(() => r.stop());
  r.secretChanged('app', 'db', ES);
  r.secretChanged('app', 'db', ES);
  t.same(queued, ['restart/app/'], 'one scan key for the namespace, nothing run yet');
  t.ok(Restarter.owns(queueKey('restart', 'app', '')) && Restarter.owns(queueKey('Deployment', 'app', 'web')) && !Restarter.owns(queueKey('es', 'app', 'db')));
  await r.handle(queueKey('restart', 'app', ''));
  t.equal(a.patches.length, 1, 'the queue ran the scan: restarted');
  r.secretChanged('app', 'db', ES);
  await r.handle(queueKey('restart', 'app', ''));
  t.same(scheduled, ['Deployment/app/web'], 'inside the interval: the delayed restart is a scheduled key, not a timer');
  await r.handle(queueKey('Deployment', 'app', 'web'));
  t.equal(a.patches.length, 2, 'the key coming due restarts it');
});
