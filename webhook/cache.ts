// Watch-backed caches of what admission reads: ExternalSecrets, SecretStores,
// ClusterSecretStores and Namespaces. Admission only reads these maps. A watch that
// fails is restarted after a short delay with a fresh list (src/kube/informer.ts: a silent
// stop is the classic bug).
import type { KubeConfig, KubernetesObject, V1Namespace } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { type ClusterSecretStore, type ExternalSecret, type SecretStore } from '../src/api/types.js';
import { RestartableInformer } from '../src/kube/informer.js';
import { pagedList, trimObject } from '../src/kube/list.js';
import { CLUSTER_SECRET_STORES, EXTERNAL_SECRETS, NAMESPACES, resourcePath, SECRET_STORES } from '../src/kube/paths.js';
import { KubeRest } from '../src/kube/rest.js';
import type { ObjectLookup } from './resolve.js';

/** Drops, in place, what admission never reads from a cached object: managedFields, the
 *  last-applied-configuration annotation (a second copy of the object) and status. These
 *  were most of each cached object's size (two thirds in the benchmark cluster). */
export function slim(obj: KubernetesObject): KubernetesObject {
  return trimObject(obj, { status: true });
}

interface Watched {
  name: string;
  cache: RestartableInformer<KubernetesObject>;
}

export class WatchCaches implements ObjectLookup {
  private readonly watched: Watched[] = [];
  private readonly rest: KubeRest;

  constructor(private readonly kc: KubeConfig, private readonly logger: Logger) {
    // Lists as plain JSON through KubeRest: the generated API clients would deserialize into
    // model classes the cache does not need (and pull every model into the webhook's bundle).
    this.rest = new KubeRest(kc);
    for (const r of [EXTERNAL_SECRETS, SECRET_STORES, CLUSTER_SECRET_STORES, NAMESPACES]) this.add(r.plural, resourcePath(r));
  }

  /** Restarts of failed watches, summed over the caches (for /metrics and the relist test). */
  get restarts(): number {
    return this.watched.reduce((n, w) => n + w.cache.restarts, 0);
  }

  private add(name: string, path: string) {
    // Listed items are slimmed page by page before the informer stores them; watched ones
    // right after (the informer stores the very object it passes to its add/update handlers).
    const list = () => pagedList(this.rest, path, slim);
    const cache = new RestartableInformer<KubernetesObject>(this.kc, path, list, { name, logger: this.logger });
    cache.informer.on('add', slim);
    cache.informer.on('update', slim);
    this.watched.push({ name, cache });
  }

  /** Starts every watch; resolves once each has listed (or is retrying). */
  async start(): Promise<void> {
    await Promise.all(this.watched.map((w) => w.cache.start()));
  }

  synced(): boolean {
    return this.watched.every((w) => w.cache.synced);
  }

  status(): Record<string, boolean> {
    return Object.fromEntries(this.watched.map((w) => [w.name, w.cache.synced]));
  }

  async stop(): Promise<void> {
    await Promise.all(this.watched.map((w) => w.cache.stop()));
    this.rest.close();
  }

  private get<T>(name: string, key: string, namespace?: string): T | undefined {
    return this.watched.find((w) => w.name === name)!.cache.informer.get(key, namespace) as T | undefined;
  }

  externalSecret(namespace: string, name: string) {
    return this.get<ExternalSecret>('externalsecrets', name, namespace);
  }
  secretStore(namespace: string, name: string) {
    return this.get<SecretStore>('secretstores', name, namespace);
  }
  clusterSecretStore(name: string) {
    return this.get<ClusterSecretStore>('clustersecretstores', name);
  }
  namespace(name: string) {
    return this.get<V1Namespace>('namespaces', name);
  }
}
