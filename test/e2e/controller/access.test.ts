// Access rules in the reconciler (the same src/stores/access.ts as the webhook): stores in
// other namespaces, ClusterSecretStore conditions, credential references across
// namespaces — each ends in Ready=False with a clear message and no Secret. The kubernetes
// provider syncs for real with a ServiceAccount token from TokenRequest. Two controllers
// with different classes and an unclassed store: each object has exactly one reconciler.
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, decoded, externalSecret, fakeStore, getSecret, ready, startController, until } from '../../support/fixtures/controller.js';

const CANARY = 'ctl-access-canary-2b7e';
const env = await controllerEnv(t);
const run = randomBytes(3).toString('hex');
const ns = await createNamespace(env.kc, 'ctl-acc', t, { 'esi-ctl-run': run });
const other = await createNamespace(env.kc, 'ctl-oth', t);
await env.core.createNamespacedSecret({ namespace: other, body: { metadata: { name: 'root-token' }, stringData: { token: `${CANARY}-root` } } });
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false'], t);
const one = { data: [{ secretKey: 'v', remoteRef: { key: 'k' } }] };
const k8s = (auth: object, remoteNamespace = ns) => ({
  kubernetes: { remoteNamespace, server: { url: env.cp.server, caBundle: Buffer.from(env.cp.caPem).toString('base64') }, auth },
});

t.test('a SecretStore of another namespace is not found from this one', async (t) => {
  await create(env, other, 'secretstores', fakeStore('theirs', env.cls, [{ key: 'k', value: `${CANARY}-x` }]));
  await create(env, ns, 'externalsecrets', externalSecret('steal', 'theirs', one));
  const es = await ready(env, ns, 'steal', 'False', 'StoreNotFound');
  t.match(es.status?.conditions?.[0]?.message, new RegExp(`SecretStore "${ns}/theirs" not found`));
  t.notOk(await getSecret(env, ns, 'steal'));
});

t.test('ClusterSecretStore conditions and cross-namespace credential references are refused', async (t) => {
  await create(env, undefined, 'clustersecretstores', { ...fakeStore(`payments-${run}`, env.cls, [{ key: 'k', value: `${CANARY}-p` }], 'ClusterSecretStore', { conditions: [{ namespaces: ['payments'] }] }) });
  t.teardown(() => env.custom.deleteClusterCustomObject({ group: 'external-secrets.io', version: 'v1', plural: 'clustersecretstores', name: `payments-${run}` }).catch(() => undefined));
  await create(env, ns, 'externalsecrets', externalSecret('pay', `payments-${run}`, one, {}, 'ClusterSecretStore'));
  const es = await ready(env, ns, 'pay', 'False', 'AccessDenied');
  t.match(es.status?.conditions?.[0]?.message, new RegExp(`ClusterSecretStore "payments-${run}" may not be used from namespace "${ns}"`));

  await create(env, undefined, 'clustersecretstores', { kind: 'ClusterSecretStore', metadata: { name: `crossns-${run}` }, spec: { controller: env.cls,
    provider: k8s({ token: { bearerToken: { name: 'root-token', key: 'token', namespace: other } } }) } });
  t.teardown(() => env.custom.deleteClusterCustomObject({ group: 'external-secrets.io', version: 'v1', plural: 'clustersecretstores', name: `crossns-${run}` }).catch(() => undefined));
  await create(env, ns, 'externalsecrets', externalSecret('cross', `crossns-${run}`, one, {}, 'ClusterSecretStore'));
  const cross = await ready(env, ns, 'cross', 'False', 'AccessDenied');
  t.match(cross.status?.conditions?.[0]?.message, new RegExp(`references Secret "${other}/root-token" in another namespace`));

  await create(env, ns, 'secretstores', { kind: 'SecretStore', metadata: { name: 'crossref' }, spec: { controller: env.cls,
    provider: k8s({ token: { bearerToken: { name: 'root-token', key: 'token', namespace: other } } }) } });
  await create(env, ns, 'externalsecrets', externalSecret('crossref', 'crossref', one));
  const ref = await ready(env, ns, 'crossref', 'False', 'StoreNotReady');
  t.match(ref.status?.conditions?.[0]?.message, /in another namespace; ESI reads store credentials only from namespace/);
  for (const n of ['pay', 'cross', 'crossref']) t.notOk(await getSecret(env, ns, n), `no Secret ${n}`);
});

t.test('kubernetes provider: a real sync with a TokenRequest token for the store\'s ServiceAccount', async (t) => {
  await env.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'reader' } } });
  const rbac = env.kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name: 'read-src' }, rules: [
    { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
    { apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectrulesreviews', 'selfsubjectaccessreviews'], verbs: ['create'] },
  ] } });
  await rbac.createNamespacedRoleBinding({ namespace: ns, body: { metadata: { name: 'reader-src' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-src' }, subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns }] } });
  await env.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'src' }, stringData: { password: `${CANARY}-pw` } } });
  await create(env, ns, 'secretstores', { kind: 'SecretStore', metadata: { name: 'k8s' }, spec: { controller: env.cls, provider: k8s({ serviceAccount: { name: 'reader' } }) } });
  await create(env, ns, 'externalsecrets', externalSecret('fromk8s', 'k8s', { data: [{ secretKey: 'password', remoteRef: { key: 'src', property: 'password' } }] }));
  await ready(env, ns, 'fromk8s', 'True');
  t.same(decoded(await getSecret(env, ns, 'fromk8s')), { password: `${CANARY}-pw` });
  const store = await env.custom.getNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural: 'secretstores', name: 'k8s' }) as { status?: { capabilities?: string; conditions?: { type: string; status: string }[] } };
  t.match(store.status, { capabilities: /^Read/, conditions: [{ type: 'Ready', status: 'True' }] });
});

t.test('two controllers of different classes and an unclassed store: one reconciler each', async (t) => {
  const [a, b] = [`${env.cls}-a`, `${env.cls}-b`];
  const x = await startController(env.cp.kubeconfigPath, ['--controller-class', a, '--leader-elect=false', '--namespace-selector', `esi-ctl-run=${run}`], t);
  const y = await startController(env.cp.kubeconfigPath, ['--controller-class', b, '--claim-unclassed=false', '--leader-elect=false'], t);
  await create(env, ns, 'secretstores', fakeStore('sa', a, [{ key: 'k', value: 'from-a' }]));
  await create(env, ns, 'secretstores', fakeStore('sb', b, [{ key: 'k', value: 'from-b' }]));
  await create(env, ns, 'secretstores', { kind: 'SecretStore', metadata: { name: 'su' }, spec: { provider: { fake: { data: [{ key: 'k', value: 'from-u' }] } } } });
  for (const [es, store] of [['ea', 'sa'], ['eb', 'sb'], ['eu', 'su']] as const) await create(env, ns, 'externalsecrets', externalSecret(es, store, one));
  for (const es of ['ea', 'eb', 'eu']) await ready(env, ns, es, 'True');
  t.same([decoded(await getSecret(env, ns, 'ea')).v, decoded(await getSecret(env, ns, 'eb')).v, decoded(await getSecret(env, ns, 'eu')).v], ['from-a', 'from-b', 'from-u']);
  // Secret creations are exact (a repeated reconcile finds the Secret and writes nothing).
  const created = (c: typeof x) => c.counter('esi_controller_apiserver_writes_total', { verb: 'POST', resource: 'secrets' });
  await until('metrics settle', async () => (await created(x)) >= 2 && (await created(y)) >= 1);
  t.equal(await created(x), 2, `class ${a} (+ unclassed) created the Secrets of ea and eu only`);
  t.equal(await created(y), 1, `class ${b} created the Secret of eb only`);
  t.equal(await ctl.counter('esi_controller_syncs_total', { result: 'synced' }) >= 1, true);
  for (const c of [ctl, x, y]) t.notOk(c.output().includes(CANARY), 'no canary in logs');
});
