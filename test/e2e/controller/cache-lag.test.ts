// A controller whose store cache lags behind the API must not report StoreNotFound for a
// store that exists: the store may be another controller's class, and its report would
// overwrite the status the owning controller wrote (a status-only change requeues nothing,
// so it would stay). The lag is made permanent here: the second controller's
// ServiceAccount may get stores but not list or watch them, so its store caches stay empty
// while it sees every ExternalSecret, as a controller whose store watch trails behind does.
import { RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createNamespace, kubeConfigForToken, serviceAccountToken } from '../../support/kube.js';
import { controllerEnv, create, externalSecret, fakeStore, getES, ready, startController, until } from '../../support/fixtures/controller.js';

const env = await controllerEnv(t);
const run = randomBytes(3).toString('hex');
const ns = await createNamespace(env.kc, 'ctl-lag', t, { 'esi-ctl-run': run });
const rbac = env.kc.makeApiClient(RbacAuthorizationV1Api);
const role = `esi-test-lagging-${run}`;
await env.core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'lagging' } } });
await rbac.createClusterRole({ body: { metadata: { name: role }, rules: [
  { apiGroups: ['external-secrets.io'], resources: ['externalsecrets', 'externalsecrets/status', 'pushsecrets', 'pushsecrets/status'], verbs: ['*'] },
  { apiGroups: ['external-secrets.io'], resources: ['secretstores', 'clustersecretstores'], verbs: ['get'] },
  { apiGroups: [''], resources: ['namespaces', 'secrets', 'events'], verbs: ['*'] },
] } });
t.teardown(() => rbac.deleteClusterRole({ name: role }).catch(() => undefined));
await rbac.createClusterRoleBinding({ body: { metadata: { name: role }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
  subjects: [{ kind: 'ServiceAccount', name: 'lagging', namespace: ns }] } });
t.teardown(() => rbac.deleteClusterRoleBinding({ name: role }).catch(() => undefined));
const kubeconfig = join(await mkdtemp(join(tmpdir(), 'esi-lag-')), 'kubeconfig');
await writeFile(kubeconfig, kubeConfigForToken(env.kc, await serviceAccountToken(env.kc, ns, 'lagging')).exportConfig(), { mode: 0o600 });

const scope = ['--claim-unclassed=false', '--leader-elect=false', '--namespace-selector', `esi-ctl-run=${run}`];
await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, ...scope], t);
const lagging = await startController(kubeconfig, ['--controller-class', `${env.cls}-other`, '--namespace', ns, ...scope], t);

t.test('the owner\'s Ready status stands while a lagging controller of another class retries', async (t) => {
  await create(env, ns, 'secretstores', fakeStore('mine', env.cls, [{ key: 'k', value: 'v1' }]));
  await create(env, ns, 'externalsecrets', externalSecret('owned', 'mine', { data: [{ secretKey: 'v', remoteRef: { key: 'k' } }] }));
  await ready(env, ns, 'owned', 'True');
  // The lagging controller reconciles the ExternalSecret again (its retries back off from
  // 1 s): after two more of them, whatever it writes has been written.
  const reconciles = () => lagging.counter('esi_controller_syncs_total');
  const before = await reconciles();
  await until('two more reconciles by the lagging controller', async () => (await reconciles()) >= before + 2);
  const es = await getES(env, ns, 'owned');
  const c = es.status?.conditions?.find((x) => x.type === 'Ready');
  t.match(c, { status: 'True', reason: 'SecretSynced' }, `Ready is still the owner's (got ${JSON.stringify(c)})`);
  const events = await env.core.listNamespacedEvent({ namespace: ns });
  t.notOk(events.items.some((e) => e.reason === 'StoreNotFound'), 'no StoreNotFound Event for a store that exists');
});

t.test('a store that does not exist is still reported as not found', async (t) => {
  await create(env, ns, 'externalsecrets', externalSecret('orphan', 'absent', { data: [{ secretKey: 'v', remoteRef: { key: 'k' } }] }));
  const es = await ready(env, ns, 'orphan', 'False', 'StoreNotFound');
  t.match(es.status?.conditions?.[0]?.message, new RegExp(`SecretStore "${ns}/absent" not found`));
});
