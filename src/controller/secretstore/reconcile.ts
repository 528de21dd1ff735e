// SecretStore / ClusterSecretStore readiness: the provider's static spec check, the access
// rules, then the provider's validate() through a cached client. The result is kept per
// store generation (ExternalSecrets using a store that is not Ready do not call it: the
// store is retried with its own backoff) and written to the store's status with
// `capabilities`. A change of readiness or generation re-queues the store's dependents.
import type { Logger } from 'pino';
import type { AnySecretStore, Condition, SecretStoreCapabilities } from '../../api/types.js';
import { EXTERNAL_SECRET_API_VERSION } from '../../api/types.js';
import type { KubeRest } from '../../kube/rest.js';
import { loadProvider, providerNameOf } from '../../providers/registry.js';
import type { Capabilities } from '../../providers/types.js';
import { namespaceScoped, servesControllerClass } from '../../stores/access.js';
import { crossNamespaceRefs } from '../../stores/use.js';
import type { ClientCache } from '../runtime/clients.js';
import { storeId } from '../../stores/id.js';
import type { EventRecorder } from '../runtime/events.js';
import { bounded, readyCondition, withReady } from '../externalsecret/status.js';
import { CLUSTER_SECRET_STORES, resourcePath, SECRET_STORES } from '../../kube/paths.js';

export interface StoreState {
  version: string;
  ready: boolean;
  reason: string;
  message: string;
}

export interface StoreDeps {
  rest: KubeRest;
  clients: ClientCache;
  events: EventRecorder;
  classes: string[];
  logger: Logger;
  /** Called when a store's readiness or version changed (re-queue its ExternalSecrets). */
  onChange(id: string): void;
}

/** The API path of a store (`kind` SecretStore or ClusterSecretStore; `ns` for SecretStores). */
export function storePath(kind: string, ns: string, name: string, subresource?: 'status'): string {
  return kind === 'ClusterSecretStore'
    ? resourcePath(CLUSTER_SECRET_STORES, { name, subresource })
    : resourcePath(SECRET_STORES, { namespace: ns, name, subresource });
}

export function versionOf(store: AnySecretStore): string {
  return `${store.metadata.uid ?? ''}/${store.metadata.generation ?? 0}`;
}

function capabilitiesOf(c: Capabilities): SecretStoreCapabilities {
  return c.read && c.write ? 'ReadWrite' : c.read ? 'ReadOnly' : 'WriteOnly';
}

export class StoreReconciler {
  private readonly states = new Map<string, StoreState>();
  private readonly inflight = new Map<string, Promise<StoreState>>();

  constructor(private readonly deps: StoreDeps) {}

  served(store: AnySecretStore): boolean {
    return servesControllerClass(store, this.deps.classes);
  }

  /** Whether this controller serves class `controller` ('' = unclassed), e.g. a generator's. */
  servesClass(controller: string): boolean {
    return this.deps.classes.includes(controller);
  }

  state(id: string): StoreState | undefined {
    return this.states.get(id);
  }

  /** The store is gone or no longer ours: drop its clients and state. */
  async forget(id: string): Promise<void> {
    const had = this.states.delete(id);
    await this.deps.clients.evict(id);
    if (had) this.deps.onChange(id);
  }

  /** The store's readiness for its current generation, validating it when unknown. */
  ensure(store: AnySecretStore): Promise<StoreState> {
    const id = storeId(store);
    const cur = this.states.get(id);
    if (cur && cur.version === versionOf(store)) return Promise.resolve(cur);
    let p = this.inflight.get(id);
    if (!p) {
      p = this.validate(store).finally(() => this.inflight.delete(id));
      this.inflight.set(id, p);
    }
    return p;
  }

  /** Validates again (store event or retry); returns the state. */
  async revalidate(store: AnySecretStore): Promise<StoreState> {
    const id = storeId(store);
    const cur = this.states.get(id);
    if (cur && cur.version !== versionOf(store)) await this.deps.clients.evict(id);
    if (cur?.ready === false) this.states.delete(id);
    return this.ensure(store);
  }

  private async validate(store: AnySecretStore): Promise<StoreState> {
    const id = storeId(store);
    const version = versionOf(store);
    let caps: SecretStoreCapabilities | undefined;
    let next: StoreState;
    try {
      const name = providerNameOf(store.spec.provider);
      const provider = await loadProvider(name);
      caps = capabilitiesOf(provider.capabilities);
      const problems = provider.validateSpec((store.spec.provider as Record<string, unknown>)[name]);
      if (store.kind === 'SecretStore') problems.push(...crossNamespaceRefs(store.spec.provider, store.metadata.namespace!));
      const refused = this.deps.clients.identityProblem(store);
      if (problems.length) {
        next = { version, ready: false, reason: 'InvalidProviderConfig', message: problems.join('; ') };
      } else if (refused) {
        // Refused before any client exists: validate() would already authenticate.
        next = { version, ready: false, reason: 'InvalidStoreConfiguration', message: refused };
      } else if (store.kind === 'ClusterSecretStore' && namespaceScoped(store.spec.provider)) {
        next = { version, ready: true, reason: 'Valid', message: 'configuration is valid; credentials are read and checked in each namespace that uses the store' };
      } else {
        const client = await this.deps.clients.get(store, store.metadata.namespace ?? '');
        await client.fresh.validate();
        next = { version, ready: true, reason: 'Valid', message: 'store validated' };
      }
    } catch (err) {
      next = { version, ready: false, reason: 'ValidationFailed', message: (err as Error).message };
      await this.deps.clients.evict(id);
    }
    const prev = this.states.get(id);
    this.states.set(id, next);
    if (!prev || prev.ready !== next.ready || prev.version !== next.version) this.deps.onChange(id);
    await this.writeStatus(store, next, caps);
    return next;
  }

  private async writeStatus(store: AnySecretStore, s: StoreState, caps: SecretStoreCapabilities | undefined): Promise<void> {
    const message = bounded(s.message);
    const prev = readyCondition(store.status?.conditions);
    if (prev?.status === (s.ready ? 'True' : 'False') && prev.reason === s.reason && prev.message === message && store.status?.capabilities === caps) return;
    const conditions: Condition[] = withReady(store.status?.conditions, s.ready ? 'True' : 'False', s.reason, message);
    const path = storePath(store.kind ?? 'SecretStore', store.metadata.namespace ?? '', store.metadata.name!, 'status');
    try {
      await this.deps.rest.patch(path, { status: { conditions, ...(caps ? { capabilities: caps } : {}) } });
    } catch (err) {
      this.deps.logger.warn({ store: storeId(store), err: (err as Error).message }, 'store status not written');
    }
    const regarding = { apiVersion: EXTERNAL_SECRET_API_VERSION, kind: store.kind, name: store.metadata.name!, namespace: store.metadata.namespace, uid: store.metadata.uid };
    this.deps.events.emit(regarding, s.ready ? 'Normal' : 'Warning', s.ready ? 'Valid' : s.reason, message);
  }
}
