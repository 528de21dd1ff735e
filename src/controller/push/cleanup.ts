// Removal of remote entries a PushSecret recorded as written (deletionPolicy Delete): on
// deletion of the PushSecret, of its source Secret, and for stores removed from its spec.
// Only the recorded entries are deleted, one by one; a store that no longer exists cannot
// be cleaned and is reported (its entries are dropped from the record), and so is a
// ClusterSecretStore whose conditions no longer admit the namespace: the access rules are
// checked at every write, deletion included (src/stores/access.ts).
import type { PushSecret } from '../../api/types.js';
import { storeId, type ClientCache } from '../clients.js';
import type { EventRecorder } from '../events.js';
import type { Informers } from '../informers.js';
import type { StoreReconciler } from '../stores.js';
import { describeStore, namespaceRefusal } from '../../stores/use.js';
import { deleteEntry, type KeyedMutex } from './remote.js';
import { regarding, type Synced } from './status.js';
import { storeByKey } from './targets.js';

export interface PushMetrics {
  /** One per entry and reconcile: written | equal | exists | error. */
  push(result: string): void;
  deleted(result: 'deleted' | 'error'): void;
}

export interface CleanupDeps {
  informers: Informers;
  stores: StoreReconciler;
  clients: ClientCache;
  events: EventRecorder;
  metrics: PushMetrics;
  locks: KeyedMutex;
}

/** Deletes every entry of `recorded`; returns what could not be deleted and why. */
export async function cleanup(d: CleanupDeps, ps: PushSecret, recorded: Synced): Promise<{ synced: Synced; failures: string[] }> {
  const ns = ps.metadata.namespace!;
  const left: Synced = {};
  const failures: string[] = [];
  await Promise.all(Object.entries(recorded).map(async ([sk, entries]) => {
    if (!Object.keys(entries).length) return;
    const store = storeByKey(d.informers, ns, sk);
    if (!store || !d.stores.served(store)) {
      d.events.emit(regarding(ps), 'Warning', 'DeleteSkipped', `${sk} no longer exists or is served by another controller; its ${Object.keys(entries).length} remote entries were not deleted`);
      return;
    }
    const notAdmitted = namespaceRefusal(store, d.informers, ns);
    if (notAdmitted) {
      d.events.emit(regarding(ps), 'Warning', 'DeleteSkipped', `${notAdmitted}; its ${Object.keys(entries).length} remote entries were not deleted`);
      return;
    }
    let client;
    try {
      client = (await d.clients.get(store, ns)).fresh;
    } catch (err) {
      failures.push(`${describeStore(store)}: ${(err as Error).message}`);
      left[sk] = { ...entries };
      return;
    }
    for (const [ek, data] of Object.entries(entries)) {
      try {
        await d.locks.run(`${storeId(store)}\0${data.match.remoteRef.remoteKey}`, () => deleteEntry(client!, data.match.remoteRef));
        d.metrics.deleted('deleted');
      } catch (err) {
        d.metrics.deleted('error');
        const msg = `${describeStore(store)} entry "${ek}": cannot delete: ${(err as Error).message}`;
        d.events.emit(regarding(ps), 'Warning', 'DeleteFailed', msg);
        failures.push(msg);
        (left[sk] ??= {})[ek] = data;
      }
    }
  }));
  return { synced: left, failures };
}
