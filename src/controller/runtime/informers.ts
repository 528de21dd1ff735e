// Watch-backed caches of everything the reconciler reads: ExternalSecrets, SecretStores,
// ClusterSecretStores, Namespaces, and only the Secrets it manages (label-selected, so a
// cluster's other Secrets never enter its memory). A watch that fails is relisted after a
// short delay (src/kube/informer.ts): a controller that silently stops watching is the
// failure mode to avoid. In scoped mode (--watch-namespaces) the namespaced kinds
// are watched in each listed namespace only, with one cache per namespace, and the cluster
// kinds and Namespaces not at all: Roles in those namespaces are then all it needs. Pods
// only with the inject label, slimmed to what src/controller/externalsecret/pod-agents.ts reads.
import type { KubeConfig, KubernetesObject, V1Namespace, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ClusterSecretStore, ExternalSecret, GeneratorState, PushSecret, SecretStore } from '../../api/types.js';
import type { ClusterExternalSecret, ClusterPushSecret } from '../../api/cluster-types.js';
import { RestartableInformer } from '../../kube/informer.js';
import { pagedList, trimObject } from '../../kube/list.js';
import { CLUSTER_EXTERNAL_SECRETS, CLUSTER_PUSH_SECRETS, CLUSTER_SECRET_STORES, EXTERNAL_SECRETS, GENERATOR_STATES, NAMESPACES, PODS, PUSH_SECRETS, resourcePath, SECRET_STORES, SECRETS, type Resource } from '../../kube/paths.js';
import type { KubeRest } from '../../kube/rest.js';
import { receiveSecret, trusted } from './cached-secret.js';
import { MANAGED_LABEL } from './labels.js';
import { AGENT_CONTAINER, AGENT_INIT_CONTAINER, INJECT_LABEL, PREFIX } from '../../pod-contract/annotations.js';

export type Kind = 'externalsecrets' | 'secretstores' | 'clustersecretstores' | 'namespaces' | 'secrets' | 'pushsecrets'
  | 'clusterexternalsecrets' | 'clusterpushsecrets' | 'pods' | 'generatorstates';

export interface Handlers {
  add(kind: Kind, obj: KubernetesObject): void;
  update(kind: Kind, obj: KubernetesObject, old: KubernetesObject | undefined): void;
  delete(kind: Kind, obj: KubernetesObject): void;
}

interface Watched {
  kind: Kind;
  /** By namespace: '' holds the one cluster-wide cache; scoped mode has one per namespace. */
  caches: Map<string, RestartableInformer<KubernetesObject>>;
  /** The previous version of each object, to tell spec changes from status updates. */
  last: Map<string, KubernetesObject>;
}

const objKey = (o: KubernetesObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;


/** Drops what the reconciler never reads from a cached object: managedFields, kubectl's copy
 *  of the whole applied manifest (../externalsecret/status.ts already ignores it) except on
 *  Secrets as the controller wrote them, which are written back whole and must keep it, and
 *  the data of Secrets (./cached-secret.ts says which keep it). Returns `obj`. */
export function slim<T extends KubernetesObject>(kind: Kind, obj: T): T {
  if (kind === 'pods') return slimPod(obj as V1Pod) as T;
  const mine = kind === 'secrets' && receiveSecret(obj as V1Secret);
  return trimObject(obj, { keepLastApplied: mine });
}

/** A pod as src/controller/externalsecret/pod-agents.ts reads it: its esi.dev/ annotations and its agent
 *  containers' statuses; no spec, no other container (a pod's spec can be large). */
function slimPod(pod: V1Pod): V1Pod {
  trimObject(pod);
  const meta = pod.metadata ?? {};
  if (meta.annotations) meta.annotations = Object.fromEntries(Object.entries(meta.annotations).filter(([k]) => k.startsWith(PREFIX)));
  delete pod.spec;
  const agent = (s: { name: string }) => s.name === AGENT_CONTAINER || s.name === AGENT_INIT_CONTAINER;
  const st = pod.status;
  pod.status = st ? { phase: st.phase, initContainerStatuses: st.initContainerStatuses?.filter(agent), containerStatuses: st.containerStatuses?.filter(agent) } : undefined;
  return pod;
}

export class Informers {
  private readonly watched = new Map<Kind, Watched>();

  private readonly logger: Logger;
  /** False in scoped mode: the cluster kinds are neither watched nor served. */
  readonly clusterKinds: boolean;

  /** `o.namespaces`: watch only these (scoped mode); every namespace and the cluster kinds when unset. */
  /** `o.generatorStates`: the label selector of the GeneratorStates this controller created
   *  (src/controller/generatorstate/state.ts); not watched when unset. */
  constructor(private readonly kc: KubeConfig, rest: KubeRest, private readonly handlers: Handlers, o: { logger: Logger; namespaces?: readonly string[]; generatorStates?: string }) {
    this.logger = o.logger;
    const { namespaces } = o;
    this.clusterKinds = !namespaces;
    const selector = `${MANAGED_LABEL}=true`;
    const list = (kind: Kind, path: string) => () => pagedList(rest, path, (o) => slim(kind, o)) as never;
    const watch = (kind: Kind, r: Resource, labelSelector?: string) => {
      const query = labelSelector ? { labelSelector } : undefined;
      for (const namespace of namespaces ?? [undefined]) {
        const path = resourcePath(r, { namespace });
        this.add(kind, { namespace: namespace ?? '', path, list: list(kind, resourcePath(r, { namespace, query })), labelSelector });
      }
    };
    watch('externalsecrets', EXTERNAL_SECRETS);
    watch('secretstores', SECRET_STORES);
    watch('pushsecrets', PUSH_SECRETS);
    watch('secrets', SECRETS, selector);
    // ExternalSecrets served by the webhook get their status from these (src/controller/externalsecret/pod-agents.ts).
    watch('pods', PODS, `${INJECT_LABEL}=true`);
    if (o.generatorStates) watch('generatorstates', GENERATOR_STATES, o.generatorStates);
    if (namespaces) return;
    const all = (kind: Kind, r: Resource) => this.add(kind, { namespace: '', path: resourcePath(r), list: list(kind, resourcePath(r)) });
    all('clustersecretstores', CLUSTER_SECRET_STORES);
    all('namespaces', NAMESPACES);
    // The cluster kinds that provision ExternalSecrets / PushSecrets (src/controller/cluster/).
    all('clusterexternalsecrets', CLUSTER_EXTERNAL_SECRETS);
    all('clusterpushsecrets', CLUSTER_PUSH_SECRETS);
  }

  /** Restarts of failed watches, summed over the caches. */
  get restarts(): number {
    return this.caches().reduce((n, c) => n + c.restarts, 0);
  }

  private caches(kinds?: readonly Kind[]): RestartableInformer<KubernetesObject>[] {
    return [...this.watched.values()].filter((w) => !kinds || kinds.includes(w.kind)).flatMap((w) => [...w.caches.values()]);
  }

  private add(kind: Kind, c: { namespace: string; path: string; list: () => Promise<{ items?: KubernetesObject[] }>; labelSelector?: string }) {
    const { namespace, path, list, labelSelector } = c;
    const name = namespace ? `${kind}/${namespace}` : kind;
    const cache = new RestartableInformer<KubernetesObject>(this.kc, path, list, { name, logger: this.logger, labelSelector });
    let w = this.watched.get(kind);
    if (!w) {
      w = { kind, caches: new Map(), last: new Map() };
      this.watched.set(kind, w);
    }
    const { last } = w;
    w.caches.set(namespace, cache);
    const informer = cache.informer;
    informer.on('add', (o) => {
      slim(kind, o);
      last.set(objKey(o), o);
      this.handlers.add(kind, o);
    });
    informer.on('update', (o) => {
      slim(kind, o);
      const old = last.get(objKey(o));
      last.set(objKey(o), o);
      this.handlers.update(kind, o, old);
    });
    informer.on('delete', (o) => {
      last.delete(objKey(o));
      this.handlers.delete(kind, o);
    });
  }

  /** Starts the watches; stores and namespaces list first, so the first ExternalSecret
   *  reconciles find their stores. */
  async start(): Promise<void> {
    // The cluster kinds list before their children: a child whose owner is not in the cache is deleted.
    const first: Kind[] = ['namespaces', 'secretstores', 'clustersecretstores', 'secrets', 'clusterexternalsecrets', 'clusterpushsecrets'];
    await Promise.all(this.caches(first).map((c) => c.start()));
    await Promise.all(this.caches(['externalsecrets', 'pushsecrets', 'pods', 'generatorstates']).map((c) => c.start()));
  }

  /** GeneratorStates are left out: their garbage collection is background work that waits
   *  for its watch, and nothing a sync reads comes from it. */
  synced(): boolean {
    return [...this.watched.values()].filter((w) => w.kind !== 'generatorstates').every((w) => [...w.caches.values()].every((c) => c.synced));
  }

  async stop(): Promise<void> {
    await Promise.all(this.caches().map((c) => c.stop()));
  }

  /** The cache holding namespace `ns` of `kind`: the cluster-wide one, or that namespace's
   *  (none for a namespace or a kind scoped mode does not watch). */
  private cacheOf(kind: Kind, ns = ''): RestartableInformer<KubernetesObject> | undefined {
    const caches = this.watched.get(kind)?.caches;
    return caches?.get('') ?? caches?.get(ns);
  }

  private get<T>(kind: Kind, name: string, ns?: string): T | undefined {
    return this.cacheOf(kind, ns)?.informer.get(name, ns) as T | undefined;
  }

  /** Every cached object of `kind`, of namespace `ns` when given. */
  private list<T>(kind: Kind, ns?: string): readonly T[] {
    const caches = this.watched.get(kind)?.caches;
    if (!caches) return [];
    if (caches.has('') || ns !== undefined) return (this.cacheOf(kind, ns)?.informer.list(ns) ?? []) as unknown as T[];
    return [...caches.values()].flatMap((c) => c.informer.list()) as unknown as T[];
  }

  externalSecret(ns: string, name: string): ExternalSecret | undefined {
    return this.get<ExternalSecret>('externalsecrets', name, ns);
  }
  externalSecrets(ns?: string): readonly ExternalSecret[] {
    return this.list<ExternalSecret>('externalsecrets', ns);
  }
  secretStore(ns: string, name: string): SecretStore | undefined {
    return this.get<SecretStore>('secretstores', name, ns);
  }
  clusterSecretStore(name: string): ClusterSecretStore | undefined {
    return this.get<ClusterSecretStore>('clustersecretstores', name);
  }
  secretStores(ns: string): readonly SecretStore[] {
    return this.list<SecretStore>('secretstores', ns);
  }
  clusterSecretStores(): readonly ClusterSecretStore[] {
    return this.list<ClusterSecretStore>('clustersecretstores');
  }
  pushSecret(ns: string, name: string): PushSecret | undefined {
    return this.get<PushSecret>('pushsecrets', name, ns);
  }
  pushSecrets(ns?: string): readonly PushSecret[] {
    return this.list<PushSecret>('pushsecrets', ns);
  }
  clusterExternalSecret(name: string): ClusterExternalSecret | undefined {
    return this.get<ClusterExternalSecret>('clusterexternalsecrets', name);
  }
  clusterExternalSecrets(): readonly ClusterExternalSecret[] {
    return this.list<ClusterExternalSecret>('clusterexternalsecrets');
  }
  clusterPushSecret(name: string): ClusterPushSecret | undefined {
    return this.get<ClusterPushSecret>('clusterpushsecrets', name);
  }
  clusterPushSecrets(): readonly ClusterPushSecret[] {
    return this.list<ClusterPushSecret>('clusterpushsecrets');
  }
  generatorState(ns: string, name: string): GeneratorState | undefined {
    return this.get<GeneratorState>('generatorstates', name, ns);
  }
  /** This controller's GeneratorStates, of namespace `ns` when given (the bounds count them). */
  generatorStates(ns?: string): readonly GeneratorState[] {
    return this.list<GeneratorState>('generatorstates', ns);
  }
  /** Whether every GeneratorState cache has listed (not part of synced(): see there). */
  generatorStatesSynced(): boolean {
    return [...(this.watched.get('generatorstates')?.caches.values() ?? [])].every((c) => c.synced);
  }
  namespaces(): readonly V1Namespace[] {
    return this.list<V1Namespace>('namespaces');
  }
  namespace(name: string): V1Namespace | undefined {
    return this.get<V1Namespace>('namespaces', name);
  }
  /** A managed Secret as the controller wrote it, without its data unless it is a Merge
   *  target (./cached-secret.ts); undefined when absent or not as written: the caller then
   *  reads it from the API. */
  secret(ns: string, name: string): V1Secret | undefined {
    return trusted(this.get<V1Secret>('secrets', name, ns));
  }
}
