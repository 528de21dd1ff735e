// Watch-backed caches of everything the reconciler reads: ExternalSecrets, SecretStores,
// ClusterSecretStores, Namespaces, and only the Secrets it manages (label-selected, so a
// cluster's other Secrets never enter its memory). A watch that fails is relisted after a
// short delay (src/kube/informer.ts): a controller that silently stops watching is the
// failure mode to avoid.
import type { KubeConfig, KubernetesObject, V1Namespace, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ClusterSecretStore, ExternalSecret, PushSecret, SecretStore } from '../api/types.js';
import type { ClusterExternalSecret, ClusterPushSecret } from '../api/cluster-types.js';
import { RestartableInformer } from '../kube/informer.js';
import { pagedList, trimObject } from '../kube/list.js';
import { CLUSTER_EXTERNAL_SECRETS, CLUSTER_PUSH_SECRETS, CLUSTER_SECRET_STORES, EXTERNAL_SECRETS, NAMESPACES, PUSH_SECRETS, resourcePath, SECRET_STORES, SECRETS, type Resource } from '../kube/paths.js';
import type { KubeRest } from '../kube/rest.js';
import { DATA_HASH_ANNOTATION, EXTERNAL_SECRET_ANNOTATION, MANAGED_LABEL } from './labels.js';
import { editedByHand } from './secret.js';

export type Kind = 'externalsecrets' | 'secretstores' | 'clustersecretstores' | 'namespaces' | 'secrets' | 'pushsecrets'
  | 'clusterexternalsecrets' | 'clusterpushsecrets';

export interface Handlers {
  add(kind: Kind, obj: KubernetesObject): void;
  update(kind: Kind, obj: KubernetesObject, old: KubernetesObject | undefined): void;
  delete(kind: Kind, obj: KubernetesObject): void;
}

interface Watched {
  kind: Kind;
  cache: RestartableInformer<KubernetesObject>;
  /** The previous version of each object, to tell spec changes from status updates. */
  last: Map<string, KubernetesObject>;
}

const objKey = (o: KubernetesObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;


/** Secrets in the cache whose data was dropped: not as the controller wrote them. */
const unverified = new WeakSet<object>();

/** Whether a Secret carrying the managed label is one the controller wrote and nobody changed
 *  since: it names its ExternalSecret and its content matches ESI's data hash. Anyone who may
 *  write Secrets can put the label on any Secret; only these keep their data in the cache, so
 *  the cache holds what the controller wrote, not whatever a tenant labels (SECURITY.md, "The
 *  controller"). The others are looked up through the API when a reconcile needs them. */
function asWritten(s: V1Secret): boolean {
  const a = s.metadata?.annotations ?? {};
  return !!a[EXTERNAL_SECRET_ANNOTATION] && !!a[DATA_HASH_ANNOTATION] && !editedByHand(s);
}

/** Drops what the reconciler never reads from a cached object: managedFields, kubectl's copy
 *  of the whole applied manifest (status.ts already ignores it) except on Secrets, which are
 *  written back whole (Merge) and must keep it, and the data of Secrets not as the controller
 *  wrote them. Returns `obj`. */
export function slim<T extends KubernetesObject>(kind: Kind, obj: T): T {
  const mine = kind !== 'secrets' || asWritten(obj as V1Secret);
  trimObject(obj, { keepLastApplied: kind === 'secrets' && mine });
  if (!mine) {
    delete (obj as V1Secret).data;
    delete (obj as V1Secret).stringData;
    unverified.add(obj);
  }
  return obj;
}

export class Informers {
  private readonly watched = new Map<Kind, Watched>();

  constructor(private readonly kc: KubeConfig, rest: KubeRest, private readonly handlers: Handlers, private readonly logger: Logger) {
    const selector = `${MANAGED_LABEL}=true`;
    const list = (kind: Kind, path: string) => () => pagedList(rest, path, (o) => slim(kind, o)) as never;
    const all = (kind: Kind, r: Resource) => this.add(kind, resourcePath(r), list(kind, resourcePath(r)));
    all('externalsecrets', EXTERNAL_SECRETS);
    all('secretstores', SECRET_STORES);
    all('clustersecretstores', CLUSTER_SECRET_STORES);
    all('namespaces', NAMESPACES);
    all('pushsecrets', PUSH_SECRETS);
    this.add('secrets', resourcePath(SECRETS), list('secrets', resourcePath(SECRETS, { query: { labelSelector: selector } })), selector);
    // The cluster kinds that provision ExternalSecrets / PushSecrets (src/controller/cluster/).
    all('clusterexternalsecrets', CLUSTER_EXTERNAL_SECRETS);
    all('clusterpushsecrets', CLUSTER_PUSH_SECRETS);
  }

  /** Restarts of failed watches, summed over the caches. */
  get restarts(): number {
    return [...this.watched.values()].reduce((n, w) => n + w.cache.restarts, 0);
  }

  private add(kind: Kind, path: string, list: () => Promise<{ items?: KubernetesObject[] }>, labelSelector?: string) {
    const cache = new RestartableInformer<KubernetesObject>(this.kc, path, list, { name: kind, logger: this.logger, labelSelector });
    const w: Watched = { kind, cache, last: new Map() };
    const informer = cache.informer;
    informer.on('add', (o) => {
      slim(kind, o);
      w.last.set(objKey(o), o);
      this.handlers.add(kind, o);
    });
    informer.on('update', (o) => {
      slim(kind, o);
      const old = w.last.get(objKey(o));
      w.last.set(objKey(o), o);
      this.handlers.update(kind, o, old);
    });
    informer.on('delete', (o) => {
      w.last.delete(objKey(o));
      this.handlers.delete(kind, o);
    });
    this.watched.set(kind, w);
  }

  /** Starts the watches; stores and namespaces list first, so the first ExternalSecret
   *  reconciles find their stores. */
  async start(): Promise<void> {
    // The cluster kinds list before their children: a child whose owner is not in the cache is deleted.
    const first: Kind[] = ['namespaces', 'secretstores', 'clustersecretstores', 'secrets', 'clusterexternalsecrets', 'clusterpushsecrets'];
    await Promise.all(first.map((k) => this.watched.get(k)!.cache.start()));
    await Promise.all((['externalsecrets', 'pushsecrets'] as const).map((k) => this.watched.get(k)!.cache.start()));
  }

  synced(): boolean {
    return [...this.watched.values()].every((w) => w.cache.synced);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.watched.values()].map((w) => w.cache.stop()));
  }

  private get<T>(kind: Kind, name: string, ns?: string): T | undefined {
    return this.watched.get(kind)!.cache.informer.get(name, ns) as T | undefined;
  }

  externalSecret(ns: string, name: string): ExternalSecret | undefined {
    return this.get<ExternalSecret>('externalsecrets', name, ns);
  }
  externalSecrets(ns?: string): readonly ExternalSecret[] {
    return this.watched.get('externalsecrets')!.cache.informer.list(ns) as unknown as ExternalSecret[];
  }
  secretStore(ns: string, name: string): SecretStore | undefined {
    return this.get<SecretStore>('secretstores', name, ns);
  }
  clusterSecretStore(name: string): ClusterSecretStore | undefined {
    return this.get<ClusterSecretStore>('clustersecretstores', name);
  }
  secretStores(ns: string): readonly SecretStore[] {
    return this.watched.get('secretstores')!.cache.informer.list(ns) as unknown as SecretStore[];
  }
  clusterSecretStores(): readonly ClusterSecretStore[] {
    return this.watched.get('clustersecretstores')!.cache.informer.list() as unknown as ClusterSecretStore[];
  }
  pushSecret(ns: string, name: string): PushSecret | undefined {
    return this.get<PushSecret>('pushsecrets', name, ns);
  }
  pushSecrets(ns?: string): readonly PushSecret[] {
    return this.watched.get('pushsecrets')!.cache.informer.list(ns) as unknown as PushSecret[];
  }
  clusterExternalSecret(name: string): ClusterExternalSecret | undefined {
    return this.get<ClusterExternalSecret>('clusterexternalsecrets', name);
  }
  clusterExternalSecrets(): readonly ClusterExternalSecret[] {
    return this.watched.get('clusterexternalsecrets')!.cache.informer.list() as unknown as ClusterExternalSecret[];
  }
  clusterPushSecret(name: string): ClusterPushSecret | undefined {
    return this.get<ClusterPushSecret>('clusterpushsecrets', name);
  }
  clusterPushSecrets(): readonly ClusterPushSecret[] {
    return this.watched.get('clusterpushsecrets')!.cache.informer.list() as unknown as ClusterPushSecret[];
  }
  namespaces(): readonly V1Namespace[] {
    return this.watched.get('namespaces')!.cache.informer.list() as unknown as V1Namespace[];
  }
  namespace(name: string): V1Namespace | undefined {
    return this.get<V1Namespace>('namespaces', name);
  }
  /** A managed Secret as the controller wrote it; undefined when absent or when the cache
   *  holds only its metadata (see asWritten): the caller then reads it from the API. */
  secret(ns: string, name: string): V1Secret | undefined {
    const s = this.get<V1Secret>('secrets', name, ns);
    return s && !unverified.has(s) ? s : undefined;
  }
}
