// When a deleted PushSecret lets go of entries it could not delete (src/controller/pushsecret/abandon.ts),
// without a cluster: only in a namespace being deleted, and only when that deletion removed what
// the store authenticates with; what is left is counted and named, never valued. The same on
// the real apiserver with its namespace controller: test/e2e/adversarial/controller-namespace-deletion.test.ts.
import t from 'tap';
import pino from 'pino';
import { leftBehind, namespaceLetGo } from '../../../../src/controller/pushsecret/abandon.js';
import type { AnySecretStore, PushSecret } from '../../../../src/api/types.js';
import type { Informers } from '../../../../src/controller/runtime/informers.js';
import type { EventRecorder } from '../../../../src/controller/runtime/events.js';
import { KubeError, type KubeRest } from '../../../../src/kube/rest.js';
import { ProviderError } from '../../../../src/providers/types.js';

const NS = 'team';
const notFound = () => new KubeError(404, 'NotFound', 'not found');

/** A KubeRest whose GETs answer from `objects` (path → object), 404 otherwise; GETs are listed. */
function rest(objects: Record<string, unknown>) {
  const gets: string[] = [];
  const r = { get: (path: string) => {
    gets.push(path);
    return Object.hasOwn(objects, path) ? Promise.resolve(objects[path]) : Promise.reject(notFound());
  } } as unknown as KubeRest;
  return { r, gets };
}
const informers = (ns?: object) => ({ namespace: () => ns }) as unknown as Informers;
const terminating = { metadata: { name: NS, deletionTimestamp: '2026-12-01T00:00:00Z' }, status: { phase: 'Terminating' } };

const k8sStore = (kind: 'SecretStore' | 'ClusterSecretStore', namespace?: string) => ({
  apiVersion: 'external-secrets.io/v1', kind, metadata: { name: 'nsk8s', ...(kind === 'SecretStore' ? { namespace: NS } : {}) },
  spec: { provider: { kubernetes: { remoteNamespace: 'remote', server: { url: 'https://127.0.0.1:6443' }, auth: { token: { bearerToken: { name: 'nsk8s-token', key: 'token', ...(namespace ? { namespace } : {}) } } } } } },
}) as unknown as AnySecretStore;
const vaultSaStore = { apiVersion: 'external-secrets.io/v1', kind: 'ClusterSecretStore', metadata: { name: 'bao' },
  spec: { provider: { vault: { server: 'https://bao.example:8200', auth: { kubernetes: { mountPath: 'kubernetes', role: 'r', serviceAccountRef: { name: 'pusher' } } } } } } } as unknown as AnySecretStore;
const authFailed = new ProviderError('AuthFailed', 'ClusterSecretStore/nsk8s', 'cannot read the store\'s credential');
const secretPath = `/api/v1/namespaces/${NS}/secrets/nsk8s-token`;

t.test('a namespace that is not being deleted: never let go (the finalizer stays and retries)', async (t) => {
  const { r, gets } = rest({ [`/api/v1/namespaces/${NS}`]: { metadata: { name: NS } } });
  t.equal(await namespaceLetGo({ informers: informers({ metadata: { name: NS } }), rest: r }, NS)(k8sStore('ClusterSecretStore'), [authFailed]), false);
  t.same(gets, [`/api/v1/namespaces/${NS}`], 'the API is asked when the cache does not say Terminating; no credential read');
});

t.test('a Terminating namespace whose deletion removed the store\'s credential Secret: let go', async (t) => {
  for (const kind of ['ClusterSecretStore', 'SecretStore'] as const) {
    const { r } = rest({});
    t.equal(await namespaceLetGo({ informers: informers(terminating), rest: r }, NS)(k8sStore(kind), [authFailed]), true, kind);
  }
  // The cache lags: the API says Terminating.
  const { r } = rest({ [`/api/v1/namespaces/${NS}`]: terminating });
  t.equal(await namespaceLetGo({ informers: informers(undefined), rest: r }, NS)(k8sStore('ClusterSecretStore'), []), true, 'from the API');
  // Being deleted counts as gone.
  const going = rest({ [secretPath]: { metadata: { name: 'nsk8s-token', deletionTimestamp: 'x' } } });
  t.equal(await namespaceLetGo({ informers: informers(terminating), rest: going.r }, NS)(k8sStore('ClusterSecretStore'), []), true, 'a credential being deleted');
});

t.test('a Terminating namespace whose store can still authenticate, or authenticates elsewhere: keep retrying', async (t) => {
  const there = rest({ [secretPath]: { metadata: { name: 'nsk8s-token' } } });
  t.equal(await namespaceLetGo({ informers: informers(terminating), rest: there.r }, NS)(k8sStore('ClusterSecretStore'), [new ProviderError('Unknown', 'x', 'connection refused')]), false, 'the credential is there: the store is down');
  const elsewhere = rest({});
  t.equal(await namespaceLetGo({ informers: informers(terminating), rest: elsewhere.r }, NS)(k8sStore('ClusterSecretStore', 'ops'), [authFailed]), false, 'a credential of another namespace');
  t.same(elsewhere.gets, [], 'which is not read');
});

t.test('a ServiceAccount of the Terminating namespace: let go when the login failed for it', async (t) => {
  const { r } = rest({});
  const letGo = namespaceLetGo({ informers: informers(terminating), rest: r }, NS);
  t.equal(await letGo(vaultSaStore, [new ProviderError('AuthFailed', 'ClusterSecretStore/bao', 'cannot request a token')]), true);
  t.equal(await letGo(vaultSaStore, [new ProviderError('Unknown', 'ClusterSecretStore/bao', 'timeout')]), false, 'a store that is down: retried');
});

t.test('leftBehind counts and names each entry, on the PushSecret and the ClusterSecretStore, never a value', async (t) => {
  const events: { kind: string; ns?: string; type: string; reason: string; message: string }[] = [];
  const counted: string[] = [];
  const lines: string[] = [];
  const logger = pino({ level: 'warn' }, { write: (s: string) => lines.push(s) });
  const d = {
    events: { emit: (o: { kind: string; namespace?: string }, type: string, reason: string, message: string) => events.push({ kind: o.kind, ns: o.namespace, type, reason, message }) } as unknown as EventRecorder,
    metrics: { push: () => undefined, deleted: () => undefined, left: (store: string, reason: string) => counted.push(`${store} ${reason}`) },
    logger,
  };
  const ps = { metadata: { namespace: NS, name: 'db', uid: 'u' }, spec: {} } as unknown as PushSecret;
  const data = (remoteKey: string, property?: string) => ({ match: { secretKey: 'password', remoteRef: { remoteKey, ...(property ? { property } : {}) } } });
  leftBehind(d, ps, { key: 'ClusterSecretStore/nsk8s', store: k8sStore('ClusterSecretStore') }, { 'db/password': data('db', 'password'), other: data('other') }, 'NamespaceDeleted', 'the deletion of namespace "team" removed what ClusterSecretStore "nsk8s" authenticates with');
  t.same(counted, ['ClusterSecretStore/nsk8s NamespaceDeleted', 'ClusterSecretStore/nsk8s NamespaceDeleted'], 'one count per entry, by store id');
  t.same(events.map((e) => `${e.kind} ${e.ns ?? ''} ${e.type} ${e.reason}`), ['PushSecret team Warning DeleteSkipped', 'ClusterSecretStore  Warning DeleteSkipped']);
  t.equal(events[0]!.message, 'the deletion of namespace "team" removed what ClusterSecretStore "nsk8s" authenticates with; 2 remote entries of PushSecret "team/db" left in ClusterSecretStore "nsk8s", not deleted: "db/password", "other"');
  t.equal(lines.length, 2, 'a log line per entry');
  t.match(JSON.parse(lines[0]!), { pushSecret: 'team/db', store: 'ClusterSecretStore/nsk8s', remoteKey: 'db', property: 'password', reason: 'NamespaceDeleted', msg: 'remote entry left in the store, not deleted' });

  // A store that is gone is named by its key; an Event lists at most 20 keys.
  events.length = 0;
  const many = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`k${String(i).padStart(2, '0')}`, data(`k${i}`)]));
  leftBehind(d, ps, { key: 'SecretStore/gone', store: undefined }, many, 'StoreGone', 'SecretStore/gone no longer exists or is served by another controller');
  t.equal(events.length, 1, 'no store to tell: the PushSecret only');
  t.match(events[0]!.message, /25 remote entries of PushSecret "team\/db" left in SecretStore\/gone, not deleted: "k00", .*"k19" and 5 more$/);
});
