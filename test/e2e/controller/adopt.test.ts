// Taking over a Secret ESI does not manage (only when its writer allows it), on the real
// control plane: a Secret ESO wrote for the same ExternalSecret (its controller
// ownerReference is that ExternalSecret) is adopted with no step; any other one only when it
// carries esi.dev/adopt naming the ExternalSecret. Everything else stays a SecretConflict.
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, decoded, externalSecret, fakeStore, getSecret, patchSpec, ready, startController, until } from '../../support/fixtures/controller.js';

const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'ctl-adopt', t);
const VALUE = 'adopt-canary-71c2';
await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '1s'], t);

const data = [{ secretKey: 'token', remoteRef: { key: 'token' } }];
const forceSync = (name: string) => patchSpec(env, ns, 'externalsecrets', name, (o) => {
  const meta = o.metadata as { annotations?: Record<string, string> };
  meta.annotations = { ...meta.annotations, 'force-sync': String(Date.now()) };
});
const event = (name: string, reason: string) => until(`${reason} Event for ${name}`, async () => {
  const list = await env.core.listNamespacedEvent({ namespace: ns });
  return list.items.find((e) => e.involvedObject.name === name && e.reason === reason);
});

t.test('a Secret ESO wrote for this ExternalSecret is taken over with no step', async (t) => {
  // The ExternalSecret exists first (its uid is in the Secret's ownerReference), its store later.
  await create(env, ns, 'externalsecrets', externalSecret('moved', 'later', { data }));
  await ready(env, ns, 'moved', 'False');
  const es = await env.custom.getNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'moved' }) as { metadata: { uid: string } };
  await env.core.createNamespacedSecret({ namespace: ns, body: {
    metadata: {
      name: 'moved', labels: { 'reconcile.external-secrets.io/managed': 'true' },
      ownerReferences: [{ apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', name: 'moved', uid: es.metadata.uid, controller: true, blockOwnerDeletion: true }],
    },
    stringData: { token: 'written-by-eso', stale: 'x' },
  } });
  await create(env, ns, 'secretstores', fakeStore('later', env.cls, [{ key: 'token', value: VALUE }]));
  await forceSync('moved');
  await ready(env, ns, 'moved', 'True', 'SecretSynced');
  const s = await getSecret(env, ns, 'moved');
  t.same(decoded(s), { token: VALUE }, 'ESI owns every key now');
  t.equal(s?.metadata?.labels?.['esi.dev/managed'], 'true');
  t.match(s?.metadata?.ownerReferences, [{ uid: es.metadata.uid, controller: true }]);
  t.equal(s?.metadata?.ownerReferences?.length, 1, 'one controller ownerReference');
  t.match((await event('moved', 'Adopted')).message, /Took over Secret "moved": its controller ownerReference is this ExternalSecret/);
});

t.test('any other Secret: only with esi.dev/adopt naming this ExternalSecret', async (t) => {
  await create(env, ns, 'secretstores', fakeStore('fake', env.cls, [{ key: 'token', value: VALUE }]));
  await env.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'handmade', annotations: { 'esi.dev/adopt': 'someone-else' } }, stringData: { a: 'b' } } });
  await create(env, ns, 'externalsecrets', externalSecret('claimer', 'fake', { target: { name: 'handmade' }, data }));
  const refused = await ready(env, ns, 'claimer', 'False', 'SecretConflict');
  t.match(refused.status?.conditions?.[0]?.message, /not managed by ESI; .*annotate it esi\.dev\/adopt=claimer/);
  t.same(decoded(await getSecret(env, ns, 'handmade')), { a: 'b' }, 'untouched');

  const cur = (await getSecret(env, ns, 'handmade'))!;
  cur.metadata!.annotations = { 'esi.dev/adopt': 'claimer' };
  await env.core.replaceNamespacedSecret({ namespace: ns, name: 'handmade', body: cur });
  await forceSync('claimer');
  await ready(env, ns, 'claimer', 'True', 'SecretSynced');
  const s = await getSecret(env, ns, 'handmade');
  t.same(decoded(s), { token: VALUE });
  t.equal(s?.metadata?.labels?.['esi.dev/managed'], 'true');
  t.match((await event('claimer', 'Adopted')).message, /it carries esi\.dev\/adopt: claimer/);
});

t.test('a Secret another ExternalSecret owns is never adopted, whatever its annotation says', async (t) => {
  await create(env, ns, 'externalsecrets', externalSecret('first', 'fake', { data }));
  await ready(env, ns, 'first', 'True');
  const s = (await getSecret(env, ns, 'first'))!;
  s.metadata!.annotations = { ...s.metadata!.annotations, 'esi.dev/adopt': 'second' };
  await env.core.replaceNamespacedSecret({ namespace: ns, name: 'first', body: s });
  await create(env, ns, 'externalsecrets', externalSecret('second', 'fake', { target: { name: 'first' }, data }));
  const es = await ready(env, ns, 'second', 'False', 'SecretConflict');
  t.match(es.status?.conditions?.[0]?.message, /owned by ExternalSecret "first"/);
});
