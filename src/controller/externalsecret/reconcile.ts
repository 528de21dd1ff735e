// One ExternalSecret → its target Secret. Decides whether values must be fetched (spec
// change, force-sync, missing or hand-edited Secret, refresh due, store change), has the
// values fetched and rendered (src/controller/externalsecret/fetch.ts), writes the Secret only when it
// differs, and records the outcome in status and Events. Errors are value-
// free by construction (they come from src/externalsecret, the providers and templating).
import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { AnySecretStore, ExternalSecret, ExternalSecretStatus } from '../../api/types.js';
import { isKubeStatus, type KubeRest } from '../../kube/rest.js';
import type { RenderedTemplate } from '../../templating/index.js';
import { RenderBusy, type PooledRenderer } from '../../templating/pool/index.js';
import type { ClientCache } from '../runtime/clients.js';
import type { EventRecorder } from '../runtime/events.js';
import type { Informers } from '../runtime/informers.js';
import { EXTERNAL_SECRET_ANNOTATION, FORCE_SYNC_ANNOTATION } from '../runtime/labels.js';
import { nextRefresh, phaseOf, refreshAfterRead, type RefreshSpec } from './refresh.js';
import { refreshAllowed } from './sync-windows.js';
import type { Requeue } from '../runtime/queue.js';
import { desiredSecret, editedByHand, planSecret, type Desired, type Plan } from './secret.js';
import { isManifestTarget, writeConfigMap } from './manifest-target.js';
import { versionOf, type StoreReconciler } from '../secretstore/reconcile.js';
import { bounded, patchStatus, readyCondition, statusDiffers, syncedResourceVersion, withReady } from './status.js';
import { EXTERNAL_SECRETS, resourcePath, SECRETS } from '../../kube/paths.js';
import { applyPlan, readSecret } from './secret-io.js';
import { describeSource, generatorsOnly, sourceOf, type GeneratorReads, type Generators } from '../generatorstate/generators.js';
import type { GeneratorStates } from '../generatorstate/state.js';
import { dataChanged, type Restarter } from '../restart/restarter.js';
import { ExternalSecretFetcher, Failure, IdentityRefusal, esKey, regarding } from './fetch.js';
import { POD_REASONS, podsStatus, type PodAgents } from './pod-agents.js';
import { ensureStoresReady, lookupStores, storeIdsOf } from './stores.js';
import { checkSpec } from './spec.js';
import { storeRefsOf } from '../../externalsecret/store-refs.js';

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
  /** Serve `spec.target.manifest` of kind ConfigMap (--allow-configmap-targets, ADR 0067). */
  allowConfigMapTargets?: boolean;
  /** The injected pods' agents, for ExternalSecrets only they serve (ADR 0070). */
  pods?: Pick<PodAgents, 'view'>;
  /** Called with the ids of the stores each ExternalSecret uses (dependents index). */
  uses(esKey: string, stores: readonly string[]): void;
}

/** What the reconciler remembers between reconciles of one ExternalSecret (no values). */
interface EsState {
  uid: string;
  storeVersion: string;
  forceSync?: string;
  /** When the next periodic refresh is due (ms), once scheduled. */
  due?: number;
  /** The syncedResourceVersion whose unreadable sync windows were reported in an Event. */
  windowsReported?: string;
}

/** One reconcile: when it was queued (coalesced reads are measured from it), its generator reads. */
interface SyncAt {
  requestedAt: number;
  reads: GeneratorReads;
}

/** What happened (metrics) and when to run again (the work queue, src/controller/runtime/queue.ts). */
export type Outcome = { result: 'synced' | 'unchanged' | 'skipped' | 'error'; reason: string; requeue: Requeue };

/** The kind of object the ExternalSecret writes: a Secret, or its manifest's ConfigMap. */
const targetKind = (es: ExternalSecret) => (isManifestTarget(es) ? 'ConfigMap' : 'Secret');

/** What a change of any store the ExternalSecret reads from changes (a refresh is due). */
const sourceVersion = (stores: readonly AnySecretStore[]) => (stores.length ? stores.map(versionOf).join(',') : 'generators');

export class ExternalSecretReconciler {
  private readonly state = new Map<string, EsState>();

  private readonly fetcher: ExternalSecretFetcher;

  constructor(private readonly d: EsDeps) {
    this.fetcher = new ExternalSecretFetcher(d);
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
    // spec.secretStoreRef and the entries' own stores (sourceRef.storeRef, ADR 0066).
    const refs = storeRefsOf(es.spec);
    // Scoped mode serves no cluster kind (ADR 0064): an ExternalSecret using a ClusterSecretStore
    // is another controller's, as one of another class is; no 403 on the store, and a status
    // only from the pods mounting it (ADR 0070).
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

  private targetName(es: ExternalSecret): string {
    return es.spec.target?.name ?? es.metadata.name!;
  }

  /** Is the target Secret there, ours and unedited (or not wanted: creationPolicy None)? */
  private secretOk(es: ExternalSecret, cur: V1Secret | undefined): boolean {
    // A ConfigMap target is read and compared at each fetch (src/controller/externalsecret/manifest-target.ts).
    if ((es.spec.target?.creationPolicy ?? 'Owner') === 'None' || isManifestTarget(es)) return true;
    return !!cur && !editedByHand(cur) && cur.metadata?.annotations?.[EXTERNAL_SECRET_ANNOTATION] === es.metadata.name;
  }

  /** Whether values must be fetched now; `notBefore`: a due refresh that spec.syncWindows
   *  holds back, and when it may run (undefined: at the next slot). */
  private needsFetch(es: ExternalSecret, stores: readonly AnySecretStore[], refresh: RefreshSpec, seen: { st?: EsState; cur?: V1Secret }): { fetch: boolean; notBefore?: number } {
    const { st, cur } = seen;
    const ready = readyCondition(es.status?.conditions)?.status === 'True';
    const secretOk = this.secretOk(es, cur);
    if (refresh.policy === 'CreatedOnce') return { fetch: !ready || !secretOk };
    if (st && st.forceSync !== es.metadata.annotations?.[FORCE_SYNC_ANNOTATION]) return { fetch: true };
    if (!ready || !secretOk || es.status?.syncedResourceVersion !== syncedResourceVersion(es)) return { fetch: true };
    if (refresh.policy === 'OnChange' || refresh.intervalMs === 0) return { fetch: false };
    if (st && st.storeVersion !== sourceVersion(stores)) return { fetch: true };
    const due = st ? st.due !== undefined && Date.now() >= st.due : this.dueOnFirstSight(es, refresh);
    if (!due) return { fetch: false };
    // Sync windows gate only this, the periodic refresh (as ESO): a changed spec, a missing
    // or edited Secret and force-sync go through above.
    const gate = refreshAllowed(refresh.windows, Date.now());
    return gate.allowed ? { fetch: true } : { fetch: false, notBefore: gate.next };
  }

  /** First sight (e.g. after a restart): due when a grid point passed since the last write. */
  private dueOnFirstSight(es: ExternalSecret, refresh: RefreshSpec): boolean {
    const written = Date.parse(es.status?.refreshTime ?? '') || 0;
    return Date.now() >= nextRefresh(refresh.intervalMs, phaseOf(es.metadata.uid ?? ''), this.d.jitterMaxMs, written);
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

  /** The next refresh: one interval after `readAt` when values were just read, otherwise
   *  the refresh already due later (or the next slot). */
  private schedule(es: ExternalSecret, refresh: RefreshSpec, st: EsState, readAt?: number): Requeue {
    const key = esKey(es.metadata.namespace!, es.metadata.name!);
    this.state.set(key, st);
    if (refresh.policy !== 'Periodic' || refresh.intervalMs === 0) return { next: 'cancel' };
    const phase = phaseOf(es.metadata.uid ?? '');
    const now = Date.now();
    if (readAt !== undefined) st.due = refreshAfterRead(refresh.intervalMs, phase, this.d.jitterMaxMs, readAt);
    else if (st.due === undefined || st.due <= now) st.due = nextRefresh(refresh.intervalMs, phase, this.d.jitterMaxMs, now);
    return { next: st.due };
  }

  private async sync(es: ExternalSecret, stores: readonly AnySecretStore[], refresh: RefreshSpec, at: SyncAt): Promise<Outcome> {
    const { requestedAt } = at;
    const ns = es.metadata.namespace!;
    const key = esKey(ns, es.metadata.name!);
    const target = this.targetName(es);
    const cur = es.spec.target?.creationPolicy === 'None' || isManifestTarget(es) ? undefined : this.d.informers.secret(ns, target);
    const prev = this.state.get(key);
    const st = prev?.uid === es.metadata.uid ? prev : undefined;
    const force = es.metadata.annotations?.[FORCE_SYNC_ANNOTATION];
    const windowsReported = this.reportIgnoredWindows(es, refresh, st);
    const next = (): EsState => ({ uid: es.metadata.uid!, storeVersion: sourceVersion(stores), forceSync: force, windowsReported });
    const need = this.needsFetch(es, stores, refresh, { st, cur });
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
    const statusWritten = await this.writeStatus(es, this.syncedStatus(es, stores, wrote, Date.now(), missing));
    if (wrote) {
      const verb = action === 'create' ? 'Created' : 'Updated';
      this.d.events.emit(regarding(es), 'Normal', verb, `${verb} ${targetKind(es)} "${target}" from ${describeSource(es, stores)}`);
    }
    if (changed) this.d.restarts?.secretChanged(ns, target, regarding(es));
    return { result: wrote || statusWritten ? 'synced' : 'unchanged', reason: 'SecretSynced', requeue: this.schedule(es, refresh, next(), requestedAt) };
  }

  /** Fetches, renders and writes; the leases generators minted on the way are kept when the
   *  target took the new values and revoked when it did not (src/controller/generatorstate/state.ts). */
   
  private async fetchAndWrite(es: ExternalSecret, stores: readonly AnySecretStore[], cur: V1Secret | undefined, o: SyncAt & { fresh: boolean }): Promise<{ gone: 'Delete' | 'Retain' } | Awaited<ReturnType<typeof this.write>>> {
    const generation = this.d.states?.begin(es);
    try {
      const fetched = await this.fetcher.fetch(es, stores, { ...o, generation });
      const out = 'gone' in fetched ? fetched : await this.write(es, stores, fetched.rendered, cur);
      await ('gone' in out || out.missing ? generation?.rollback() : generation?.commit());
      return out;
    } catch (err) {
      // Generated values that reached no Secret: their leases are revoked now.
      await generation?.rollback();
      throw err;
    }
  }

  /** `missing`: creationPolicy Merge found no Secret to merge into (Ready=True, reason
   *  SecretMissing, as ESO: nothing failed, the keys are merged once the Secret exists). */
  // eslint-disable-next-line max-params -- the ExternalSecret, its store, and what the write did
  private syncedStatus(es: ExternalSecret, stores: readonly AnySecretStore[], wrote: boolean, now: number, missing?: string): ExternalSecretStatus {
    const none = es.spec.target?.creationPolicy === 'None' || !!missing;
    const target = this.targetName(es);
    const message = missing
      ? `${missing}; its keys are merged once it exists`
      : none
        ? `values fetched from ${describeSource(es, stores)} (creationPolicy None: no Secret written)`
        : `${targetKind(es)} "${target}" is in sync with ${describeSource(es, stores)}`;
    return {
      conditions: withReady(es.status?.conditions, 'True', missing ? 'SecretMissing' : 'SecretSynced', message),
      // Only a write moves refreshTime: an idle refresh writes nothing, status included.
      refreshTime: wrote || !es.status?.refreshTime ? new Date(now).toISOString() : es.status.refreshTime,
      syncedResourceVersion: syncedResourceVersion(es),
      ...(none ? {} : { binding: { name: target } }),
    };
  }

  /** Writes the target Secret when it differs; throws Failure when refused. `missing`: no
   *  Secret to merge into (creationPolicy Merge), which is not a failure (ESO). */
  private async write(es: ExternalSecret, stores: readonly AnySecretStore[], rendered: RenderedTemplate, cached: V1Secret | undefined): Promise<{ wrote: boolean; action: Plan['action']; missing?: string; changed?: boolean }> {
    const ns = es.metadata.namespace!;
    const target = this.targetName(es);
    const desired = desiredSecret(es, sourceOf(es, stores), rendered);
    if (isManifestTarget(es)) return this.writeConfigMap(es, desired);
    let cur = !cached && desired.policy === 'Merge' ? await this.read(ns, target) : cached;
    const exists = (n: string) => !!this.d.informers.externalSecret(ns, n);
    let plan = planSecret(desired, es, cur, exists);
    const wrote = await applyPlan(this.d.rest, plan, ns, target).catch(async (err: unknown) => {
      if (!isKubeStatus(err, 409) || plan.action !== 'create') throw err;
      // Exists but not in the managed cache (not ours, or created a moment ago): look.
      plan = planSecret(desired, es, (cur = await this.read(ns, target)), exists);
      return applyPlan(this.d.rest, plan, ns, target);
    }).catch((err: unknown) => {
      if (err instanceof Failure) throw err;
      throw new Failure('SecretWriteError', `cannot write Secret "${ns}/${target}": ${(err as Error).message}`, true);
    });
    if ((plan.action === 'replace' || plan.action === 'recreate') && plan.adopted) {
      this.d.events.emit(regarding(es), 'Normal', 'Adopted', `Took over Secret "${target}": ${plan.adopted}`);
    }
    if (plan.action === 'refuse' && plan.reason === 'SecretMissing') return { wrote, action: plan.action, missing: plan.message };
    if (plan.action === 'refuse') throw new Failure(plan.reason, plan.message, false);
    return { wrote, action: plan.action, changed: wrote && dataChanged(cur, plan) };
  }

  /** spec.target.manifest: the ConfigMap, by the Secret's rules (src/controller/externalsecret/manifest-target.ts). */
  private async writeConfigMap(es: ExternalSecret, desired: Desired): Promise<{ wrote: boolean; action: Plan['action'] }> {
    const exists = (n: string) => !!this.d.informers.externalSecret(es.metadata.namespace!, n);
    const { wrote, plan } = await writeConfigMap(this.d.rest, desired, es, exists).catch((err: unknown) => {
      throw new Failure('SecretWriteError', `cannot write ConfigMap "${desired.namespace}/${desired.name}": ${(err as Error).message}`, true);
    });
    if (plan.action === 'replace' && plan.adopted) this.d.events.emit(regarding(es), 'Normal', 'Adopted', `Took over ConfigMap "${desired.name}": ${plan.adopted}`);
    if (plan.action === 'refuse') throw new Failure(plan.reason, plan.message, false);
    return { wrote, action: plan.action };
  }

  private read(ns: string, name: string): Promise<V1Secret | undefined> {
    return readSecret(this.d.rest, ns, name).catch((err: unknown) => {
      throw new Failure('SecretReadError', `cannot read Secret "${ns}/${name}": ${(err as Error).message}`, true);
    });
  }

  /** deletionPolicy Delete with no remote data left (ESO): the Secret is deleted and Ready
   *  is True (reason SecretDeleted), the refresh goes on; only an Owner Secret is deleted. */
  private async remoteGone(es: ExternalSecret, cur: V1Secret | undefined): Promise<Omit<Outcome, 'requeue'>> {
    const ns = es.metadata.namespace!;
    const target = this.targetName(es);
    const creation = es.spec.target?.creationPolicy ?? 'Owner';
    if (creation !== 'Owner') {
      throw new Failure('SecretSyncedError', `ExternalSecret "${es.metadata.name}": no remote data is left, and deletionPolicy Delete deletes only a Secret of creationPolicy Owner (not ${creation})`, false);
    }
    // The cache holds only Secrets as ESI wrote them (../runtime/informers.ts): read any other one. Ours =
    // its controller ownerReference is this ExternalSecret (what creationPolicy Owner writes).
    const live = cur ?? (await this.read(ns, target));
    const mine = !!live?.metadata?.ownerReferences?.some((o) => o.controller && o.uid === es.metadata.uid);
    if (mine) {
      await this.d.rest.delete(resourcePath(SECRETS, { namespace: ns, name: target })).catch((err: unknown) => {
        if (!isKubeStatus(err, 404)) throw new Failure('SecretWriteError', `cannot delete Secret "${ns}/${target}": ${(err as Error).message}`, true);
      });
      this.d.events.emit(regarding(es), 'Normal', 'Deleted', `Deleted Secret "${target}": no remote data is left (deletionPolicy Delete)`);
    }
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
    const message = `no remote data: ${targetKind(es)} "${this.targetName(es)}" is neither created nor changed (deletionPolicy Retain)`;
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

  /** The status its pods give `es` when the controller does not sync it (ADR 0070); true when
   *  written. `refused`: by the identity rule (pods replace it while any mounts it); otherwise
   *  another controller may sync it: only an empty status or one from pods is replaced. */
  /** Every controller that sees these pods writes the same status, whatever its own reason
   *  for not syncing (another class, scoped mode, the pod's identity): one message, so two
   *  controllers never rewrite each other's (ADR 0070). */
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

  /** Writes status when it differs; true when written. */
  private async writeStatus(es: ExternalSecret, status: ExternalSecretStatus): Promise<boolean> {
    if (!statusDiffers(es.status, status)) return false;
    return patchStatus(this.d.rest, resourcePath(EXTERNAL_SECRETS, { namespace: es.metadata.namespace!, name: es.metadata.name!, subresource: 'status' }), status);
  }
}
