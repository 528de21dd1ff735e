// Watch-backed caches of what admission reads: ExternalSecrets, SecretStores,
// ClusterSecretStores and Namespaces. Admission only reads these maps. A watch that
// fails is restarted with backoff and a fresh list (a silent stop is the classic bug).
import { CoreV1Api, CustomObjectsApi, makeInformer, type Informer, type KubeConfig, type KubernetesObject, type ObjectCache, type V1Namespace } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { API_GROUP, type ClusterSecretStore, type ExternalSecret, type SecretStore } from '../src/api/types.js';
import type { ObjectLookup } from './resolve.js';

type Cache<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;

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
  informer: Cache<KubernetesObject>;
  synced: boolean;
  failures: number;
  timer?: NodeJS.Timeout;
}

export class WatchCaches implements ObjectLookup {
  private readonly watched: Watched[] = [];
  private stopped = false;
  /** Restarts of failed watches, for /metrics and the relist test. */
  restarts = 0;

  constructor(private readonly kc: KubeConfig, private readonly logger: Logger) {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const core = kc.makeApiClient(CoreV1Api);
    const crd = (plural: string) => () =>
      custom.listClusterCustomObject({ group: API_GROUP, version: 'v1', plural }) as never;
    this.add('externalsecrets', `/apis/${API_GROUP}/v1/externalsecrets`, crd('externalsecrets'));
    this.add('secretstores', `/apis/${API_GROUP}/v1/secretstores`, crd('secretstores'));
    this.add('clustersecretstores', `/apis/${API_GROUP}/v1/clustersecretstores`, crd('clustersecretstores'));
    this.add('namespaces', '/api/v1/namespaces', () => core.listNamespace() as never);
  }

  private add(name: string, path: string, list: () => Promise<never>) {
    // Listed items are slimmed before the informer stores them; watched ones right after
    // (the informer stores the very object it passes to its add/update handlers).
    const slimList = () => list().then((l: { items?: KubernetesObject[] }) => (l.items?.forEach(slim), l) as never);
    const informer = makeInformer<KubernetesObject>(this.kc, path, slimList);
    informer.on('add', slim);
    informer.on('update', slim);
    const w: Watched = { name, informer, synced: false, failures: 0 };
    informer.on('error', (err) => this.restart(w, err));
    informer.on('connect', () => {
      w.failures = 0;
    });
    this.watched.push(w);
  }

  private restart(w: Watched, err: unknown) {
    if (this.stopped) return;
    w.failures++;
    const delay = Math.min(30_000, 500 * 2 ** Math.min(w.failures, 6));
    const msg = (err as { message?: string })?.message ?? String(err);
    this.logger.warn({ cache: w.name, delayMs: delay, err: msg }, 'watch failed; relisting after a delay');
    clearTimeout(w.timer);
    w.timer = setTimeout(() => {
      this.restarts++;
      void this.startOne(w);
    }, delay);
  }

  private async startOne(w: Watched) {
    let failed = false;
    const onError = () => (failed = true);
    w.informer.on('error', onError);
    try {
      await w.informer.start();
    } catch (err) {
      failed = true;
      this.restart(w, err);
    } finally {
      w.informer.off('error', onError);
    }
    if (!failed) w.synced = true;
  }

  /** Starts every watch; resolves once each has listed (or is retrying). */
  async start(): Promise<void> {
    await Promise.all(this.watched.map((w) => this.startOne(w)));
  }

  synced(): boolean {
    return this.watched.every((w) => w.synced);
  }

  status(): Record<string, boolean> {
    return Object.fromEntries(this.watched.map((w) => [w.name, w.synced]));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.watched.map(async (w) => {
      clearTimeout(w.timer);
      await w.informer.stop();
    }));
  }

  private get<T>(name: string, key: string, namespace?: string): T | undefined {
    return this.watched.find((w) => w.name === name)!.informer.get(key, namespace) as T | undefined;
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
