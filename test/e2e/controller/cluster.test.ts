// ClusterExternalSecret and ClusterPushSecret on the real control plane: the reconciler
// provisions the namespaced objects in the namespaces selected by label and by name (owner
// reference, label, the cluster object's metadata), the ExternalSecrets then sync into
// Secrets; a namespace relabelled out loses its object, a name conflict is a failed
// namespace, a deleted cluster object takes its objects along; status lists all of it.
import t from 'tap';
import type { ExternalSecret } from '../../../src/api/types.js';
import type { ClusterExternalSecret, ClusterPushSecret } from '../../../src/api/cluster-types.js';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, decoded, externalSecret, fakeStore, getES, getSecret, GROUP, startController, until } from '../../support/fixtures/controller.js';
import { getPush } from '../../support/fixtures/push.js';

const CANARY = 'ctl-cluster-canary-3b9d';
const env = await controllerEnv(t);
const label = { 'esi-cluster-test': env.cls };
const [a, b, c, d, other] = [
  await createNamespace(env.kc, 'ces-a', t, label),
  await createNamespace(env.kc, 'ces-b', t, label),
  await createNamespace(env.kc, 'ces-c', t),
  await createNamespace(env.kc, 'ces-d', t),
  await createNamespace(env.kc, 'ces-other', t),
];
const store = `${env.cls}-fake`;
await create(env, undefined, 'clustersecretstores', fakeStore(store, env.cls, [{ key: 'db', value: JSON.stringify({ password: `${CANARY}-pw` }) }], 'ClusterSecretStore'));
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false'], t);

const esSpec = {
  secretStoreRef: { kind: 'ClusterSecretStore', name: store }, refreshInterval: '1h',
  data: [{ secretKey: 'password', remoteRef: { key: 'db', property: 'password' } }],
};
const getCes = async (name: string) => (await env.custom.getClusterCustomObject({ group: GROUP, version: 'v1', plural: 'clusterexternalsecrets', name })) as ClusterExternalSecret;
const getCps = async (name: string) => (await env.custom.getClusterCustomObject({ group: GROUP, version: 'v1alpha1', plural: 'clusterpushsecrets', name })) as ClusterPushSecret;
const missing = (p: Promise<unknown>) => p.then(() => false, () => true);
async function setLabels(ns: string, labels: Record<string, string | null>): Promise<void> {
  const cur = await env.core.readNamespace({ name: ns });
  const next = { ...(cur.metadata!.labels ?? {}) };
  for (const [k, v] of Object.entries(labels)) {
    if (v === null) delete next[k];
    else next[k] = v;
  }
  cur.metadata!.labels = next;
  await env.core.replaceNamespace({ name: ns, body: cur });
}

t.test('ClusterExternalSecret: selected by label, provisioned, synced; relabelled out → removed; deleted → gone', async (t) => {
  const name = `${env.cls}-by-label`;
  await create(env, undefined, 'clusterexternalsecrets', { kind: 'ClusterExternalSecret', metadata: { name }, spec: {
    namespaceSelectors: [{ matchLabels: label }], refreshTime: '1m',
    externalSecretMetadata: { labels: { team: 'payments' }, annotations: { 'example.com/owner': 'payments' } },
    externalSecretSpec: esSpec,
  } });
  const ces = await until('both namespaces provisioned', async () => {
    const o = await getCes(name);
    return o.status?.provisionedNamespaces?.length === 2 ? o : undefined;
  });
  t.same(ces.status?.provisionedNamespaces, [a, b].sort());
  t.same(ces.status?.failedNamespaces ?? [], []);
  t.equal(ces.status?.externalSecretName, name, 'the ExternalSecret takes the cluster object\'s name');
  t.equal(ces.status?.conditions?.find((x) => x.type === 'Ready')?.status, 'True');
  const es: ExternalSecret = await getES(env, a, name);
  t.equal(es.metadata.labels?.team, 'payments', 'externalSecretMetadata labels');
  t.equal(es.metadata.labels?.['esi.dev/cluster-external-secret'], name);
  t.equal(es.metadata.annotations?.['example.com/owner'], 'payments');
  t.match(es.metadata.ownerReferences, [{ kind: 'ClusterExternalSecret', name, uid: ces.metadata.uid, controller: true }]);
  t.same(es.spec.data, esSpec.data);
  for (const ns of [a, b]) {
    const secret = await until(`Secret in ${ns}`, () => getSecret(env, ns, name));
    t.same(decoded(secret), { password: `${CANARY}-pw` }, `the ExternalSecret in ${ns} synced`);
  }
  t.ok(await missing(getES(env, c, name)), 'an unselected namespace gets nothing');

  await setLabels(b, { 'esi-cluster-test': null });
  await until('the ExternalSecret leaves the relabelled namespace', () => missing(getES(env, b, name)));
  const after = await until('status without it', async () => {
    const o = await getCes(name);
    return o.status?.provisionedNamespaces?.length === 1 ? o : undefined;
  });
  t.same(after.status?.provisionedNamespaces, [a]);

  await setLabels(c, label);
  await until('a namespace labelled in gets it', () => getES(env, c, name));

  await env.custom.deleteClusterCustomObject({ group: GROUP, version: 'v1', plural: 'clusterexternalsecrets', name });
  for (const ns of [a, c]) await until(`the ExternalSecret in ${ns} is deleted with its cluster object`, () => missing(getES(env, ns, name)));
  t.pass('every provisioned ExternalSecret is gone');
});

t.test('ClusterExternalSecret: selected by name; a name taken by another ExternalSecret is a failed namespace', async (t) => {
  const name = `${env.cls}-by-name`;
  await create(env, d, 'externalsecrets', externalSecret('shared-name', store, { data: esSpec.data }, {}, 'ClusterSecretStore'));
  await create(env, undefined, 'clusterexternalsecrets', { kind: 'ClusterExternalSecret', metadata: { name }, spec: {
    namespaces: [c, d], externalSecretName: 'shared-name', externalSecretSpec: esSpec,
  } });
  const ces = await until('status with the failure', async () => {
    const o = await getCes(name);
    return o.status?.failedNamespaces?.length ? o : undefined;
  });
  t.same(ces.status?.provisionedNamespaces, [c]);
  t.equal(ces.status?.failedNamespaces?.[0]?.namespace, d);
  t.match(ces.status?.failedNamespaces?.[0]?.reason, /ExternalSecret "[^"]+\/shared-name" exists and is not provisioned by ClusterExternalSecret/);
  t.match(ces.status?.conditions?.find((x) => x.type === 'Ready'), { status: 'False', reason: 'NamespacesFailed' });
  t.notOk((await getES(env, d, 'shared-name')).metadata.ownerReferences, 'the existing ExternalSecret is left as it was');
  t.equal((await getES(env, c, 'shared-name')).metadata.labels?.['esi.dev/cluster-external-secret'], name);
  t.ok(await missing(getES(env, other, 'shared-name')), 'namespaces not named get nothing');
});

t.test('ClusterExternalSecret: the entries\' own stores decide the controller', async (t) => {
  // Another class's store, used by one entry: the whole object is that class's.
  const foreign = `${env.cls}-foreign`;
  await create(env, undefined, 'clustersecretstores', fakeStore(foreign, `${env.cls}-other`, [{ key: 'db', value: '{}' }], 'ClusterSecretStore'));
  const entry = (storeName: string) => ({ sourceRef: { storeRef: { kind: 'ClusterSecretStore', name: storeName } } });
  const mixed = `${env.cls}-mixed`;
  await create(env, undefined, 'clusterexternalsecrets', { kind: 'ClusterExternalSecret', metadata: { name: mixed }, spec: {
    namespaces: [other], externalSecretSpec: { ...esSpec, dataFrom: [{ extract: { key: 'db' }, ...entry(foreign) }] },
  } });
  // Only per-entry stores, all of this class, no spec.secretStoreRef: served and synced.
  const own = `${env.cls}-entries`;
  await create(env, undefined, 'clusterexternalsecrets', { kind: 'ClusterExternalSecret', metadata: { name: own }, spec: {
    namespaces: [other], externalSecretSpec: { refreshInterval: '1h', data: [{ ...esSpec.data[0], ...entry(store) }] },
  } });
  const secret = await until('the per-entry ExternalSecret synced', () => getSecret(env, other, own));
  t.same(decoded(secret), { password: `${CANARY}-pw` });
  t.equal((await getCes(own)).status?.provisionedNamespaces?.[0], other);
  // By now the mixed one has been through the same queue; it stays untouched.
  const ces = await getCes(mixed);
  t.notOk(ces.status, 'no status written on another class\'s cluster object');
  t.ok(await missing(getES(env, other, mixed)), 'and no ExternalSecret provisioned for it');
});

t.test('ClusterPushSecret: PushSecrets in the selected namespaces, removed when a namespace leaves', async (t) => {
  const name = `${env.cls}-push`;
  const sel = { 'esi-cluster-push': env.cls };
  await setLabels(a, sel);
  await setLabels(other, sel);
  await env.custom.createClusterCustomObject({ group: GROUP, version: 'v1alpha1', plural: 'clusterpushsecrets', body: {
    apiVersion: `${GROUP}/v1alpha1`, kind: 'ClusterPushSecret', metadata: { name }, spec: {
      namespaceSelectors: [{ matchLabels: sel }], pushSecretName: 'push-db', pushSecretMetadata: { labels: { team: 'payments' } },
      pushSecretSpec: {
        secretStoreRefs: [{ kind: 'ClusterSecretStore', name: store }], refreshInterval: '1h',
        selector: { secret: { name: 'db' } }, data: [{ match: { secretKey: 'password', remoteRef: { remoteKey: 'pushed' } } }],
      },
    },
  } });
  const cps = await until('both namespaces provisioned', async () => {
    const o = await getCps(name);
    return o.status?.provisionedNamespaces?.length === 2 ? o : undefined;
  });
  t.same(cps.status?.provisionedNamespaces, [a, other].sort());
  t.equal(cps.status?.pushSecretName, 'push-db');
  const ps = await getPush(env, a, 'push-db');
  t.match(ps?.metadata, { labels: { team: 'payments', 'esi.dev/cluster-push-secret': name }, ownerReferences: [{ kind: 'ClusterPushSecret', name }] });
  t.same(ps?.spec.selector, { secret: { name: 'db' } });

  await setLabels(other, { 'esi-cluster-push': null });
  await until('the PushSecret leaves the relabelled namespace', async () => !(await getPush(env, other, 'push-db')));
  await until('status without it', async () => (await getCps(name)).status?.provisionedNamespaces?.length === 1);
  await env.custom.deleteClusterCustomObject({ group: GROUP, version: 'v1alpha1', plural: 'clusterpushsecrets', name });
  await until('the PushSecret is deleted with its cluster object', async () => !(await getPush(env, a, 'push-db')));
  t.pass('gone');
});

t.test('Events name what was provisioned and removed; no value anywhere', async (t) => {
  // Events are written by the controller's rate-limited writer, after the fact: wait for them.
  const list = async () => (await env.core.listNamespacedEvent({ namespace: 'default' })).items
    .filter((e) => e.involvedObject.kind === 'ClusterExternalSecret' && (e.involvedObject.name ?? '').startsWith(env.cls));
  let events = await list();
  const says = (reason: string, re: RegExp) => events.some((e) => e.reason === reason && re.test(e.message ?? ''));
  const deleted = new RegExp(`^Deleted ExternalSecret "${b}/${env.cls}-by-label": namespace "${b}" is no longer selected$`);
  await until('the Events', async () => {
    events = await list();
    return says('Created', /./) && says('Deleted', deleted) && says('NamespacesFailed', /./);
  }).catch(() => undefined);
  t.ok(says('Created', new RegExp(`^Created ExternalSecret "${a}/${env.cls}-by-label"$`)), 'Created');
  t.ok(says('Deleted', deleted), 'Deleted');
  t.ok(says('NamespacesFailed', /exists and is not provisioned by ClusterExternalSecret/), 'the failure');
  t.notOk(JSON.stringify(events).includes(CANARY) || ctl.output().includes(CANARY), 'no canary in Events or logs');
});
