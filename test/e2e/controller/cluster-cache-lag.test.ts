// Two controllers of different classes on one cluster: each caches every ClusterExternalSecret
// and every ExternalSecret, through separate watches that can lag each other. A controller that
// sees a provisioned ExternalSecret before it sees the ClusterExternalSecret that owns it must
// not take the owner for deleted: the apiserver decides. Here the lag is made certain: the
// reconciler is given a cache that holds the child and not its owner, and the real apiserver
// holds both (no garbage collector runs on the test plane, so only the reconciler deletes).
import type { KubernetesObject } from '@kubernetes/client-node';
import pino from 'pino';
import t from 'tap';
import { ClusterReconciler } from '../../../src/controller/cluster/reconcile.js';
import type { Informers } from '../../../src/controller/runtime/informers.js';
import type { EventRecorder } from '../../../src/controller/runtime/events.js';
import { KubeRest } from '../../../src/kube/rest.js';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, fakeStore, getES, GROUP } from '../../support/fixtures/controller.js';

const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'ces-lag', t);
// A store of a class no controller on the plane serves: nothing else reconciles these objects.
const store = `${env.cls}-unserved`;
await create(env, undefined, 'clustersecretstores', fakeStore(store, env.cls, [{ key: 'k', value: 'v' }], 'ClusterSecretStore'));
const name = `${env.cls}-lagged`;
const spec = { secretStoreRef: { kind: 'ClusterSecretStore', name: store }, refreshInterval: '1h', data: [{ secretKey: 'k', remoteRef: { key: 'k' } }] };
await create(env, undefined, 'clusterexternalsecrets', { kind: 'ClusterExternalSecret', metadata: { name }, spec: { namespaces: [ns], externalSecretSpec: spec } });
const owner = (await env.custom.getClusterCustomObject({ group: GROUP, version: 'v1', plural: 'clusterexternalsecrets', name })) as KubernetesObject;
// The child as the owning controller provisioned it: owner reference and label.
await create(env, ns, 'externalsecrets', {
  kind: 'ExternalSecret',
  metadata: {
    name, labels: { 'esi.dev/cluster-external-secret': name },
    ownerReferences: [{ apiVersion: `${GROUP}/v1`, kind: 'ClusterExternalSecret', name, uid: owner.metadata!.uid!, controller: true }],
  },
  spec,
});
const child = await getES(env, ns, name);

const rest = new KubeRest(env.kc);
t.teardown(() => rest.close());
const emitted: string[] = [];
// The lagging cache: the child is there, its owner is not (yet).
const informers = {
  clusterExternalSecret: () => undefined,
  externalSecrets: () => [child],
  externalSecret: () => child,
  namespaces: () => [],
} as unknown as Informers;
const reconciler = new ClusterReconciler({
  informers, rest, logger: pino({ level: 'silent' }), inScope: () => true,
  stores: { served: () => false },
  events: { emit: (_o: unknown, _type: string, reason: string) => emitted.push(reason) } as unknown as EventRecorder,
});
const present = () => getES(env, ns, name).then(() => true, () => false);

t.test('owner missing from the cache but present in the API: the child stays, the key retries', async (t) => {
  const out = await reconciler.reconcile('ces', name);
  t.equal(out.result, 'skipped');
  t.equal(out.reason, 'NotCached');
  t.same(out.requeue, { backoff: true }, 'retried until the cache catches up (then the class rule decides)');
  t.ok(await present(), 'the ExternalSecret another class provisioned is still there');
  t.same(emitted, []);
});

t.test('owner gone from the API too: its provisioned objects go', async (t) => {
  await env.custom.deleteClusterCustomObject({ group: GROUP, version: 'v1', plural: 'clusterexternalsecrets', name });
  const out = await reconciler.reconcile('ces', name);
  t.equal(out.result, 'synced');
  t.equal(out.reason, 'Deleted');
  t.notOk(await present(), 'the ExternalSecret was deleted through the API');
});

t.test('nothing provisioned and no owner: no API call needed, nothing to do', async (t) => {
  const none = new ClusterReconciler({
    informers: { ...informers, externalSecrets: () => [] } as unknown as Informers,
    // Any call would throw: the cache alone answers.
    rest: {} as KubeRest, logger: pino({ level: 'silent' }), inScope: () => true,
    stores: { served: () => false }, events: { emit: () => undefined } as unknown as EventRecorder,
  });
  const out = await none.reconcile('ces', name);
  t.same([out.result, out.reason], ['skipped', 'Deleted']);
});
