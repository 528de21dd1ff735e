// Removal of remote entries a PushSecret recorded as written (deletionPolicy Delete): on
// deletion of the PushSecret, of its source Secret, and for stores removed from its spec.
// Only the recorded entries are deleted, one by one; a store that no longer exists cannot
// be cleaned and is reported (its entries are dropped from the record), and so is a
// ClusterSecretStore whose conditions no longer admit the namespace: the access rules are
// checked at every write, deletion included (src/stores/access.ts). Entries that cannot be
// deleted stay recorded (the caller retries), unless the caller lets them go (`letGo`: a
// namespace whose deletion removed the store's credential, abandon.ts); every entry left in
// a store untracked is named in an Event and a log line and counted (leftBehind).
import type { Logger } from 'pino';
import type { AnySecretStore, PushSecret, PushSecretData } from '../../api/types.js';
import type { ClientCache } from '../runtime/clients.js';
import { storeId } from '../../stores/id.js';
import type { EventRecorder } from '../runtime/events.js';
import type { Informers } from '../runtime/informers.js';
import type { StoreReconciler } from '../secretstore/reconcile.js';
import { describeStore, namespaceRefusal } from '../../stores/use.js';
import { deleteEntry, type KeyedMutex } from './remote.js';
import { regarding, type Synced } from './status.js';
import { storeByKey } from './targets.js';
import { leftBehind } from './abandon.js';

export interface PushMetrics {
  /** One per entry and reconcile: written | equal | exists | error. */
  push(result: string): void;
  deleted(result: 'deleted' | 'error'): void;
  /** One per remote entry left in a store and no longer tracked, by store id and why. */
  left(store: string, reason: LeftReason): void;
}

/** Why remote entries were left in a store: the store is gone (or another controller's), its
 *  conditions no longer admit the namespace, or the namespace's deletion removed its credential. */
export type LeftReason = 'StoreGone' | 'NotAdmitted' | 'NamespaceDeleted';

/** Whether the entries of `store` that could not be deleted (with these errors) are let go. */
export type LetGo = (store: AnySecretStore, errors: unknown[]) => Promise<boolean>;

export interface CleanupDeps {
  informers: Informers;
  stores: StoreReconciler;
  clients: ClientCache;
  events: EventRecorder;
  metrics: PushMetrics;
  locks: KeyedMutex;
  logger: Logger;
}

/** Deletes every entry of `recorded`; returns what could not be deleted and why. */
export async function cleanup(d: CleanupDeps, ps: PushSecret, recorded: Synced, letGo?: LetGo): Promise<{ synced: Synced; failures: string[] }> {
  const ns = ps.metadata.namespace!;
  const left: Synced = {};
  const failures: string[] = [];
  await Promise.all(Object.entries(recorded).map(async ([sk, entries]) => {
    if (!Object.keys(entries).length) return;
    const store = storeByKey(d.informers, ns, sk);
    if (!store || !d.stores.served(store)) {
      leftBehind(d, ps, { key: sk, store }, entries, 'StoreGone', `${sk} no longer exists or is served by another controller`);
      return;
    }
    const notAdmitted = namespaceRefusal(store, d.informers, ns);
    if (notAdmitted) {
      leftBehind(d, ps, { key: sk, store }, entries, 'NotAdmitted', notAdmitted);
      return;
    }
    const errors: unknown[] = [];
    // The failed entries, each with its message and whether it has its own Event.
    const failed: { ek: string; data: PushSecretData; msg?: string }[] = [];
    let client;
    try {
      client = (await d.clients.get(store, ns)).fresh;
    } catch (err) {
      errors.push(err);
      for (const [ek, data] of Object.entries(entries)) failed.push({ ek, data });
    }
    for (const [ek, data] of client ? Object.entries(entries) : []) {
      try {
        await d.locks.run(`${storeId(store)}\0${data.match.remoteRef.remoteKey}`, () => deleteEntry(client!, data.match.remoteRef));
        d.metrics.deleted('deleted');
      } catch (err) {
        d.metrics.deleted('error');
        errors.push(err);
        failed.push({ ek, data, msg: `${describeStore(store)} entry "${ek}": cannot delete: ${(err as Error).message}` });
      }
    }
    if (!failed.length) return;
    if (letGo && await letGo(store, errors)) {
      leftBehind(d, ps, { key: sk, store }, Object.fromEntries(failed.map((f) => [f.ek, f.data])), 'NamespaceDeleted',
        `the deletion of namespace "${ns}" removed what ${describeStore(store)} authenticates with`);
      return;
    }
    if (!client) failures.push(`${describeStore(store)}: ${(errors[0] as Error).message}`);
    for (const f of failed) {
      (left[sk] ??= {})[f.ek] = f.data;
      if (!f.msg) continue;
      d.events.emit(regarding(ps), 'Warning', 'DeleteFailed', f.msg);
      failures.push(f.msg);
    }
  }));
  return { synced: left, failures };
}
