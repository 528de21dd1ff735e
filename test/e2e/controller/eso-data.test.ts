// Data that must not change or be lost, against the real apiserver and the real `esi controller`:
// JSON numbers reach the Secret as written; deletionPolicy Delete / Merge skip a remote entry
// that is gone and act only when nothing is left (Ready=True, as ESO); creationPolicy Merge
// without a target Secret is Ready=True (SecretMissing); template.metadata.finalizers are set.
// Every assertion reads the Secret and the ExternalSecret through the API, as a user would.
import type { V1Secret } from '@kubernetes/client-node';
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, decoded, externalSecret, fakeStore, getSecret, patchSpec, ready, startController, until } from '../../support/fixtures/controller.js';

const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'ctl-esodata', t);
type FakeData = { key: string; value: string }[];
const NUMBERS = '{"id": 12345678901234567890, "price": 1.50, "big": 1e3, "n": {"ids": [12345678901234567891, 2.50]}}';
await create(env, ns, 'secretstores', fakeStore('fake', env.cls, [
  { key: 'nums', value: NUMBERS },
  { key: 'a', value: 'va' }, { key: 'b', value: 'vb' }, { key: 'c', value: 'vc' }, { key: 'd', value: 'vd' },
  { key: 'e', value: 've' }, { key: 'f', value: 'vf' }, { key: 'g', value: 'vg' },
]));
await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '0s'], t);
const entry = (secretKey: string, key: string) => ({ secretKey, remoteRef: { key } });
const setStore = (keep: (k: string) => boolean) => patchSpec(env, ns, 'secretstores', 'fake', (o) => {
  const fake = (o.spec as { provider: { fake: { data: FakeData } } }).provider.fake;
  fake.data = fake.data.filter((d) => keep(d.key));
});
/** Read-modify-replace of a Secret as another actor (kubectl edit), retried on conflict. */
async function editSecret(name: string, mutate: (s: V1Secret) => void): Promise<void> {
  await until(`edit of Secret ${name}`, async () => {
    const s = await env.core.readNamespacedSecret({ namespace: ns, name });
    mutate(s);
    return env.core.replaceNamespacedSecret({ namespace: ns, name, body: s }).then(() => true);
  }, 10_000);
}
const events = async (reason: string) => (await env.core.listNamespacedEvent({ namespace: ns })).items.filter((e) => e.reason === reason);

// A selected number is gjson's string of it, as ESO writes it (integers as written, others
// normalised); a whole object or an extracted map keeps the numbers as written.
t.test('JSON numbers: property and nested path as gjson writes them, object and extract as written', async (t) => {
  await create(env, ns, 'externalsecrets', externalSecret('nums', 'fake', {
    data: [
      { secretKey: 'id', remoteRef: { key: 'nums', property: 'id' } },
      { secretKey: 'price', remoteRef: { key: 'nums', property: 'price' } },
      { secretKey: 'big', remoteRef: { key: 'nums', property: 'big' } },
      { secretKey: 'first', remoteRef: { key: 'nums', property: 'n.ids.0' } },
    ],
    dataFrom: [{ extract: { key: 'nums' } }],
  }));
  await ready(env, ns, 'nums', 'True');
  t.same(decoded(await getSecret(env, ns, 'nums')), {
    id: '12345678901234567890', price: '1.5', big: '1000', first: '12345678901234567891', n: '{"ids":[12345678901234567891,2.50]}',
  });
});

t.test('missing remote entries: Delete and Merge skip them and act only when nothing is left', async (t) => {
  await env.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'host' }, stringData: { own: 'x' } } });
  await Promise.all([
    create(env, ns, 'externalsecrets', externalSecret('del', 'fake', { data: [entry('a', 'a'), entry('b', 'b')], target: { deletionPolicy: 'Delete' } })),
    create(env, ns, 'externalsecrets', externalSecret('mrg', 'fake', {
      data: [entry('c', 'c'), entry('d', 'd')], target: { name: 'host', creationPolicy: 'Merge', deletionPolicy: 'Merge' },
    })),
    create(env, ns, 'externalsecrets', externalSecret('own-mrg', 'fake', { data: [entry('e', 'e')], target: { deletionPolicy: 'Merge' } })),
  ]);
  for (const n of ['del', 'mrg', 'own-mrg']) await ready(env, ns, n, 'True', 'SecretSynced');
  t.same(decoded(await getSecret(env, ns, 'host')), { own: 'x', c: 'vc', d: 'vd' });

  // One remote key of each gone: the Secrets keep the rest.
  await setStore((k) => !['a', 'c', 'e'].includes(k));
  await until('Delete: the Secret keeps the key still in the store', async () => JSON.stringify(decoded(await getSecret(env, ns, 'del'))) === '{"b":"vb"}');
  await until('Merge: the key gone is removed, the other merged key and the user\'s stay',
    async () => JSON.stringify(decoded(await getSecret(env, ns, 'host'))) === '{"d":"vd","own":"x"}');
  await until('Owner + Merge with nothing left: the Secret stays, without data', async () => {
    const s = await getSecret(env, ns, 'own-mrg');
    return s && Object.keys(s.data ?? {}).length === 0;
  });
  for (const n of ['del', 'mrg', 'own-mrg']) await ready(env, ns, n, 'True', 'SecretSynced');
  const skipped = await until('MissingProviderSecret Events', async () => {
    const e = await events('MissingProviderSecret');
    return e.length >= 3 ? e : undefined;
  });
  t.ok(skipped.some((e) => e.involvedObject.name === 'del' && /data\[0\] \(secretKey "a", remote key "a"\)/.test(e.message ?? '')), 'the Event names the entry skipped');

  // Nothing left: Delete deletes the Secret and reports Ready=True, reason SecretDeleted.
  await setStore((k) => !['a', 'b', 'c', 'e'].includes(k));
  await until('Delete with nothing left: the Secret is deleted', async () => !(await getSecret(env, ns, 'del')));
  const del = await ready(env, ns, 'del', 'True', 'SecretDeleted');
  t.match(del.status?.conditions?.find((c) => c.type === 'Ready')?.message, /no remote data is left/);

  // The remote data back: written again at the next sync (a spec change forces one).
  await patchSpec(env, ns, 'secretstores', 'fake', (o) => {
    (o.spec as { provider: { fake: { data: FakeData } } }).provider.fake.data.push({ key: 'a', value: 'va2' });
  });
  await until('Delete: the Secret is written again once a remote key is back', async () => decoded(await getSecret(env, ns, 'del')).a === 'va2');
  await ready(env, ns, 'del', 'True', 'SecretSynced');
});

t.test('creationPolicy Merge without the target Secret is Ready=True (SecretMissing), merged once it exists', async (t) => {
  await create(env, ns, 'externalsecrets', externalSecret('later', 'fake', {
    data: [entry('f', 'f')], target: { name: 'later-target', creationPolicy: 'Merge' }, refreshInterval: '2s',
  }));
  const es = await ready(env, ns, 'later', 'True', 'SecretMissing');
  t.match(es.status?.conditions?.find((c) => c.type === 'Ready')?.message, /Secret "[^"]+\/later-target" does not exist/);
  t.notOk(await getSecret(env, ns, 'later-target'), 'Merge never creates the Secret');
  await env.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'later-target' }, stringData: { mine: 'y' } } });
  await until('merged once the Secret exists', async () => JSON.stringify(decoded(await getSecret(env, ns, 'later-target'))) === '{"f":"vf","mine":"y"}');
  await ready(env, ns, 'later', 'True', 'SecretSynced');
});

t.test('template.metadata.finalizers are set on the Secret; dropped ones removed, others\' kept', async (t) => {
  const FIN = 'esi.test/protect';
  const OTHER = 'esi.test/someone-else';
  t.teardown(async () => {
    // Never leave a finalizer behind: the namespace must be deletable.
    if ((await getSecret(env, ns, 'fin'))?.metadata?.finalizers?.length) await editSecret('fin', (s) => delete s.metadata!.finalizers);
  });
  await create(env, ns, 'externalsecrets', externalSecret('fin', 'fake', {
    data: [entry('g', 'g')], target: { template: { metadata: { finalizers: [FIN] } } },
  }));
  await ready(env, ns, 'fin', 'True');
  const s = await getSecret(env, ns, 'fin');
  t.same(s?.metadata?.finalizers, [FIN]);
  t.same(decoded(s), { g: 'vg' });

  await editSecret('fin', (s) => s.metadata!.finalizers!.push(OTHER));
  await patchSpec(env, ns, 'externalsecrets', 'fin', (o) => {
    (o.spec as { target: { template: { metadata: { finalizers: string[] } } } }).target.template.metadata.finalizers = [];
  });
  await until('the finalizer the template dropped is removed, the other actor\'s kept',
    async () => JSON.stringify((await getSecret(env, ns, 'fin'))?.metadata?.finalizers) === JSON.stringify([OTHER]));
});
