// The stores one ExternalSecret reads from — `spec.secretStoreRef` and each entry's own
// `sourceRef.storeRef` (ESO's several stores in one ExternalSecret, ADR 0066) — looked up in
// the controller's caches. Every store gets the same rules, from the same place as a single
// store always had (src/stores/use.ts): a SecretStore is looked up in the ExternalSecret's
// own namespace only (a reference carries no namespace), a ClusterSecretStore must admit that
// namespace (spec.conditions) and must not reference credentials elsewhere, and no store may
// lend the controller's own identity (src/controller/runtime/clients.ts).
import type { AnySecretStore, ExternalSecret } from '../../api/types.js';
import type { KubeRest } from '../../kube/rest.js';
import { nameProblem } from '../../kube/names.js';
import { storeIdOf } from '../../stores/id.js';
import { crossNamespaceRefs, describeStore, lookupStore, namespaceRefusal, storeNotFound } from '../../stores/use.js';
import type { UsedStoreRef } from '../../externalsecret/store-refs.js';
import type { ClientCache } from '../runtime/clients.js';
import { Failure, IdentityRefusal } from './fetch.js';
import type { Informers } from '../runtime/informers.js';
import { storePath, type StoreReconciler } from '../secretstore/reconcile.js';

export interface StoreLookupDeps {
  informers: Informers;
  rest: KubeRest;
  stores: StoreReconciler;
}

/** The stores `refs` name for `es`, or why the reconcile waits: `StoreNotCached` (the API has
 *  a store the cache does not show yet) or `OtherClass` (a store belongs to another
 *  controller: as ESO, the whole ExternalSecret is then left to it). Throws Failure. */
export async function lookupStores(es: ExternalSecret, refs: readonly UsedStoreRef[], d: StoreLookupDeps): Promise<{ stores: AnySecretStore[] } | { skip: 'StoreNotCached' | 'OtherClass' }> {
  const ns = es.metadata.namespace!;
  for (const ref of refs) {
    const bad = nameProblem(ref.name, 'subdomain');
    if (bad) throw new Failure('InvalidSpec', `ExternalSecret "${es.metadata.name}": ${ref.field}.name ${bad}`, false);
  }
  const stores: AnySecretStore[] = [];
  for (const ref of refs) {
    const obj = lookupStore(d.informers, ref, ns);
    if (obj) {
      stores.push(obj);
      continue;
    }
    // A cache miss is not proof: the store's add event can arrive after the
    // ExternalSecret's. A store that exists may be another controller's class, and a
    // StoreNotFound written from this lagging cache would overwrite the status its own
    // controller wrote (nothing would ever rewrite it). So only a store the API confirms
    // missing is reported; otherwise wait for the cache (the store's add event, or the retry).
    if (await d.rest.exists(storePath(ref.kind, ns, ref.name))) return { skip: 'StoreNotCached' };
    throw new Failure('StoreNotFound', storeNotFound(ref, ns, ref.field), true); // retried with backoff
  }
  if (!stores.every((s) => d.stores.served(s))) return { skip: 'OtherClass' };
  return { stores };
}

/** The access rules, for each store the ExternalSecret uses; throws Failure (AccessDenied). */
export function checkStoreAccess(es: ExternalSecret, stores: readonly AnySecretStore[], d: { informers: Informers; clients: ClientCache }): void {
  const ns = es.metadata.namespace!;
  for (const store of stores) {
    const notAdmitted = namespaceRefusal(store, d.informers, ns);
    if (notAdmitted) throw new Failure('AccessDenied', notAdmitted, false);
    if (store.kind === 'ClusterSecretStore') {
      const cross = crossNamespaceRefs(store.spec.provider, ns);
      if (cross.length) throw new Failure('AccessDenied', `${describeStore(store)}: ${cross.join('; ')}`, false);
    }
    const refused = d.clients.identityProblem(store);
    if (refused) throw new IdentityRefusal(`${describeStore(store)}: ${refused}`);
  }
}

/** Each store's readiness (validated once per generation); throws Failure (StoreNotReady). */
export async function ensureStoresReady(stores: readonly AnySecretStore[], d: { stores: StoreReconciler }): Promise<void> {
  for (const store of stores) {
    const st = await d.stores.ensure(store);
    if (!st.ready) throw new Failure('StoreNotReady', `${describeStore(store)} is not ready: ${st.message}`, false);
  }
}

/** The ids of the stores `refs` name for an ExternalSecret in `ns` (the dependents index). */
export function storeIdsOf(refs: readonly UsedStoreRef[], ns: string): string[] {
  return refs.map((r) => storeIdOf(r.kind, r.name, ns));
}
