// deletionPolicy (Delete / Merge / Retain when the remote secret is gone), immutable
// targets, refreshPolicy CreatedOnce / OnChange / Periodic, coalescing of identical reads,
// and the idle refresh that writes nothing — counted by the controller's write metric.
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, decoded, externalSecret, fakeStore, getSecret, patchSpec, ready, startController, until } from '../../support/fixtures/controller.js';

const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'ctl-pol', t);
type FakeData = { key: string; value: string }[];
await create(env, ns, 'secretstores', fakeStore('fake', env.cls, [
  { key: 'temp', value: 'v1' }, { key: 'temp2', value: 'v1' }, { key: 'temp3', value: 'v1' }, { key: 'stay', value: 'v1' },
]));
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '3s'], t);
const one = (key: string, secretKey = 'v') => ({ data: [{ secretKey, remoteRef: { key } }] });

t.test('refreshPolicy, immutable, and deletionPolicy when the remote secret is gone', async (t) => {
  await env.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'host' }, stringData: { own: 'x' } } });
  await Promise.all([
    create(env, ns, 'externalsecrets', externalSecret('del', 'fake', { ...one('temp'), target: { deletionPolicy: 'Delete' } })),
    create(env, ns, 'externalsecrets', externalSecret('ret', 'fake', one('temp2'))),
    create(env, ns, 'externalsecrets', externalSecret('mrg', 'fake', { ...one('temp3', 'merged'), target: { name: 'host', creationPolicy: 'Merge', deletionPolicy: 'Merge' } })),
    create(env, ns, 'externalsecrets', externalSecret('imm', 'fake', { ...one('stay'), target: { immutable: true } })),
    create(env, ns, 'externalsecrets', externalSecret('once', 'fake', { ...one('stay'), refreshPolicy: 'CreatedOnce' })),
    create(env, ns, 'externalsecrets', externalSecret('onchange', 'fake', { ...one('stay'), refreshPolicy: 'OnChange' })),
    // Retain and a find with no match (ESO): no Secret is written, Ready=True.
    create(env, ns, 'externalsecrets', externalSecret('findnone', 'fake', { dataFrom: [{ find: { name: { regexp: '^nomatch' } } }] })),
    create(env, ns, 'externalsecrets', externalSecret('findret', 'fake', { dataFrom: [{ find: { name: { regexp: '^temp$' } } }] })),
  ]);
  for (const n of ['del', 'ret', 'mrg', 'imm', 'once', 'onchange', 'findnone', 'findret']) await ready(env, ns, n, 'True');
  t.equal(await getSecret(env, ns, 'findnone'), undefined, 'Retain + a find with no match: no Secret (ESI used to write an empty one)');
  t.same(decoded(await getSecret(env, ns, 'findret')), { temp: 'v1' });
  t.same(decoded(await getSecret(env, ns, 'host')), { own: 'x', merged: 'v1' });
  t.equal((await getSecret(env, ns, 'imm'))?.immutable, true);

  await patchSpec(env, ns, 'secretstores', 'fake', (o) => {
    (o.spec as { provider: { fake: { data: FakeData } } }).provider.fake.data = [{ key: 'stay', value: 'v2' }];
  });
  // Nothing left of the remote data: not an error (ESO), Ready stays True.
  await ready(env, ns, 'del', 'True', 'SecretDeleted');
  await until('Secret del deleted', async () => !(await getSecret(env, ns, 'del')));
  await until('merged key removed', async () => JSON.stringify(decoded(await getSecret(env, ns, 'host'))) === '{"own":"x"}');
  await ready(env, ns, 'mrg', 'True', 'SecretSynced');
  const ret = await ready(env, ns, 'ret', 'False', 'SecretSyncedError');
  t.match(ret.status?.conditions?.[0]?.message, /ExternalSecret "ret" data\[0\] \(secretKey "v", remote key "temp2"\): SecretStore\/[^/]+\/fake key "temp2": secret not found/);
  t.same(decoded(await getSecret(env, ns, 'ret')), { v: 'v1' }, 'Retain keeps the Secret');
  const findret = await until('findret: nothing found, Secret retained', async () => {
    const es = await ready(env, ns, 'findret', 'True', 'SecretSynced');
    return /deletionPolicy Retain/.test(es.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '') ? es : undefined;
  });
  t.ok(findret);
  t.same(decoded(await getSecret(env, ns, 'findret')), { temp: 'v1' }, 'Retain + find with no match: the Secret is kept as it was');
  t.equal(await getSecret(env, ns, 'findnone'), undefined);

  const imm = await until('immutable Secret recreated with the new value', async () => {
    const s = await getSecret(env, ns, 'imm');
    return decoded(s).v === 'v2' ? s : undefined;
  });
  t.equal(imm.immutable, true);
  t.same(decoded(await getSecret(env, ns, 'once')), { v: 'v1' }, 'CreatedOnce: never updated');
  t.same(decoded(await getSecret(env, ns, 'onchange')), { v: 'v1' }, 'OnChange: a store change is not a spec change');
  await patchSpec(env, ns, 'externalsecrets', 'onchange', (o) => {
    (o.metadata as { labels?: Record<string, string> }).labels = { changed: 'yes' };
  });
  await until('OnChange: updated after a change of the ExternalSecret', async () => decoded(await getSecret(env, ns, 'onchange')).v === 'v2');
});

t.test('N ExternalSecrets over K keys: ≤ K provider calls per window; an idle refresh writes nothing', async (t) => {
  const keys = ['k0', 'k1', 'k2', 'k3', 'k4'];
  await create(env, ns, 'secretstores', fakeStore('many', env.cls, keys.map((key) => ({ key, value: `value-of-${key}` }))));
  await ready(env, ns, 'del', 'True', 'SecretDeleted'); // the store exists before the ExternalSecrets
  const storeId = `SecretStore/${ns}/many`;
  const calls = () => ctl.counter('esi_controller_provider_calls_total', { store: storeId });
  await Promise.all(Array.from({ length: 20 }, (_, i) =>
    create(env, ns, 'externalsecrets', externalSecret(`n${i}`, 'many', { ...one(keys[i % keys.length]!), refreshInterval: '4s' }))));
  for (let i = 0; i < 20; i++) await ready(env, ns, `n${i}`, 'True');
  t.ok((await calls()) <= keys.length, `first sync of 20 ExternalSecrets: ${await calls()} provider calls for ${keys.length} keys`);

  await new Promise((r) => setTimeout(r, 1000));
  const writes = await ctl.counter('esi_controller_apiserver_writes_total');
  const writeLines = async () => (await ctl.metrics()).split('\n').filter((l) => l.startsWith('esi_controller_apiserver_writes_total')).join('\n');
  const linesBefore = await writeLines();
  const before = await calls();
  await new Promise((r) => setTimeout(r, 9000));
  const during = (await calls()) - before;
  t.ok(during >= keys.length, `values were fetched again (${during} calls in ~2 refresh cycles)`);
  t.ok(during <= 3 * keys.length, `≤ ${keys.length} calls per cycle (${during} in ≤ 3 cycles)`);
  t.equal(await ctl.counter('esi_controller_apiserver_writes_total'), writes, 'no apiserver write during idle refreshes', { before: linesBefore, after: await writeLines() });
  const syncs = await ctl.counter('esi_controller_syncs_total', { result: 'unchanged' });
  t.ok(syncs > 20, `idle reconciles happened (${syncs} unchanged)`);
});
