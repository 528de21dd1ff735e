// The reconciler assembled: informers feed the work queue (status-only updates are
// ignored: only generation, label and annotation changes count), the timer heap feeds
// refreshes and retries, workers run store and ExternalSecret reconciles. Reconcilers return
// when to run again; the queue alone retries and schedules (./runtime/queue.ts; keys: ./runtime/keys.ts).
import type { EgressAllowList } from '../egress/policy.js';
import type { KubeConfig, KubernetesObject, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { AnySecretStore } from '../api/types.js';
import type { KubeRest } from '../kube/rest.js';
import { TemplateEngine } from '../templating/index.js';
import { PooledRenderer } from '../templating/pool/index.js';
import { ClientCache } from './runtime/clients.js';
import { CLUSTER_EXTERNAL_SECRET, CLUSTER_PUSH_SECRET, ownerName } from './cluster/kinds.js';
import { ClusterReconciler } from './cluster/reconcile.js';
import { EventRecorder } from './runtime/events.js';
import { Informers, slim, type Kind } from './runtime/informers.js';
import { handEdited } from './runtime/cached-secret.js';
import { EXTERNAL_SECRET_ANNOTATION } from './runtime/labels.js';
import { recordExternalSecret, type ControllerMetrics } from './runtime/metrics.js';
import { keyOf, queueKey, type QueueKey } from './runtime/keys.js';
import { WorkQueue, type Requeue } from './runtime/queue.js';
import { PushRecords } from './pushsecret/record.js';
import { PushSecretReconciler } from './pushsecret/reconcile.js';
import { pushSecretChanged } from './pushsecret/spec.js';
import { ExternalSecretReconciler, readyOf } from './externalsecret/reconcile.js';
import { PodAgents } from './externalsecret/pod-agents.js';
import { DEFAULT_RESTART_MIN_INTERVAL_MS, Restarter } from './restart/restarter.js';
import { Schedule } from './runtime/schedule.js';
import { StoreReconciler } from './secretstore/reconcile.js';
import { Generators } from './generatorstate/generators.js';
import { DEFAULT_GC_GRACE_MS, GeneratorStates, STATE_CONTROLLER_LABEL, stateLedger, stateNeedsWork } from './generatorstate/state.js';
import { DEFAULT_MAX_GENERATOR_STATES, type StateLedger } from './generatorstate/limits.js';
import { readyCondition } from './externalsecret/status.js';
import type { ExternalSecret, GeneratorState } from '../api/types.js';
import { storeIdOf } from '../stores/id.js';
import { fleetParts, type FleetParts, type FleetSettings } from './fleet/wire.js';
import { servesControllerClass } from '../stores/access.js';

export interface ControllerOptions {
  kc: KubeConfig;
  rest: KubeRest;
  logger: Logger;
  metrics: ControllerMetrics;
  /** Store classes served ('' = unclassed stores). */
  classes: string[];
  workers: number;
  /** Coalescing window of identical remote reads, ms; refresh jitter is at most half of it. */
  windowMs: number;
  storeQps: number;
  storeBurst: number;
  providerTimeoutMs: number;
  /** The controller's own namespace (its Lease; Events about cluster objects go to "default"). */
  namespace: string;
  /** Only namespaces carrying these labels (equality) are served; all when unset. */
  namespaceSelector?: Record<string, string>;
  /** Scoped mode (--watch-namespaces): only these namespaces, no cluster kinds. */
  watchNamespaces?: readonly string[];
  /** Threads and per-render deadline of the render pool (src/templating/pool/). */
  renderWorkers: number;
  renderTimeoutMs: number;
  /** Lend the controller's environment identity to ClusterSecretStores (--allow-ambient-identity). */
  allowAmbientIdentity?: boolean;
  /** Namespaces whose SecretStores are lent the controller's identity too. */
  ambientIdentityNamespaces?: readonly string[];
  /** The controller's own ServiceAccount, lent with allowAmbientIdentity. */
  ownServiceAccount?: { namespace: string; name: string };
  /** Let SecretStores reached over HTTP call loopback/private addresses (--allow-private-store-addresses). */
  allowPrivateStoreAddresses?: boolean;
  /** Private ranges and hosts opened to SecretStores and generators (--egress-allow). */
  egressAllow?: EgressAllowList;
  /** At most one restart on change per workload per this interval, ms (--restart-min-interval). */
  restartMinIntervalMs?: number;
  /** Serve `spec.target.manifest` of kind ConfigMap; off: refused with the flag's name. */
  allowConfigMapTargets?: boolean;
  /** How long a superseded generated lease keeps working before it is revoked (--generator-gc-grace-period, ms). */
  generatorGcGraceMs?: number;
  /** At most this many GeneratorStates held by the controller (--max-generator-states). */
  maxGeneratorStates?: number;
  /** Let namespaced VaultDynamicSecrets use resultType Raw and Auth (--allow-generator-raw-results). */
  allowGeneratorRawResults?: boolean;
  /** Read budgets and change notifications of the injected pods (docs/fleet.md). */
  fleet?: FleetSettings;
}

const metaChanged = (a: KubernetesObject | undefined, b: KubernetesObject): boolean =>
  !a ||
  a.metadata?.generation !== b.metadata?.generation ||
  JSON.stringify(a.metadata?.labels ?? {}) !== JSON.stringify(b.metadata?.labels ?? {}) ||
  JSON.stringify(a.metadata?.annotations ?? {}) !== JSON.stringify(b.metadata?.annotations ?? {});

/** Kinds whose changes the fleet's decisions read (src/controller/fleet/). */
const FLEET_INPUTS: ReadonlySet<Kind> = new Set(['externalsecrets', 'secretstores', 'clustersecretstores']);

/** The kinds a cluster object provisions, and that cluster object's kind. */
const OWNER_KINDS = { externalsecrets: CLUSTER_EXTERNAL_SECRET, pushsecrets: CLUSTER_PUSH_SECRET } as const;

export class Controller {
  readonly informers: Informers;
  readonly queue: WorkQueue;
  readonly schedule: Schedule;
  readonly clients: ClientCache;
  private readonly stores: StoreReconciler;
  private readonly es: ExternalSecretReconciler;
  private readonly push: PushSecretReconciler;
  private readonly cluster: ClusterReconciler;
  private readonly renderer: PooledRenderer;
  private readonly restarts: Restarter;
  private readonly states: GeneratorStates;
  private readonly ledger: StateLedger;
  /** The injected pods' agents: the status of ExternalSecrets only they serve. */
  private readonly pods = new PodAgents();
  private readonly fleet: FleetParts;
  /** store id → ExternalSecret keys using it, and the reverse. */
  private readonly dependents = new Map<string, Set<QueueKey>>();
  private readonly usesStore = new Map<QueueKey, readonly string[]>();

  constructor(private readonly o: ControllerOptions) {
    const { metrics, logger, rest } = o;
    this.schedule = new Schedule((key) => this.queue.add(key));
    this.queue = new WorkQueue({
      workers: o.workers, baseDelayMs: 1000, maxDelayMs: 5 * 60_000, schedule: this.schedule,
      handle: (key, requestedAt) => this.handle(key, requestedAt),
      onDequeue: (ms) => metrics.queueLatency.observe(ms / 1000),
      onError: (key, err) => logger.warn({ key, err: (err as Error).message }, 'reconcile failed; retrying with backoff'),
    });
    this.clients = new ClientCache({
      rest, logger, windowMs: o.windowMs, storeQps: o.storeQps, storeBurst: o.storeBurst, timeoutMs: o.providerTimeoutMs,
      allowAmbientIdentity: o.allowAmbientIdentity ?? false,
      ...(o.ownServiceAccount ? { ownServiceAccount: o.ownServiceAccount } : {}),
      ...(o.ambientIdentityNamespaces ? { ambientIdentityNamespaces: o.ambientIdentityNamespaces } : {}),
      allowPrivateStoreAddresses: o.allowPrivateStoreAddresses ?? false,
      ...(o.egressAllow ? { egressAllow: o.egressAllow } : {}),
      onProviderCall: (store) => {
        metrics.providerCalls.inc({ store });
        this.fleet.reconcilerRead(store);
      },
    });
    this.informers = new Informers(o.kc, rest, {
      add: (kind, obj) => this.onEvent(kind, obj, undefined, 'add'),
      update: (kind, obj, old) => this.onEvent(kind, obj, old, 'update'),
      delete: (kind, obj) => this.onEvent(kind, obj, undefined, 'delete'),
    }, { logger, namespaces: o.watchNamespaces, generatorStates: `${STATE_CONTROLLER_LABEL}=${o.classes[0] ?? ''}` });
    this.fleet = fleetParts({
      kc: o.kc, rest, logger, registry: metrics.registry, settings: o.fleet ?? { patchQps: 50, notifications: false }, namespace: o.namespace,
      externalSecret: (ns, name) => this.informers.externalSecret(ns, name),
      // Not the stores of another class: that class's controller decides their pods. An
      // unclassed store's pods are decided by each ESI controller alike (the same objects
      // give the same floors and generations, so their writes agree).
      store: (kind, ns, name) => {
        const store = kind === 'ClusterSecretStore' ? this.informers.clusterSecretStore(name) : this.informers.secretStore(ns, name);
        return store && (!store.spec.controller || servesControllerClass(store, o.classes)) ? store : undefined;
      },
    });
    // Bounded by the reconcile workers: a render waits only while a reconcile does.
    this.renderer = new PooledRenderer({
      workers: o.renderWorkers, timeoutMs: o.renderTimeoutMs, maxQueued: o.workers * 4,
      onKill: () => metrics.renderKilled.inc(), onBusy: () => metrics.renderBusy.inc(),
    });
    const events = new EventRecorder(rest, logger, { component: 'esi-controller', onDrop: () => metrics.eventsDropped.inc() });
    this.stores = new StoreReconciler({ rest, clients: this.clients, events, classes: o.classes, logger, onChange: (id) => this.requeueDependents(id) });
    const generators = new Generators(rest, this.clients, { clusterKinds: this.informers.clusterKinds, allowRawResults: o.allowGeneratorRawResults ?? false });
    this.ledger = stateLedger({
      rest, controllerClass: o.classes[0] ?? '', max: o.maxGeneratorStates ?? DEFAULT_MAX_GENERATOR_STATES,
      cache: { states: (ns) => this.informers.generatorStates(ns), synced: () => this.informers.generatorStatesSynced() },
      onRefusal: (limit) => metrics.generatorStateRefusals.inc({ limit }),
    });
    this.states = new GeneratorStates({
      rest, generators, events, logger, controllerClass: o.classes[0] ?? '', gracePeriodMs: o.generatorGcGraceMs ?? DEFAULT_GC_GRACE_MS,
      cached: (ns, name) => this.informers.generatorState(ns, name), ledger: this.ledger,
    });
    this.restarts = new Restarter({
      rest, events, logger, minIntervalMs: o.restartMinIntervalMs ?? DEFAULT_RESTART_MIN_INTERVAL_MS, queue: this.queue, schedule: this.schedule,
    });
    this.es = new ExternalSecretReconciler({
      informers: this.informers, stores: this.stores, clients: this.clients, generators, states: this.states, rest, events, restarts: this.restarts,
      renderer: this.renderer, logger, jitterMaxMs: o.windowMs / 2, allowConfigMapTargets: o.allowConfigMapTargets ?? false, pods: this.pods,
      uses: (key, stores) => this.track(key, stores),
    });
    this.push = new PushSecretReconciler({
      informers: this.informers, stores: this.stores, clients: this.clients, rest, events,
      engine: new TemplateEngine(), generators, logger, jitterMaxMs: o.windowMs / 2,
      records: new PushRecords(rest, o.namespace, o.classes[0] ?? '', logger),
      metrics: {
        push: (result) => (result === 'equal' ? metrics.pushSkippedEqual.inc() : metrics.pushes.inc({ result })),
        deleted: (result) => metrics.pushDeletes.inc({ result }),
        left: (store, reason) => metrics.pushEntriesLeft.inc({ store, reason }),
      },
    });
    this.cluster = new ClusterReconciler({
      informers: this.informers, stores: this.stores, rest, events, logger,
      inScope: (ns) => this.inScope(ns),
    });
  }

  async start(): Promise<void> {
    await this.informers.start();
    this.queue.start();
  }

  synced(): boolean {
    return this.informers.synced();
  }

  async stop(): Promise<void> {
    this.schedule.stop();
    this.restarts.stop();
    this.fleet.stop();
    await this.queue.stop();
    await this.informers.stop();
    await this.clients.close();
    await this.renderer.close();
  }

  /** Whether ExternalSecrets and SecretStores of namespace `ns` are ours to serve. */
  private inScope(ns: string): boolean {
    const sel = this.o.namespaceSelector;
    if (!sel) return true;
    const labels = this.informers.namespace(ns)?.metadata?.labels ?? {};
    return Object.entries(sel).every(([k, v]) => labels[k] === v);
  }

  /** Records the stores `key` reads from (several with per-entry sourceRef.storeRef). */
  private track(key: QueueKey, stores: readonly string[]): void {
    const prev = this.usesStore.get(key) ?? [];
    if (prev.length === stores.length && prev.every((s, i) => s === stores[i])) return;
    for (const p of prev) this.dependents.get(p)?.delete(key);
    if (!stores.length) {
      this.usesStore.delete(key);
      return;
    }
    this.usesStore.set(key, [...stores]);
    for (const store of stores) {
      let set = this.dependents.get(store);
      if (!set) this.dependents.set(store, (set = new Set()));
      set.add(key);
    }
  }

  private requeueDependents(id: string): void {
    for (const key of this.dependents.get(id) ?? []) this.queue.add(key);
  }

  private onEvent(kind: Kind, obj: KubernetesObject, old: KubernetesObject | undefined, verb: 'add' | 'update' | 'delete'): void {
    // The caches keep every object: drop what the reconciler never reads.
    slim(kind, obj);
    const ns = obj.metadata?.namespace ?? '';
    const name = obj.metadata?.name ?? '';
    const changed = verb !== 'update' || metaChanged(old, obj);
    if (changed && FLEET_INPUTS.has(kind)) this.fleet.changed();
    if (this.onClusterKinds(kind, obj, changed) || this.onStateKinds(kind, obj, verb)) return;
    if (kind === 'externalsecrets') {
      if (changed) this.queue.add(queueKey('es', ns, name));
    } else if (kind === 'secretstores' || kind === 'clustersecretstores') {
      if (changed) this.queue.add(queueKey(kind === 'secretstores' ? 'ss' : 'css', ns, name));
    } else if (kind === 'pushsecrets') {
      if (verb !== 'update' || pushSecretChanged(old, obj)) this.queue.add(queueKey('ps', ns, name));
    } else if (kind === 'namespaces') {
      this.onNamespace(obj, old, verb);
    } else {
      this.onSecret(obj as V1Secret, verb);
    }
  }

  /** Kinds watched for their state, not their spec: injected pods (their agents) and
   *  GeneratorStates (a deadline, a deletion). True when `kind` is one of them. */
  private onStateKinds(kind: Kind, obj: KubernetesObject, verb: 'add' | 'update' | 'delete'): boolean {
    const ns = obj.metadata?.namespace ?? '';
    if (kind === 'pods') {
      // Only an agent's transition or a changed mount queues its ExternalSecrets (coalesced by key).
      for (const es of this.pods.update(obj as V1Pod, verb)) this.queue.add(queueKey('es', ns, es));
      this.fleet.observePod(obj as V1Pod, verb);
      return true;
    }
    if (kind !== 'generatorstates') return false;
    this.ledger.observe(obj as GeneratorState, verb === 'delete');
    this.o.metrics.generatorStates.set(this.informers.generatorStates().length);
    if (verb !== 'delete' && stateNeedsWork(obj)) this.queue.add(queueKey('gs', ns, obj.metadata?.name ?? ''));
    if (verb === 'delete') this.retryRefused(ns, obj);
    return true;
  }

  /** A state released: its ExternalSecret, if a bound refused its mint, is tried at once
   *  rather than at its next backoff retry. */
  private retryRefused(ns: string, obj: KubernetesObject): void {
    const owner = obj.metadata?.ownerReferences?.find((r) => r.kind === 'ExternalSecret')?.name;
    const es: ExternalSecret | undefined = owner ? this.informers.externalSecret(ns, owner) : undefined;
    if (es && readyCondition(es.status?.conditions)?.reason === 'GeneratorStateLimit') this.queue.add(queueKey('es', ns, owner!));
  }

  /** Cluster objects are queued on change; a provisioned object that changed or went away
   *  (by hand) queues its cluster object, which repairs it. True when `kind` is a cluster kind. */
  private onClusterKinds(kind: Kind, obj: KubernetesObject, changed: boolean): boolean {
    if (kind === 'clusterexternalsecrets' || kind === 'clusterpushsecrets') {
      if (changed) this.queue.add(queueKey(kind === 'clusterexternalsecrets' ? 'ces' : 'cps', '', obj.metadata?.name ?? ''));
      return true;
    }
    const owner = changed && (kind === 'externalsecrets' || kind === 'pushsecrets') ? ownerName(OWNER_KINDS[kind], obj) : undefined;
    if (owner) this.queue.add(queueKey(OWNER_KINDS[kind as keyof typeof OWNER_KINDS].prefix, '', owner));
    return false;
  }

  /** Namespace labels decide ClusterSecretStore access (re-check its ExternalSecrets) and
   *  which namespaces cluster objects select (re-check them all). */
  private onNamespace(obj: KubernetesObject, old: KubernetesObject | undefined, verb: string): void {
    if (verb === 'update' && JSON.stringify(old?.metadata?.labels ?? {}) === JSON.stringify(obj.metadata?.labels ?? {}) &&
      !!old?.metadata?.deletionTimestamp === !!obj.metadata?.deletionTimestamp) return;
    const name = obj.metadata?.name ?? '';
    for (const es of this.informers.externalSecrets(name)) this.queue.add(queueKey('es', name, es.metadata.name!));
    if (!old?.metadata?.deletionTimestamp) this.onNamespaceDeleting(obj);
    for (const key of this.cluster.keysFor()) this.queue.add(key);
  }

  /** A namespace going away releases the deleted PushSecrets its deletion left without a
   *  credential (pushsecret/abandon.ts): those waiting in backoff are tried now. */
  private onNamespaceDeleting(obj: KubernetesObject): void {
    const name = obj.metadata?.name ?? '';
    if (!obj.metadata?.deletionTimestamp) return;
    for (const ps of this.informers.pushSecrets(name)) if (ps.metadata.deletionTimestamp) this.queue.add(queueKey('ps', name, ps.metadata.name!));
  }

  /** Our own writes keep content and hash in step: only deletions and hand edits count. */
  private onSecret(obj: V1Secret, verb: string): void {
    const owner = obj.metadata?.annotations?.[EXTERNAL_SECRET_ANNOTATION];
    if (owner && (verb === 'delete' || handEdited(obj))) this.queue.add(queueKey('es', obj.metadata?.namespace ?? '', owner));
  }

  /** Runs the reconcile the key names and returns when to run it again (the queue applies it). */
  private async handle(key: QueueKey, requestedAt: number): Promise<Requeue> {
    const { kind, namespace, name } = keyOf(key);
    this.o.metrics.queueDepth.set(this.queue.depth);
    this.o.metrics.scheduled.set(this.schedule.size);
    if (kind === 'ces' || kind === 'cps') return (await this.cluster.reconcile(kind, name)).requeue;
    // Whatever the namespace's selection now: a lease this controller minted is its to revoke.
    if (kind === 'gs') return this.states.reconcile(namespace, name);
    if (Restarter.owns(key)) return this.restarts.handle(key);
    if (kind !== 'css' && !this.inScope(namespace)) return {};
    // With a namespace selector a ClusterSecretStore is validated only for its users.
    if (kind === 'css' && this.o.namespaceSelector && !this.dependents.get(storeIdOf('ClusterSecretStore', name))?.size) return {};
    if (kind === 'es') {
      const end = this.o.metrics.syncDuration.startTimer();
      try {
        const out = await this.es.reconcile(namespace, name, requestedAt);
        this.o.metrics.syncs.inc({ result: out.result, reason: out.reason });
        recordExternalSecret(this.o.metrics, { namespace, name }, readyOf(out), out.result === 'error');
        return out.requeue;
      } catch (err) {
        this.o.metrics.syncs.inc({ result: 'error', reason: 'Internal' });
        recordExternalSecret(this.o.metrics, { namespace, name }, undefined, true);
        throw err;
      } finally {
        end();
      }
    }
    if (kind === 'ps') return (await this.push.reconcile(namespace, name)).requeue;
    const store: AnySecretStore | undefined = kind === 'css' ? this.informers.clusterSecretStore(name) : this.informers.secretStore(namespace, name);
    const id = kind === 'css' ? storeIdOf('ClusterSecretStore', name) : storeIdOf('SecretStore', name, namespace);
    if (!store || !this.stores.served(store)) {
      await this.stores.forget(id);
      // One series per store lives as long as the store (a tenant creating and deleting
      // stores must not grow /metrics without bound).
      this.o.metrics.providerCalls.remove({ store: id });
      return {};
    }
    const st = await this.stores.revalidate(store);
    this.o.metrics.clients.set(this.clients.size);
    return { backoff: !st.ready };
  }
}
