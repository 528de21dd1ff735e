// One PushSecret → entries in external stores (docs/pushsecret.md). Every reconcile:
// checks the spec, the stores (class, conditions, readiness, capabilities) and the source
// Secrets (read through the API: PushSecret sources are not watched, a changed Secret is
// pushed at the next refresh), refuses a push back into the store a Secret came from,
// computes every entry's value first (nothing is pushed when any is wrong), then per
// store compares and writes, deletes what is no longer wanted (deletionPolicy Delete),
// and records exactly what it wrote in its own record (record.ts), which status repeats.
// Overwrites and deletions are decided from that record, never from the status a tenant
// may write; ClusterSecretStore conditions are checked again for every store touched.
import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { AnySecretStore, PushSecret, PushSecretData } from '../../api/types.js';
import { isKubeStatus, type KubeRest } from '../../kube/rest.js';
import { checkPushMetadata } from '../../providers/push-metadata.js';
import { providerMeta, providerNameOf } from '../../providers/registry.js';
import type { PushMetadata } from '../../providers/types.js';
import type { TemplateEngine } from '../../templating/index.js';
import type { ClientCache } from '../runtime/clients.js';
import { storeId } from '../../stores/id.js';
import type { EventRecorder } from '../runtime/events.js';
import type { Informers } from '../runtime/informers.js';
import { nextRefresh, phaseOf } from '../externalsecret/refresh.js';
import type { Requeue } from '../runtime/queue.js';
import type { StoreReconciler } from '../secretstore/reconcile.js';
import { describeStore } from '../../stores/use.js';
import { cleanup, type CleanupDeps, type PushMetrics } from './cleanup.js';
import { namespaceLetGo } from './abandon.js';
import type { PushRecords } from './record.js';
import { deleteEntry, KeyedMutex, NotOwned, pushEntry, sameMetadata } from './remote.js';
import { entryKey, forSource, MAX_SOURCES, PUSH_FINALIZER, pushSpec, selectorQuery, type PushSpec } from './spec.js';
import { countEntries, psPath, regarding, writePushStatus, type Outcome, type Synced } from './status.js';
import { concern, loopProblems, resolveStores, statusStoreKey, storeProblems } from './targets.js';
import { entryValue, MissingKey, sourceValues } from './values.js';
import { dataToStores, expandDataTo } from './data-to.js';
import { resourcePath, SECRETS } from '../../kube/paths.js';
import type { Generators } from '../generatorstate/generators.js';

export interface PushDeps {
  informers: Informers;
  stores: StoreReconciler;
  clients: ClientCache;
  rest: KubeRest;
  events: EventRecorder;
  engine: TemplateEngine;
  /** Runs `spec.selector.generatorRef` (src/controller/generatorstate/generators.ts). */
  generators: Generators;
  logger: Logger;
  metrics: PushMetrics;
  /** What each PushSecret wrote, as this controller recorded it. */
  records: PushRecords;
  jitterMaxMs: number;
}

interface Wanted {
  store: AnySecretStore;
  data: PushSecretData;
  value: Uint8Array;
  /** `data.metadata.spec` as the store's provider accepted it. */
  metadata?: PushMetadata;
}

/** What happened (metrics) and when to run again (the work queue, src/controller/runtime/queue.ts). */
export type PushOutcome = { result: 'synced' | 'unchanged' | 'skipped' | 'error'; reason: string; requeue: Requeue };

class Refusal extends Error {
  constructor(readonly problems: string[], readonly retry: boolean, readonly reason: 'Errored' | 'AccessDenied' = 'Errored') {
    super(problems.join('; '));
  }
}

export class PushSecretReconciler {
  private readonly locks = new KeyedMutex();

  constructor(private readonly d: PushDeps) {}

  private cleanupDeps(): CleanupDeps {
    return { informers: this.d.informers, stores: this.d.stores, clients: this.d.clients, events: this.d.events, metrics: this.d.metrics, locks: this.locks, logger: this.d.logger };
  }

  async reconcile(ns: string, name: string): Promise<PushOutcome> {
    const ps = this.d.informers.pushSecret(ns, name);
    if (!ps) {
      await this.d.records.drop({ namespace: ns, name });
      return { result: 'skipped', reason: 'Deleted', requeue: { next: 'cancel' } };
    }
    const { spec, problems } = pushSpec(ps);
    const targets = spec ? resolveStores(ps, this.d.informers, this.d.stores, this.d.clients) : undefined;
    // Another controller's PushSecret (its deletion included), or a store not cached yet.
    // Never status.syncedPushSecrets: a tenant may write it (record.ts).
    const recorded = await this.d.records.load(ps);
    const whose = targets ? await concern(ps, targets, recorded, this.d) : 'mine';
    if (whose === 'other') return { result: 'skipped', reason: 'OtherClass', requeue: { next: 'cancel' } };
    if (whose === 'wait') return { result: 'skipped', reason: 'StoreNotCached', requeue: { backoff: true } };
    if (ps.metadata.deletionTimestamp) return this.finalize(ps, spec, recorded);
    try {
      if (!spec || !targets) throw new Refusal(problems, false);
      await this.ensureFinalizer(ps, spec);
      if (targets.denied.length) throw new Refusal([...targets.denied, ...targets.problems], false, 'AccessDenied');
      return await this.sync(ps, spec, targets, recorded);
    } catch (err) {
      if (!(err instanceof Refusal)) throw err;
      await writePushStatus(this.d.rest, ps, { ready: 'False', reason: err.reason, message: `nothing pushed: ${err.message}`, synced: recorded, wrote: false });
      this.d.events.emit(regarding(ps), 'Warning', err.reason, `nothing pushed: ${err.message}`);
      return { result: 'error', reason: err.reason, requeue: { ...(spec ? { next: this.nextRun(ps, spec) } : {}), backoff: err.retry } };
    }
  }

  private async ensureFinalizer(ps: PushSecret, spec: PushSpec): Promise<void> {
    const has = ps.metadata.finalizers?.includes(PUSH_FINALIZER) ?? false;
    const want = spec.deletionPolicy === 'Delete';
    if (has === want) return;
    const finalizers = want ? [...(ps.metadata.finalizers ?? []), PUSH_FINALIZER] : (ps.metadata.finalizers ?? []).filter((f) => f !== PUSH_FINALIZER);
    await this.d.rest.patch(psPath(ps.metadata.namespace!, ps.metadata.name!), { metadata: { finalizers, resourceVersion: ps.metadata.resourceVersion } });
    ps.metadata.finalizers = finalizers;
  }

  /** Deleted PushSecret: deletionPolicy Delete removes what it wrote, then the finalizer goes. */
  private async finalize(ps: PushSecret, spec: PushSpec | undefined, recorded: Synced): Promise<PushOutcome> {
    if (!ps.metadata.finalizers?.includes(PUSH_FINALIZER)) return { result: 'skipped', reason: 'Deleting', requeue: { next: 'cancel' } };
    const policy = spec?.deletionPolicy ?? ps.spec.deletionPolicy ?? 'None';
    // A namespace being deleted does not wait for a credential its deletion removed (abandon.ts).
    const letGo = namespaceLetGo({ informers: this.d.informers, rest: this.d.rest }, ps.metadata.namespace!);
    const left = policy === 'Delete' ? await cleanup(this.cleanupDeps(), ps, recorded, letGo) : { synced: {}, failures: [] };
    if (left.failures.length) {
      await this.record(ps, left.synced, left.failures);
      await writePushStatus(this.d.rest, ps, { ready: 'False', reason: 'Errored', message: `deleting: ${left.failures.join('; ')}`, synced: left.synced, wrote: false }).catch(() => undefined);
      return { result: 'error', reason: 'DeleteFailed', requeue: { next: 'cancel', backoff: true } };
    }
    // The record goes first: should the finalizer patch fail, the retry finds nothing to delete.
    await this.d.records.drop({ namespace: ps.metadata.namespace!, name: ps.metadata.name!, uid: ps.metadata.uid });
    const finalizers = (ps.metadata.finalizers ?? []).filter((f) => f !== PUSH_FINALIZER);
    try {
      await this.d.rest.patch(psPath(ps.metadata.namespace!, ps.metadata.name!), { metadata: { finalizers, resourceVersion: ps.metadata.resourceVersion } });
    } catch (err) {
      if (!isKubeStatus(err, 404)) throw err;
    }
    this.d.events.forget(regarding(ps));
    return { result: 'synced', reason: 'Deleted', requeue: { next: 'cancel' } };
  }

  /** The source Secrets: the named one (undefined when missing) or every label-selected one,
   *  or the values a generator produces now (as one Secret named after the generator). */
  private async sources(ps: PushSecret): Promise<V1Secret[] | undefined> {
    const ns = ps.metadata.namespace!;
    const ref = ps.spec.selector.generatorRef;
    if (ref) {
      try {
        const values = await this.d.generators.run(ns, await this.d.generators.resolve(ns, ref));
        const data = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
        return [{ metadata: { name: ref.name, namespace: ns }, data }];
      } catch (err) {
        // Retried with backoff: generators are not watched, a fixed one is seen at the next try.
        throw new Refusal([`spec.selector.generatorRef: ${(err as Error).message}`], true);
      }
    }
    const sel = ps.spec.selector.secret!;
    try {
      if (sel.name) return [await this.d.rest.get<V1Secret>(resourcePath(SECRETS, { namespace: ns, name: sel.name }))];
      let query: string;
      try {
        query = selectorQuery(sel.selector!);
      } catch (err) {
        throw new Refusal([`spec.selector.secret.selector: ${(err as Error).message}`], false);
      }
      const list = await this.d.rest.get<{ items: V1Secret[]; metadata?: { continue?: string } }>(resourcePath(SECRETS, { namespace: ns, query: { labelSelector: query, limit: MAX_SOURCES } }));
      if (list.metadata?.continue) throw new Refusal([`spec.selector.secret.selector matches more than ${MAX_SOURCES} Secrets; narrow it`], false);
      return list.items.sort((a, b) => (a.metadata!.name! < b.metadata!.name! ? -1 : 1));
    } catch (err) {
      if (err instanceof Refusal) throw err;
      if (sel.name && isKubeStatus(err, 404)) return undefined;
      throw new Refusal([`cannot read the source Secret(s): ${(err as Error).message}`], true);
    }
  }

  /** Every entry to push, per store, `data` and `dataTo` (data-to.ts); throws Refusal
   *  listing every problem. */
  private async wanted(ps: PushSecret, spec: PushSpec, stores: AnySecretStore[], secrets: V1Secret[]): Promise<Map<string, Map<string, Wanted>>> {
    const problems: string[] = [];
    const out = new Map<string, Map<string, Wanted>>(stores.map((s) => [statusStoreKey(s), new Map()]));
    const from = new Map<string, string>();
    const toStores = dataToStores(spec.dataTo, stores);
    problems.push(...toStores.problems);
    // data[].metadata and dataTo[].metadata are provider-specific: each store's provider
    // checks them (once per entry).
    const metadata = new Map<string, PushMetadata | undefined>();
    for (const store of stores) {
      const meta = providerMeta(providerNameOf(store.spec.provider));
      const check = (field: string, raw: unknown, key: string) => {
        if (raw === undefined || raw === null || !meta) return;
        const r = checkPushMetadata(meta, raw, `${field}.metadata`);
        problems.push(...r.problems.map((p) => `${describeStore(store)}: ${p}`));
        metadata.set(`${statusStoreKey(store)}\0${key}`, r.metadata);
      };
      spec.data.forEach((d, i) => check(`spec.data[${i}]`, d.metadata, `${i}`));
      spec.dataTo.forEach((d, i) => toStores.stores[i]!.includes(store) && check(`spec.dataTo[${i}]`, d.metadata, `to${i}`));
    }
    if (problems.length) throw new Refusal(problems, false);
    const add = (store: AnySecretStore, d: PushSecretData, value: Uint8Array, at: { sname: string; metaKey: string }) => {
      const { sname, metaKey } = at;
      const sk = statusStoreKey(store);
      const ek = entryKey(d);
      const seen = from.get(`${sk}\0${ek}`);
      if (seen !== undefined) {
        problems.push(seen === sname
          ? `${describeStore(store)} remote entry "${ek}" would be written twice from Secret "${sname}" (by spec.data and spec.dataTo, or by two entries)`
          : `${describeStore(store)} remote entry "${ek}" would be written twice (Secret "${seen}" and Secret "${sname}"); put {{ .Name }} in remoteRef.remoteKey to write one per Secret`);
        return;
      }
      from.set(`${sk}\0${ek}`, sname);
      out.get(sk)!.set(ek, { store, data: d, value, metadata: metadata.get(`${sk}\0${metaKey}`) });
    };
    // Explicit entries win over dataTo for the same source key (ESO).
    const explicit = new Set(spec.data.map((d) => d.match.secretKey).filter((k): k is string => k !== undefined));
    for (const secret of secrets) {
      const sname = secret.metadata!.name!;
      problems.push(...loopProblems(secret, stores));
      let values: Record<string, Uint8Array>;
      try {
        values = sourceValues(ps, spec, secret, this.d.engine);
      } catch (err) {
        problems.push((err as Error).message);
        continue;
      }
      spec.data.forEach((d0, i) => {
        const d = forSource(d0, sname);
        let value: Uint8Array;
        try {
          value = entryValue(d, values, sname, i);
        } catch (err) {
          if (!(err instanceof MissingKey)) throw err;
          problems.push(err.message);
          return;
        }
        for (const store of stores) add(store, d, value, { sname, metaKey: `${i}` });
      });
      if (!spec.dataTo.length) continue;
      try {
        for (const e of await expandDataTo(spec.dataTo, values, explicit, sname)) {
          for (const store of toStores.stores[e.index]!) add(store, e.data, e.value, { sname, metaKey: `to${e.index}` });
        }
      } catch (err) {
        problems.push((err as Error).message);
      }
    }
    if (problems.length) throw new Refusal(problems, false);
    return out;
  }

  private async sync(ps: PushSecret, spec: PushSpec, targets: { stores: AnySecretStore[]; problems: string[] }, recorded: Synced): Promise<PushOutcome> {
    const ns = ps.metadata.namespace!;
    const { stores, problems } = targets;
    problems.push(...(await storeProblems(stores, this.d.stores)));
    if (problems.length) throw new Refusal(problems, true);
    const secrets = await this.sources(ps);
    if (!secrets) return this.sourceDeleted(ps, spec, recorded);
    const wanted = await this.wanted(ps, spec, stores, secrets);
    const synced: Synced = {};
    const failures: string[] = [];
    let wrote = false;
    await Promise.all(stores.map(async (store) => {
      const sk = statusStoreKey(store);
      const mine = (synced[sk] = {} as Record<string, PushSecretData>);
      const before = recorded[sk] ?? {};
      let client;
      try {
        client = (await this.d.clients.get(store, ns)).fresh;
      } catch (err) {
        failures.push(this.fail(ps, store, '*', err));
        Object.assign(mine, before);
        return;
      }
      const provider = providerNameOf(store.spec.provider);
      for (const [ek, w] of wanted.get(sk)!) {
        const isRecorded = Object.hasOwn(before, ek);
        try {
          const r = await this.locks.run(`${storeId(store)}\0${w.data.match.remoteRef.remoteKey}`, () => pushEntry({
            client: client!, provider, ref: w.data.match.remoteRef, value: w.value, updatePolicy: spec.updatePolicy, recorded: isRecorded,
            metadata: w.metadata, metadataChanged: w.metadata !== undefined && (!isRecorded || !sameMetadata(before[ek]?.metadata, w.data.metadata)),
          }));
          this.d.metrics.push(r);
          if (r === 'written') wrote = true;
          if (r === 'written' || isRecorded || (r === 'equal' && !!providerMeta(provider)?.capabilities.ownershipMark)) mine[ek] = w.data;
        } catch (err) {
          this.d.metrics.push('error');
          failures.push(this.fail(ps, store, ek, err));
          if (isRecorded) mine[ek] = before[ek]!;
        }
      }
      // Entries written before and no longer wanted (data entry removed, Secret unselected).
      for (const [ek, data] of Object.entries(before)) {
        if (wanted.get(sk)!.has(ek)) continue;
        if (spec.deletionPolicy !== 'Delete') continue;
        try {
          await this.locks.run(`${storeId(store)}\0${data.match.remoteRef.remoteKey}`, () => deleteEntry(client!, data.match.remoteRef));
          this.d.metrics.deleted('deleted');
        } catch (err) {
          this.d.metrics.deleted('error');
          failures.push(this.fail(ps, store, ek, err));
          mine[ek] = data;
        }
      }
    }));
    // Stores removed from the spec: what was written there goes too (deletionPolicy Delete).
    const gone = Object.fromEntries(Object.entries(recorded).filter(([sk]) => !wanted.has(sk)));
    if (spec.deletionPolicy === 'Delete') {
      const left = await cleanup(this.cleanupDeps(), ps, gone);
      Object.assign(synced, left.synced);
      failures.push(...left.failures);
    }
    await this.record(ps, synced, failures);
    const n = countEntries(synced);
    const ok = !failures.length;
    const outcome: Outcome = ok
      ? { ready: 'True', reason: 'Synced', message: `${n} remote entr${n === 1 ? 'y' : 'ies'} in sync in ${stores.map(describeStore).join(', ')}`, synced, wrote }
      : { ready: 'False', reason: 'Errored', message: failures.join('; '), synced, wrote };
    if (wrote && ok) this.d.events.emit(regarding(ps), 'Normal', 'Synced', outcome.message);
    await writePushStatus(this.d.rest, ps, outcome);
    return { result: ok ? (wrote ? 'synced' : 'unchanged') : 'error', reason: outcome.reason, requeue: { next: this.nextRun(ps, spec), backoff: !ok } };
  }

  /** The named source Secret is gone: Delete removes what was pushed from it, None keeps it. */
  private async sourceDeleted(ps: PushSecret, spec: PushSpec, recorded: Synced): Promise<PushOutcome> {
    const secret = `Secret "${ps.metadata.namespace}/${ps.spec.selector.secret!.name}"`;
    const had = countEntries(recorded);
    if (!had) throw new Refusal([`${secret} not found; create it or fix spec.selector.secret.name`], true);
    const left = spec.deletionPolicy === 'Delete' ? await cleanup(this.cleanupDeps(), ps, recorded) : { synced: recorded, failures: [] };
    await this.record(ps, left.synced, left.failures);
    const done = spec.deletionPolicy === 'Delete' ? `removed the ${had - countEntries(left.synced)} remote entries it had pushed (deletionPolicy Delete)` : `kept the ${had} remote entries it had pushed (deletionPolicy None)`;
    const message = `${secret} was deleted; ${done}${left.failures.length ? `; ${left.failures.join('; ')}` : ''}`;
    await writePushStatus(this.d.rest, ps, { ready: 'False', reason: 'SourceDeleted', message, synced: left.synced, wrote: false });
    this.d.events.emit(regarding(ps), 'Warning', 'SourceDeleted', message);
    return { result: 'error', reason: 'SourceDeleted', requeue: { next: this.nextRun(ps, spec), backoff: left.failures.length > 0 } };
  }

  /** Records what `ps` wrote; a failure to keep the record is one more failure (retried:
   *  the record is held in memory and written by the next reconcile). */
  private async record(ps: PushSecret, synced: Synced, failures: string[]): Promise<void> {
    try {
      await this.d.records.save(ps, synced);
    } catch (err) {
      failures.push(`the controller cannot keep its record of what was pushed (${(err as Error).message})`);
    }
  }

  /** A per-store failure: Event naming store, entry and cause; the message for status. */
  private fail(ps: PushSecret, store: AnySecretStore, entry: string, err: unknown): string {
    const cause = err instanceof NotOwned ? err.message : (err as Error).message;
    const msg = `${describeStore(store)} entry "${entry}": ${cause}`;
    this.d.events.emit(regarding(ps), 'Warning', 'PushFailed', msg);
    this.d.logger.warn({ pushSecret: `${ps.metadata.namespace}/${ps.metadata.name}`, store: storeId(store), entry, err: cause }, 'push failed');
    return msg;
  }

  /** The next refresh, on the ExternalSecrets' shared epoch-anchored grid (src/controller/externalsecret/refresh.ts). */
  private nextRun(ps: PushSecret, spec: PushSpec): Requeue['next'] {
    if (spec.intervalMs === 0) return 'cancel';
    return nextRefresh(spec.intervalMs, phaseOf(ps.metadata.uid ?? ''), this.d.jitterMaxMs, Date.now());
  }
}
