// One ExternalSecret → its target Secret, read in the order a sync runs: the informers
// queue the ExternalSecret's key, the work queue calls `reconcile`, which looks up the stores
// it names and checks its spec (./spec.ts), decides whether values must be fetched and when
// to run again (./due.ts), has them fetched and rendered (./fetch.ts), writes the target only
// when it differs (./write.ts), and records the outcome in status (./status.ts) and Events.
// Errors are value-free by construction (they come from src/externalsecret, the providers
// and templating).
import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { AnySecretStore, ExternalSecret, ExternalSecretStatus } from '../../api/types.js';
import { storeRefsOf } from '../../externalsecret/store-refs.js';
import type { KubeRest } from '../../kube/rest.js';
import { RenderBusy, type PooledRenderer } from '../../templating/pool/index.js';
import type { ClientCache } from '../runtime/clients.js';
import type { EventRecorder } from '../runtime/events.js';
import type { Informers } from '../runtime/informers.js';
import type { QueueKey } from '../runtime/keys.js';
import { FORCE_SYNC_ANNOTATION } from '../runtime/labels.js';
import type { Requeue } from '../runtime/queue.js';
import type { StoreReconciler } from '../secretstore/reconcile.js';
import { describeSource, generatorsOnly, type GeneratorReads, type Generators } from '../generatorstate/generators.js';
import type { GeneratorStates } from '../generatorstate/state.js';
import type { Restarter } from '../restart/restarter.js';
import { needsFetch, nextRun, sourceVersion, type EsState } from './due.js';
import { ExternalSecretFetcher, Failure, IdentityRefusal, esKey, regarding } from './fetch.js';
import { isManifestTarget, targetKind, targetName } from './manifest-target.js';
import { POD_REASONS, podsStatus, type PodAgents } from './pod-agents.js';
import type { RefreshSpec } from './refresh.js';
import { checkSpec, ensureStoresReady, lookupStores, storeIdsOf } from './spec.js';
import { bounded, readyCondition, syncedResourceVersion, syncedStatus, withReady, writeStatus } from './status.js';
import { TargetWriter, type Written } from './write.js';

export interface EsDeps {
  informers: Informers;
  stores: StoreReconciler;
  clients: ClientCache;
  /** Runs `dataFrom[].sourceRef.generatorRef` generators (src/controller/generatorstate/generators.ts). */
  generators: Generators;
  /** Keeps the leases generators mint and revokes superseded ones (src/controller/generatorstate/state.ts). */
  states?: GeneratorStates;
  rest: KubeRest;
  events: EventRecorder;
  /** Renders off the main thread (src/templating/pool/, docs/decisions/0051-render-pool.md). */
  renderer: PooledRenderer;
  logger: Logger;
  jitterMaxMs: number;
  /** Restarts the opted-in workloads of a Secret whose data changed (src/controller/restart/restarter.ts). */
  restarts?: Pick<Restarter, 'secretChanged'>;
  /** Serve `spec.target.manifest` of kind ConfigMap (--allow-configmap-targets). */
  allowConfigMapTargets?: boolean;
  /** The injected pods' agents, for ExternalSecrets only they serve. */
  pods?: Pick<PodAgents, 'view'>;
  /** Called with the ids of the stores each ExternalSecret uses (dependents index). */
  uses(esKey: QueueKey, stores: readonly string[]): void;
}

/** One reconcile: when it was queued (coalesced reads are measured from it), its generator reads. */
interface SyncAt {
  requestedAt: number;
  reads: GeneratorReads;
}

/** What happened (metrics) and when to run again (the work queue, src/controller/runtime/queue.ts). */
export type Outcome = { result: 'synced' | 'unchanged' | 'skipped' | 'error'; reason: string; requeue: Requeue };

/** The Ready condition a reconcile outcome leaves on its object: true or false as written
 *  to status, 'gone' when the object is deleted or served by another controller, undefined
 *  when the reconcile wrote no status (it waits for a cache or a render slot). */
export function readyOf(out: Outcome): boolean | 'gone' | undefined {
  if (out.result === 'synced' || out.result === 'unchanged') return true;
  if (out.result === 'error') return false;
  return out.reason === 'Deleted' || out.reason === 'OtherClass' || out.reason === 'ClusterKindNotServed' ? 'gone' : undefined;
}

export class ExternalSecretReconciler {
  private readonly state = new Map<string, EsState>();

  private readonly fetcher: ExternalSecretFetcher;

  private readonly writer: TargetWriter;

  constructor(private readonly d: EsDeps) {
    this.fetcher = new ExternalSecretFetcher(d);
    this.writer = new TargetWriter(d);
  }

  /** `requestedAt`: when the reconcile was queued (ms); coalesced reads are measured from it. */
  async reconcile(ns: string, name: string, requestedAt = Date.now()): Promise<Outcome> {
    const key = esKey(ns, name);
    const es = this.d.informers.externalSecret(ns, name);
    if (!es) {
      this.state.delete(key);
      this.d.uses(key, []);
      return { result: 'skipped', reason: 'Deleted', requeue: { next: 'cancel' } };
    }
    // spec.secretStoreRef and the entries' own stores (sourceRef.storeRef).
    const refs = storeRefsOf(es.spec);
    // Scoped mode serves no cluster kind: an ExternalSecret using a ClusterSecretStore
    // is another controller's, as one of another class is; no 403 on the store, and a status
    // only from the pods mounting it.
    if (!this.d.informers.clusterKinds && refs.some((r) => r.kind === 'ClusterSecretStore')) {
      this.state.delete(key);
      await this.servedByAgents(es);
      return { result: 'skipped', reason: 'ClusterKindNotServed', requeue: { next: 'cancel' } };
    }
    this.d.uses(key, storeIdsOf(refs, ns));
    // Each generator is read once in this reconcile, however many entries name it.
    const at = { requestedAt, reads: this.d.generators.reads() };
    try {
      if (!refs.length) return await this.reconcileStoreless(es, at);
      const found = await lookupStores(es, refs, this.d);
      if ('skip' in found) {
        if (found.skip === 'StoreNotCached') return { result: 'skipped', reason: 'StoreNotCached', requeue: { backoff: true } };
        this.state.delete(key);
        await this.servedByAgents(es);
        return { result: 'skipped', reason: 'OtherClass', requeue: { next: 'cancel' } };
      }
      const refresh = checkSpec(es, found.stores, this.d);
      await ensureStoresReady(found.stores, this.d);
      return await this.sync(es, found.stores, refresh, at);
    } catch (err) {
      if (err instanceof RenderBusy) {
        // Not rendered at all (the pool holds this namespace to one render): no status, later.
        return { result: 'skipped', reason: 'RenderBusy', requeue: { after: err.retryAfterMs } };
      }
      if (!(err instanceof Failure)) throw err;
      // The pods' agents authenticate as the pod: what they say is this ExternalSecret's status.
      if (err instanceof IdentityRefusal && (await this.servedByAgents(es, true))) {
        return { result: 'skipped', reason: 'ServedByAgents', requeue: {} };
      }
      await this.fail(es, err.reason, err.message);
      return { result: 'error', reason: err.reason, requeue: { backoff: err.retry } };
    }
  }

  /** No store: only generators (ESO allows it), served by the generators' controller class;
   *  otherwise a spec that names no store, refused by the controller claiming unclassed stores. */
  private async reconcileStoreless(es: ExternalSecret, at: SyncAt): Promise<Outcome> {
    const key = esKey(es.metadata.namespace!, es.metadata.name!);
    if (!generatorsOnly(es.spec)) {
      if (!this.d.stores.servesClass('')) return { result: 'skipped', reason: 'OtherClass', requeue: { next: 'cancel' } };
      checkSpec(es, [], this.d);
      throw new Failure('InvalidSpec', `ExternalSecret "${es.metadata.name}": names no store; set spec.secretStoreRef`, false);
    }
    const classes = await Promise.all((es.spec.dataFrom ?? []).map((f) =>
      this.d.generators.resolve(es.metadata.namespace!, f.sourceRef!.generatorRef!, at.reads).then((g) => g.controller, () => '')));
    if (!classes.every((c) => this.d.stores.servesClass(c))) {
      this.state.delete(key);
      return { result: 'skipped', reason: 'OtherClass', requeue: { next: 'cancel' } };
    }
    return this.sync(es, [], checkSpec(es, [], this.d), at);
  }

  private async sync(es: ExternalSecret, stores: readonly AnySecretStore[], refresh: RefreshSpec, at: SyncAt): Promise<Outcome> {
    const { requestedAt } = at;
    const ns = es.metadata.namespace!;
    const key = esKey(ns, es.metadata.name!);
    const target = targetName(es);
    const cur = es.spec.target?.creationPolicy === 'None' || isManifestTarget(es) ? undefined : this.d.informers.secret(ns, target);
    const prev = this.state.get(key);
    const st = prev?.uid === es.metadata.uid ? prev : undefined;
    const force = es.metadata.annotations?.[FORCE_SYNC_ANNOTATION];
    const windowsReported = this.reportIgnoredWindows(es, refresh, st);
    const next = (): EsState => ({ uid: es.metadata.uid!, storeVersion: sourceVersion(stores), forceSync: force, windowsReported });
    const need = needsFetch(es, stores, refresh, { st, cur, jitterMaxMs: this.d.jitterMaxMs });
    if (!need.fetch) {
      const held = 'notBefore' in need;
      return { result: 'unchanged', reason: held ? 'OutsideSyncWindow' : 'UpToDate', requeue: this.schedule(es, refresh, { ...next(), due: held ? need.notBefore : st?.due }) };
    }
    const done = await this.fetchAndWrite(es, stores, cur, { fresh: !!st && st.forceSync !== force, ...at });
    if ('gone' in done) {
      const outcome = done.gone === 'Retain' ? await this.retained(es) : await this.remoteGone(es, cur);
      return { ...outcome, requeue: this.schedule(es, refresh, next(), requestedAt) };
    }
    const { wrote, action, missing, changed } = done;
    const statusWritten = await this.writeStatus(es, syncedStatus(es, describeSource(es, stores), { wrote, now: Date.now(), missing }));
    if (wrote) {
      const verb = action === 'create' ? 'Created' : 'Updated';
      this.d.events.emit(regarding(es), 'Normal', verb, `${verb} ${targetKind(es)} "${target}" from ${describeSource(es, stores)}`);
    }
    if (changed) this.d.restarts?.secretChanged(ns, target, regarding(es));
    return { result: wrote || statusWritten ? 'synced' : 'unchanged', reason: 'SecretSynced', requeue: this.schedule(es, refresh, next(), requestedAt) };
  }

  /** Fetches, renders and writes; the leases generators minted on the way are kept when the
   *  target took the new values and revoked when it did not (src/controller/generatorstate/state.ts). */
  private async fetchAndWrite(es: ExternalSecret, stores: readonly AnySecretStore[], cur: V1Secret | undefined, o: SyncAt & { fresh: boolean }): Promise<{ gone: 'Delete' | 'Retain' } | Written> {
    const generation = this.d.states?.begin(es);
    try {
      const fetched = await this.fetcher.fetch(es, stores, { ...o, generation });
      const out = 'gone' in fetched ? fetched : await this.writer.write(es, stores, fetched.rendered, cur);
      await ('gone' in out || out.missing ? generation?.rollback() : generation?.commit());
      return out;
    } catch (err) {
      // Generated values that reached no Secret: their leases are revoked now.
      await generation?.rollback();
      throw err;
    }
  }

  /** deletionPolicy Delete with no remote data left (ESO): the Secret is deleted and Ready
   *  is True (reason SecretDeleted), the refresh goes on; only an Owner Secret is deleted. */
  private async remoteGone(es: ExternalSecret, cur: V1Secret | undefined): Promise<Omit<Outcome, 'requeue'>> {
    const target = targetName(es);
    const creation = es.spec.target?.creationPolicy ?? 'Owner';
    if (creation !== 'Owner') {
      throw new Failure('SecretSyncedError', `ExternalSecret "${es.metadata.name}": no remote data is left, and deletionPolicy Delete deletes only a Secret of creationPolicy Owner (not ${creation})`, false);
    }
    const mine = await this.writer.deleteIfOwned(es, cur);
    const written = await this.writeStatus(es, {
      ...es.status,
      conditions: withReady(es.status?.conditions, 'True', 'SecretDeleted', `Secret "${target}" deleted: no remote data is left (deletionPolicy Delete)`),
      ...(mine ? { refreshTime: new Date().toISOString() } : {}),
      syncedResourceVersion: syncedResourceVersion(es),
    });
    return { result: mine || written ? 'synced' : 'unchanged', reason: 'SecretDeleted' };
  }

  /** deletionPolicy Retain with no remote data (ESO): no Secret is written, Ready=True. */
  private async retained(es: ExternalSecret): Promise<Omit<Outcome, 'requeue'>> {
    const message = `no remote data: ${targetKind(es)} "${targetName(es)}" is neither created nor changed (deletionPolicy Retain)`;
    const conditions = withReady(es.status?.conditions, 'True', 'SecretSynced', message);
    const written = await this.writeStatus(es, { ...es.status, conditions, syncedResourceVersion: syncedResourceVersion(es) });
    return { result: written ? 'synced' : 'unchanged', reason: 'SecretSynced' };
  }

  private async fail(es: ExternalSecret, reason: string, message: string): Promise<void> {
    const msg = bounded(message);
    const changed = await this.writeStatus(es, {
      ...es.status,
      conditions: withReady(es.status?.conditions, 'False', reason, msg),
    });
    if (changed) this.d.logger.info({ externalSecret: `${es.metadata.namespace}/${es.metadata.name}`, reason, message: msg }, 'sync failed');
    this.d.events.emit(regarding(es), 'Warning', reason, msg);
  }

  /** The status its pods give `es` when the controller does not sync it; true when
   *  written. `refused`: by the identity rule (pods replace it while any mounts it); otherwise
   *  another controller may sync it: only an empty status or one from pods is replaced. */
  /** Every controller that sees these pods writes the same status, whatever its own reason
   *  for not syncing (another class, scoped mode, the pod's identity): one message, so two
   *  controllers never rewrite each other's. */
  private async servedByAgents(es: ExternalSecret, refused = false): Promise<boolean> {
    const view = this.d.pods?.view(es.metadata.namespace!, es.metadata.name!);
    if (!view || (refused && !view.total)) return false;
    const reason = readyCondition(es.status?.conditions)?.reason;
    if (!refused && reason !== undefined && !POD_REASONS.has(reason)) return false;
    const status = podsStatus(es, view);
    if (!status) return false;
    await this.writeStatus(es, status);
    return true;
  }

  /** Sync windows that cannot be read are left out (as ESO) and told once per spec, in a
   *  Warning Event naming each; returns the spec version told about. */
  private reportIgnoredWindows(es: ExternalSecret, refresh: RefreshSpec, st: EsState | undefined): string | undefined {
    const ignored = refresh.windows?.ignored ?? [];
    if (!ignored.length) return undefined;
    const version = syncedResourceVersion(es);
    if (st?.windowsReported !== version) this.d.events.emit(regarding(es), 'Warning', 'InvalidSyncWindow', `left out, as ESO does: ${ignored.join('; ')}`);
    return version;
  }

  /** Remembers `st` and says when to run again (./due.ts). */
  private schedule(es: ExternalSecret, refresh: RefreshSpec, st: EsState, readAt?: number): Requeue {
    this.state.set(esKey(es.metadata.namespace!, es.metadata.name!), st);
    return nextRun(es, refresh, st, { jitterMaxMs: this.d.jitterMaxMs, readAt });
  }

  /** Writes status when it differs; true when written. */
  private writeStatus(es: ExternalSecret, status: ExternalSecretStatus): Promise<boolean> {
    return writeStatus(this.d.rest, es, status);
  }
}
