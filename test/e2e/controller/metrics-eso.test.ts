// The controller's /metrics as a Prometheus set up for ESO reads it: ESO's per-object series
// (externalsecret_status_condition, externalsecret_sync_calls_total/_error) with ESO's labels,
// so ESO's alert expression finds the failing ExternalSecret and only it; a deleted object's
// series go away; process metrics under the standard names stock Node.js dashboards read.
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, externalSecret, fakeStore, ready, startController, until } from '../../support/fixtures/controller.js';

const CANARY = 'ctl-metrics-canary-31c7';
const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'ctl-metrics', t);
await create(env, ns, 'secretstores', fakeStore('fake', env.cls, [{ key: 'present', value: `${CANARY}-value` }]));
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false'], t);

interface Sample { name: string; labels: Record<string, string>; value: number }

/** The exposition text as samples (the format has no escapes in these label values). */
async function samples(): Promise<Sample[]> {
  const out: Sample[] = [];
  for (const line of (await ctl.metrics()).split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-zA-Z_]+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!]));
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** PromQL `name{sel} == value`, evaluated on one scrape. */
const select = (all: Sample[], name: string, sel: Record<string, string>, value?: number) =>
  all.filter((s) => s.name === name && Object.entries(sel).every(([k, v]) => s.labels[k] === v) && (value === undefined || s.value === value));

t.test("ESO's alert expression finds the failing ExternalSecret, and only it", async (t) => {
  await create(env, ns, 'externalsecrets', externalSecret('good', 'fake', { data: [{ secretKey: 'v', remoteRef: { key: 'present' } }] }));
  await create(env, ns, 'externalsecrets', externalSecret('bad', 'fake', { data: [{ secretKey: 'v', remoteRef: { key: 'absent' } }] }));
  await ready(env, ns, 'good', 'True');
  await ready(env, ns, 'bad', 'False');
  const all = await until('both objects in /metrics', async () => {
    const s = await samples();
    return select(s, 'externalsecret_status_condition', { namespace: ns }).length === 4 ? s : undefined;
  });
  // The expression of the chart's ExternalSecretNotReady alert, as ESO users write it.
  const firing = select(all, 'externalsecret_status_condition', { condition: 'Ready', status: 'False', namespace: ns }, 1);
  t.same(firing.map((s) => s.labels.name), ['bad'], 'Ready=False is 1 for the failing object only');
  t.same(select(all, 'externalsecret_status_condition', { name: 'good', namespace: ns, condition: 'Ready', status: 'True' }).map((s) => s.value), [1]);
  t.same(select(all, 'externalsecret_status_condition', { name: 'good', namespace: ns, condition: 'Ready', status: 'False' }).map((s) => s.value), [0], 'the opposite status is 0, as ESO sets it');
  t.same(select(all, 'externalsecret_status_condition', { name: 'bad', namespace: ns, condition: 'Ready', status: 'True' }).map((s) => s.value), [0]);
  t.ok(select(all, 'externalsecret_sync_calls_total', { name: 'good', namespace: ns })[0]!.value >= 1, 'sync calls counted per object');
  t.ok(select(all, 'externalsecret_sync_calls_error', { name: 'bad', namespace: ns })[0]!.value >= 1, 'sync errors counted per object');
  t.same(select(all, 'externalsecret_sync_calls_error', { name: 'good', namespace: ns }).map((s) => s.value).filter((v) => v > 0), [], 'no error for the good one');
  t.ok(select(all, 'process_cpu_seconds_total', {}).length === 1 && select(all, 'nodejs_heap_size_used_bytes', {}).length === 1, 'process metrics under their standard names');
  t.notOk((await ctl.metrics()).includes(CANARY), 'no value in /metrics');

  await env.custom.deleteNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'bad' });
  await until('the deleted object leaves /metrics', async () => {
    const s = await samples();
    return ['externalsecret_status_condition', 'externalsecret_sync_calls_total', 'externalsecret_sync_calls_error']
      .every((n) => select(s, n, { name: 'bad', namespace: ns }).length === 0) || undefined;
  });
  t.pass('no series of a deleted ExternalSecret stays behind');
});
