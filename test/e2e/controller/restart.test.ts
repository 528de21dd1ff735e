// Restart on change on the real control plane (docs/controller.md, "Restart on change"): when
// the reconciler changes a Secret's data, the Deployments, StatefulSets and DaemonSets of its
// namespace that opted in get a new esi.dev/restartedAt on their pod template, once per
// change and at most once per --restart-min-interval. No kube-controller-manager runs: the
// proof is the stored workload (its generation counts pod template changes) and the Events.
import t from 'tap';
import { AppsV1Api, type V1PodSpec } from '@kubernetes/client-node';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, decoded, externalSecret, fakeStore, getSecret, patchSpec, ready, startController, until } from '../../support/fixtures/controller.js';

const CANARY = 'restart-canary-7c1f09';
const INTERVAL_MS = 12_000;
const OPT_IN = 'esi.dev/restart-on-secret-change';
const RESTARTED_AT = 'esi.dev/restartedAt';

const env = await controllerEnv(t);
const apps = env.kc.makeApiClient(AppsV1Api);
const ns = await createNamespace(env.kc, 'restart', t);
const other = await createNamespace(env.kc, 'restart-other', t);
await create(env, ns, 'secretstores', fakeStore('fake', env.cls, [{ key: 'db', value: `${CANARY}-1` }, { key: 'api', value: `${CANARY}-api-1` }]));
const ctl = await startController(env.cp.kubeconfigPath, [
  '--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s', '--restart-min-interval', `${INTERVAL_MS / 1000}s`,
], t);

type Kind = 'Deployment' | 'StatefulSet' | 'DaemonSet';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function workload(kind: Kind, name: string, pod: Partial<V1PodSpec>, optIn?: string) {
  const labels = { app: name };
  return {
    metadata: { name, ...(optIn === undefined ? {} : { annotations: { [OPT_IN]: optIn } }) },
    spec: {
      selector: { matchLabels: labels },
      ...(kind === 'StatefulSet' ? { serviceName: name } : {}),
      template: { metadata: { labels }, spec: { containers: [{ name: 'app', image: 'busybox' }], ...pod } as V1PodSpec },
    },
  };
}

async function make(kind: Kind, namespace: string, body: ReturnType<typeof workload>): Promise<void> {
  if (kind === 'Deployment') await apps.createNamespacedDeployment({ namespace, body });
  else if (kind === 'StatefulSet') await apps.createNamespacedStatefulSet({ namespace, body });
  else await apps.createNamespacedDaemonSet({ namespace, body });
}

async function read(kind: Kind, namespace: string, name: string) {
  const w = kind === 'Deployment' ? await apps.readNamespacedDeployment({ namespace, name })
    : kind === 'StatefulSet' ? await apps.readNamespacedStatefulSet({ namespace, name })
      : await apps.readNamespacedDaemonSet({ namespace, name });
  return { generation: w.metadata?.generation ?? 0, restartedAt: w.spec?.template.metadata?.annotations?.[RESTARTED_AT], json: JSON.stringify(w) };
}

const envRef = (secret: string) => ({ containers: [{ name: 'app', image: 'busybox', env: [{ name: 'PW', valueFrom: { secretKeyRef: { name: secret, key: 'pw' } } }] }] });

async function setRemote(key: string, value: string, secret: string, secretKey: string): Promise<void> {
  await patchSpec(env, ns, 'secretstores', 'fake', (o) => {
    const data = (o.spec as { provider: { fake: { data: { key: string; value: string }[] } } }).provider.fake.data;
    data.find((d) => d.key === key)!.value = value;
  });
  await until(`Secret ${secret} has the new value`, async () => decoded(await getSecret(env, ns, secret))[secretKey] === value);
}

async function generations() {
  return {
    auto: (await read('Deployment', ns, 'auto')).generation,
    plain: (await read('Deployment', ns, 'plain')).generation,
    named: (await read('Deployment', ns, 'named')).generation,
    sts: (await read('StatefulSet', ns, 'sts')).generation,
    ds: (await read('DaemonSet', ns, 'ds')).generation,
    otherNs: (await read('Deployment', other, 'auto')).generation,
  };
}

async function events(reason: string) {
  return (await env.core.listNamespacedEvent({ namespace: ns })).items.filter((e) => e.reason === reason);
}

// The workloads exist before their Secrets: a Secret's creation restarts nothing.
await make('Deployment', ns, workload('Deployment', 'auto', envRef('db'), 'true'));
await make('Deployment', ns, workload('Deployment', 'plain', { containers: [{ name: 'app', image: 'busybox', envFrom: [{ secretRef: { name: 'db' } }] }] }));
await make('Deployment', ns, workload('Deployment', 'named', { volumes: [{ name: 'db', secret: { secretName: 'db' } }], containers: [{ name: 'app', image: 'busybox', envFrom: [{ secretRef: { name: 'api' } }] }] }, 'api'));
await make('StatefulSet', ns, workload('StatefulSet', 'sts', { volumes: [{ name: 'p', projected: { sources: [{ secret: { name: 'db' } }] } }] }, 'true'));
await make('DaemonSet', ns, workload('DaemonSet', 'ds', { initContainers: [{ name: 'init', image: 'busybox', envFrom: [{ secretRef: { name: 'db' } }] }] }, 'true'));
await make('Deployment', other, workload('Deployment', 'auto', envRef('db'), 'true'));

t.test('no restart when the Secret is created, refreshed unchanged, or only its metadata changes', async (t) => {
  await create(env, ns, 'externalsecrets', externalSecret('db', 'fake', { data: [{ secretKey: 'pw', remoteRef: { key: 'db' } }] }));
  await create(env, ns, 'externalsecrets', externalSecret('api', 'fake', { data: [{ secretKey: 'token', remoteRef: { key: 'api' } }] }));
  await ready(env, ns, 'db', 'True', 'SecretSynced');
  await ready(env, ns, 'api', 'True', 'SecretSynced');
  const before = await ctl.counter('esi_controller_provider_calls_total');
  await patchSpec(env, ns, 'externalsecrets', 'db', (o) => {
    (o.metadata as { annotations?: Record<string, string> }).annotations = { 'force-sync': String(Date.now()) };
  });
  await until('force-sync provider call', async () => (await ctl.counter('esi_controller_provider_calls_total')) > before);
  await patchSpec(env, ns, 'externalsecrets', 'db', (o) => {
    (o.metadata as { labels?: Record<string, string> }).labels = { team: 'orders' };
  });
  await until('the label reaches the Secret', async () => (await getSecret(env, ns, 'db'))?.metadata?.labels?.team === 'orders');
  await sleep(2000);
  t.same(await generations(), { auto: 1, plain: 1, named: 1, sts: 1, ds: 1, otherNs: 1 }, 'no workload restarted');
  t.notOk((await read('Deployment', ns, 'auto')).restartedAt);
  t.same(await events('Restarted'), []);
});

let firstRestart = 0;

t.test('a changed value restarts the opted-in workloads referencing it, once; nothing else', async (t) => {
  await setRemote('db', `${CANARY}-2`, 'db', 'pw');
  await until('auto, sts and ds restarted', async () => {
    const g = await generations();
    return g.auto === 2 && g.sts === 2 && g.ds === 2;
  });
  const auto = await read('Deployment', ns, 'auto');
  t.match(auto.restartedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/, 'an RFC 3339 time');
  firstRestart = Date.parse(auto.restartedAt!);
  await sleep(3000);
  t.same(await generations(), { auto: 2, plain: 1, named: 1, sts: 2, ds: 2, otherNs: 1 },
    'exactly once; not the one that did not opt in, not the one that named another Secret, not the one in another namespace');
  t.notOk((await read('Deployment', other, 'auto')).restartedAt);
  const ev = await until('Restarted Event', async () => (await events('Restarted')).find((e) => e.involvedObject.name === 'db'));
  t.equal(ev.involvedObject.kind, 'ExternalSecret');
  for (const w of ['Deployment "auto"', 'StatefulSet "sts"', 'DaemonSet "ds"']) t.match(ev.message, w, `the Event names ${w}`);
  t.notMatch(ev.message, /plain|named/);
});

t.test('a named opt-in restarts only for the named Secret', async (t) => {
  await setRemote('api', `${CANARY}-api-2`, 'api', 'token');
  await until('named restarted', async () => (await generations()).named === 2);
  await sleep(2000);
  t.same(await generations(), { auto: 2, plain: 1, named: 2, sts: 2, ds: 2, otherNs: 1 });
  const ev = await until('Restarted Event of api', async () => (await events('Restarted')).find((e) => e.involvedObject.name === 'api'));
  t.match(ev.message, /Restarted Deployment "named" \(Secret "api" changed/);
});

t.test('two changes inside the minimum interval: one restart at once, then one delayed', async (t) => {
  // Start outside the interval of the restart above.
  await sleep(Math.max(0, firstRestart + INTERVAL_MS + 500 - Date.now()));
  await setRemote('db', `${CANARY}-3`, 'db', 'pw');
  await until('restarted at once', async () => (await generations()).auto === 3);
  const third = Date.parse((await read('Deployment', ns, 'auto')).restartedAt!);
  await setRemote('db', `${CANARY}-4`, 'db', 'pw');
  await setRemote('db', `${CANARY}-5`, 'db', 'pw');
  await sleep(1000);
  t.ok(Date.now() < third + INTERVAL_MS, 'still inside the interval (else this test proves nothing)');
  t.equal((await generations()).auto, 3, 'the changes inside the interval wait');
  t.ok((await events('RestartDelayed')).some((e) => e.involvedObject.name === 'db' && /Deployment "auto" delayed to/.test(e.message ?? '')), 'a RestartDelayed Event');
  await until('the delayed restart', async () => (await generations()).auto === 4, INTERVAL_MS * 4);
  const fourth = Date.parse((await read('Deployment', ns, 'auto')).restartedAt!);
  t.ok(fourth - third >= INTERVAL_MS - 100, `one interval between the two restarts (${fourth - third} ms)`);
  await sleep(3000);
  t.equal((await generations()).auto, 4, 'the two changes made one delayed restart');
});

t.test('no canary in the workloads, Events or logs', async (t) => {
  const texts: [string, string][] = [
    ['workloads', (await Promise.all([read('Deployment', ns, 'auto'), read('Deployment', ns, 'named'), read('StatefulSet', ns, 'sts'), read('DaemonSet', ns, 'ds')])).map((w) => w.json).join()],
    ['events', JSON.stringify(await env.core.listNamespacedEvent({ namespace: ns }))],
    ['logs', ctl.output()],
  ];
  for (const [what, text] of texts) t.notOk(text.includes(CANARY), `no canary in ${what}`);
  t.match(ctl.output(), /restarted on secret change/, 'the restarts are logged');
});
