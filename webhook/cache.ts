// Watch-backed caches of what admission reads: ExternalSecrets, SecretStores,
// ClusterSecretStores and Namespaces. Admission only reads these maps. A watch that
// fails is restarted after a short delay with a fresh list (src/kube/informer.ts: a silent
// stop is the classic bug).
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type KubernetesObject, type V1Namespace } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { API_GROUP, type ClusterSecretStore, type ExternalSecret, type SecretStore } from '../src/api/types.js';
import { RestartableInformer } from '../src/kube/informer.js';
import type { ObjectLookup } from './resolve.js';

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** Drops, in place, what admission never reads from a cached object: managedFields, the
 *  last-applied-configuration annotation (a second copy of the object) and status. These
 *  were most of each cached object's size (docs/decisions/0026-webhook-cache-holds-what-admission-reads.md). */
export function slim(obj: KubernetesObject): void {
  const o = obj as KubernetesObject & { status?: unknown };
  delete o.status;
  if (!o.metadata) return;
  delete o.metadata.managedFields;
  if (o.metadata.annotations && LAST_APPLIED in o.metadata.annotations) {
    delete o.metadata.annotations[LAST_APPLIED];
  }
}

interface Watched {
  name: string;
  cache: RestartableInformer<KubernetesObject>;
}

export class WatchCaches implements ObjectLookup {
  private readonly watched: Watched[] = [];

  constructor(private readonly kc: KubeConfig, private readonly logger: Logger) {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const core = kc.makeApiClient(CoreV1Api);
    const crd = (plural: string) => () =>
      custom.listClusterCustomObject({ group: API_GROUP, version: 'v1', plural }) as Promise<{ items?: KubernetesObject[] }>;
    this.add('externalsecrets', `/apis/${API_GROUP}/v1/externalsecrets`, crd('externalsecrets'));
    this.add('secretstores', `/apis/${API_GROUP}/v1/secretstores`, crd('secretstores'));
    this.add('clustersecretstores', `/apis/${API_GROUP}/v1/clustersecretstores`, crd('clustersecretstores'));
    this.add('namespaces', '/api/v1/namespaces', () => core.listNamespace() as Promise<{ items?: KubernetesObject[] }>);
  }

  /** Restarts of failed watches, summed over the caches (for /metrics and the relist test). */
  get restarts(): number {
    return this.watched.reduce((n, w) => n + w.cache.restarts, 0);
  }

  private add(name: string, path: string, list: () => Promise<{ items?: KubernetesObject[] }>) {
    // Listed items are slimmed before the informer stores them; watched ones right after
    // (the informer stores the very object it passes to its add/update handlers).
    const cache = new RestartableInformer<KubernetesObject>(this.kc, path, list, { name, logger: this.logger, onList: slim });
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
