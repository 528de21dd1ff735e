// Watch-backed caches of everything the reconciler reads: ExternalSecrets, SecretStores,
// ClusterSecretStores, Namespaces, and only the Secrets it manages (label-selected, so a
// cluster's other Secrets never enter its memory). A watch that fails is relisted with
// backoff: a controller that silently stops watching is the failure mode to avoid.
import { makeInformer, type Informer, type KubeConfig, type KubernetesObject, type ObjectCache, type V1Namespace, type V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { API_GROUP, API_VERSION_V1ALPHA1, type ClusterExternalSecret, type ClusterPushSecret, type ClusterSecretStore, type ExternalSecret, type PushSecret, type SecretStore } from '../api/types.js';
import type { KubeRest } from '../kube/rest.js';
import { MANAGED_LABEL } from './labels.js';

type Cache<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;

export type Kind = 'externalsecrets' | 'secretstores' | 'clustersecretstores' | 'namespaces' | 'secrets' | 'pushsecrets'
  | 'clusterexternalsecrets' | 'clusterpushsecrets';

export interface Handlers {
  add(kind: Kind, obj: KubernetesObject): void;
  update(kind: Kind, obj: KubernetesObject, old: KubernetesObject | undefined): void;
  delete(kind: Kind, obj: KubernetesObject): void;
}

interface Watched {
  kind: Kind;
  informer: Cache<KubernetesObject>;
  synced: boolean;
  failures: number;
  timer?: NodeJS.Timeout;
  /** The previous version of each object, to tell spec changes from status updates. */
  last: Map<string, KubernetesObject>;
}

const objKey = (o: KubernetesObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

export class Informers {
  private readonly watched = new Map<Kind, Watched>();
  private stopped = false;
  restarts = 0;

  constructor(private readonly kc: KubeConfig, rest: KubeRest, private readonly handlers: Handlers, private readonly logger: Logger) {
    const selector = `${MANAGED_LABEL}=true`;
    const list = (path: string) => () => rest.get(path) as never;
    const crd = (plural: string) => `/apis/${API_GROUP}/v1/${plural}`;
    this.add('externalsecrets', crd('externalsecrets'), list(crd('externalsecrets')));
    this.add('secretstores', crd('secretstores'), list(crd('secretstores')));
    this.add('clustersecretstores', crd('clustersecretstores'), list(crd('clustersecretstores')));
    this.add('namespaces', '/api/v1/namespaces', list('/api/v1/namespaces'));
    const push = `/apis/${API_GROUP}/${API_VERSION_V1ALPHA1}/pushsecrets`;
    this.add('pushsecrets', push, list(push));
    this.add('secrets', '/api/v1/secrets', list(`/api/v1/secrets?labelSelector=${encodeURIComponent(selector)}`), selector);
    // The cluster kinds that provision ExternalSecrets / PushSecrets (src/controller/cluster/).
    this.add('clusterexternalsecrets', crd('clusterexternalsecrets'), list(crd('clusterexternalsecrets')));
    const cps = `/apis/${API_GROUP}/${API_VERSION_V1ALPHA1}/clusterpushsecrets`;
    this.add('clusterpushsecrets', cps, list(cps));
  }

  private add(kind: Kind, path: string, list: () => Promise<never>, labelSelector?: string) {
    // The list result is a plain object: informers need `items` and `metadata.resourceVersion`.
    const informer = makeInformer<KubernetesObject>(this.kc, path, list, labelSelector);
    const w: Watched = { kind, informer, synced: false, failures: 0, last: new Map() };
    informer.on('add', (o) => {
      w.last.set(objKey(o), o);
      this.handlers.add(kind, o);
    });
    informer.on('update', (o) => {
      const old = w.last.get(objKey(o));
      w.last.set(objKey(o), o);
      this.handlers.update(kind, o, old);
    });
    informer.on('delete', (o) => {
      w.last.delete(objKey(o));
      this.handlers.delete(kind, o);
    });
    informer.on('error', (err) => this.restart(w, err));
    informer.on('connect', () => {
      w.failures = 0;
    });
    this.watched.set(kind, w);
  }

  private restart(w: Watched, err: unknown) {
    if (this.stopped) return;
    w.failures++;
    const delay = Math.min(30_000, 500 * 2 ** Math.min(w.failures, 6));
    const msg = (err as { message?: string })?.message ?? String(err);
    this.logger.warn({ watch: w.kind, delayMs: delay, err: msg }, 'watch failed; relisting after a delay');
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

  /** Starts the watches; stores and namespaces list first, so the first ExternalSecret
   *  reconciles find their stores. */
  async start(): Promise<void> {
    // The cluster kinds list before their children: a child whose owner is not in the cache is deleted.
    const first: Kind[] = ['namespaces', 'secretstores', 'clustersecretstores', 'secrets', 'clusterexternalsecrets', 'clusterpushsecrets'];
    await Promise.all(first.map((k) => this.startOne(this.watched.get(k)!)));
    await Promise.all((['externalsecrets', 'pushsecrets'] as const).map((k) => this.startOne(this.watched.get(k)!)));
  }

  synced(): boolean {
    return [...this.watched.values()].every((w) => w.synced);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.watched.values()].map(async (w) => {
      clearTimeout(w.timer);
      await w.informer.stop();
    }));
  }

  private get<T>(kind: Kind, name: string, ns?: string): T | undefined {
    return this.watched.get(kind)!.informer.get(name, ns) as T | undefined;
  }

  externalSecret(ns: string, name: string): ExternalSecret | undefined {
    return this.get<ExternalSecret>('externalsecrets', name, ns);
  }
  externalSecrets(ns?: string): readonly ExternalSecret[] {
    return this.watched.get('externalsecrets')!.informer.list(ns) as unknown as ExternalSecret[];
  }
  secretStore(ns: string, name: string): SecretStore | undefined {
    return this.get<SecretStore>('secretstores', name, ns);
  }
  clusterSecretStore(name: string): ClusterSecretStore | undefined {
    return this.get<ClusterSecretStore>('clustersecretstores', name);
  }
  secretStores(ns: string): readonly SecretStore[] {
    return this.watched.get('secretstores')!.informer.list(ns) as unknown as SecretStore[];
  }
  clusterSecretStores(): readonly ClusterSecretStore[] {
    return this.watched.get('clustersecretstores')!.informer.list() as unknown as ClusterSecretStore[];
  }
  pushSecret(ns: string, name: string): PushSecret | undefined {
    return this.get<PushSecret>('pushsecrets', name, ns);
  }
  pushSecrets(ns?: string): readonly PushSecret[] {
    return this.watched.get('pushsecrets')!.informer.list(ns) as unknown as PushSecret[];
  }
  clusterExternalSecret(name: string): ClusterExternalSecret | undefined {
    return this.get<ClusterExternalSecret>('clusterexternalsecrets', name);
  }
  clusterExternalSecrets(): readonly ClusterExternalSecret[] {
    return this.watched.get('clusterexternalsecrets')!.informer.list() as unknown as ClusterExternalSecret[];
  }
  clusterPushSecret(name: string): ClusterPushSecret | undefined {
    return this.get<ClusterPushSecret>('clusterpushsecrets', name);
  }
  clusterPushSecrets(): readonly ClusterPushSecret[] {
    return this.watched.get('clusterpushsecrets')!.informer.list() as unknown as ClusterPushSecret[];
  }
  namespaces(): readonly V1Namespace[] {
    return this.watched.get('namespaces')!.informer.list() as unknown as V1Namespace[];
  }
  namespace(name: string): V1Namespace | undefined {
    return this.get<V1Namespace>('namespaces', name);
  }
  secret(ns: string, name: string): V1Secret | undefined {
    return this.get<V1Secret>('secrets', name, ns);
  }
}
