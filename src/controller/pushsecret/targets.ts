// The stores a PushSecret writes to: spec.secretStoreRefs by name or labelSelector, kind
// SecretStore (the PushSecret's namespace) or ClusterSecretStore. The same access rules as
// ExternalSecrets apply: the controller class (stores of another class are another
// controller's business and are left out), ClusterSecretStore conditions, the store's
// readiness, and its capabilities (a store that cannot write refuses pushes).
import type { V1Secret } from '@kubernetes/client-node';
import type { AnySecretStore, PushSecret } from '../../api/types.js';
import { loadProvider, providerNameOf } from '../../providers/registry.js';
import { matchesLabelSelector } from '../../stores/access.js';
import type { Informers } from '../runtime/informers.js';
import { SOURCE_STORE_ANNOTATION, STORE_KIND_LABEL, STORE_LABEL, labelValue } from '../runtime/labels.js';
import type { KubeRest } from '../../kube/rest.js';
import type { ClientCache } from '../runtime/clients.js';
import { storePath, type StoreReconciler } from '../secretstore/reconcile.js';
import { describeStore, lookupStore, namespaceRefusal, storeNotFound } from '../../stores/use.js';
import type { Synced } from './status.js';

/** `SecretStore/<name>` or `ClusterSecretStore/<name>`: the store key of status.syncedPushSecrets. */
export function statusStoreKey(store: { kind?: string; metadata: { name?: string } }): string {
  return `${store.kind ?? 'SecretStore'}/${store.metadata.name}`;
}

export interface Targets {
  /** Served stores, in spec order, without duplicates. */
  stores: AnySecretStore[];
  problems: string[];
  /** Stores the controller may not use at all: they would authenticate with its own identity. */
  denied: string[];
}

/** The stores the refs name or select (served by this controller) and what is wrong with them. */
export function resolveStores(ps: PushSecret, informers: Informers, stores: StoreReconciler, clients: Pick<ClientCache, 'identityProblem'>): Targets {
  const ns = ps.metadata.namespace!;
  const out = new Map<string, AnySecretStore>();
  const problems: string[] = [];
  (ps.spec.secretStoreRefs ?? []).forEach((ref, i) => {
    const kind = ref.kind ?? 'SecretStore';
    if (ref.name) {
      const store = lookupStore(informers, { kind, name: ref.name }, ns);
      if (!store) problems.push(storeNotFound({ kind, name: ref.name }, ns, `spec.secretStoreRefs[${i}]`));
      else if (stores.served(store)) out.set(statusStoreKey(store), store);
      return;
    }
    const all = kind === 'ClusterSecretStore' ? informers.clusterSecretStores() : informers.secretStores(ns);
    for (const s of all) if (stores.served(s) && matchesLabelSelector(ref.labelSelector!, s.metadata.labels ?? {})) out.set(statusStoreKey(s), s);
  });
  const denied: string[] = [];
  for (const store of out.values()) {
    const refused = clients.identityProblem(store);
    if (refused) denied.push(`${describeStore(store)}: ${refused}`);
    const notAdmitted = namespaceRefusal(store, informers, ns);
    if (notAdmitted) problems.push(notAdmitted);
  }
  return { stores: [...out.values()], problems, denied };
}

/** The store a status store key (`SecretStore/<name>`, `ClusterSecretStore/<name>`) names, from the cache. */
export function storeByKey(informers: Informers, ns: string, key: string): AnySecretStore | undefined {
  const i = key.indexOf('/');
  const name = key.slice(i + 1);
  return key.slice(0, i) === 'ClusterSecretStore' ? informers.clusterSecretStore(name) : informers.secretStore(ns, name);
}

/** Whose PushSecret this is: 'mine' when this controller serves a store it targets or holds
 *  recorded entries in, or when none of the stores it names, selects or recorded exists (so
 *  someone reports that, and lets a deleted one go); 'wait' when such a store exists but is
 *  not in this cache yet; else 'other'. The finalizer is the same for every controller and
 *  tells nothing: a controller of another class that finalized the PushSecret would skip the
 *  cleanup (not its stores), remove the finalizer, and the entries would outlive it. */
export async function concern(ps: PushSecret, targets: Targets, recorded: Synced, d: { informers: Informers; stores: StoreReconciler; rest: KubeRest }): Promise<'mine' | 'other' | 'wait'> {
  if (targets.stores.length) return 'mine';
  const { informers, stores, rest } = d;
  const ns = ps.metadata.namespace!;
  const keys = new Set(Object.keys(recorded).filter((k) => Object.keys(recorded[k]!).length));
  for (const ref of ps.spec.secretStoreRefs ?? []) {
    const kind = ref.kind ?? 'SecretStore';
    if (ref.name) keys.add(`${kind}/${ref.name}`);
    else for (const s of kind === 'ClusterSecretStore' ? informers.clusterSecretStores() : informers.secretStores(ns)) {
      if (matchesLabelSelector(ref.labelSelector!, s.metadata.labels ?? {})) keys.add(statusStoreKey(s));
    }
  }
  const missing: string[] = [];
  for (const key of keys) {
    // Scoped mode serves no cluster kind: such a store is another controller's.
    if (!informers.clusterKinds && key.startsWith('ClusterSecretStore/')) continue;
    const store = storeByKey(informers, ns, key);
    if (store && stores.served(store)) return 'mine';
    if (!store) missing.push(key);
  }
  for (const key of missing) {
    const i = key.indexOf('/');
    if (await rest.exists(storePath(key.slice(0, i), ns, key.slice(i + 1)))) return 'wait';
  }
  return missing.length === keys.size ? 'mine' : 'other';
}

/** Readiness and write capability of each store (I/O: validation, provider load). */
export async function storeProblems(
  targets: AnySecretStore[],
  stores: Pick<StoreReconciler, 'ensure'>,
  load: (name: string) => Promise<{ capabilities: { write: boolean } }> = loadProvider,
): Promise<string[]> {
  const problems: string[] = [];
  for (const store of targets) {
    const st = await stores.ensure(store);
    if (!st.ready) {
      problems.push(`${describeStore(store)} is not ready: ${st.message}`);
      continue;
    }
    const name = providerNameOf(store.spec.provider);
    const provider = await load(name);
    if (!provider.capabilities.write) problems.push(`${describeStore(store)} is ReadOnly (provider "${name}" cannot write); PushSecret needs a store that can write`);
  }
  return problems;
}

/** The stores a Secret's values came from, as the ExternalSecret that wrote it labelled it
 *  (several, comma-separated, when its entries name their own stores). */
function sourceStoresOf(secret: V1Secret): { kind: string; name?: string; label?: string }[] {
  const exact = secret.metadata?.annotations?.[SOURCE_STORE_ANNOTATION];
  const parsed = (exact ?? '').split(',').map((x) => /^(SecretStore|ClusterSecretStore)\/(.+)$/.exec(x)).filter((m) => !!m);
  if (parsed.length) return parsed.map((m) => ({ kind: m[1]!, name: m[2]! }));
  const kind = secret.metadata?.labels?.[STORE_KIND_LABEL];
  const label = secret.metadata?.labels?.[STORE_LABEL];
  return kind && label ? [{ kind, label }] : [];
}

/** Refusals of pushing `secret` back into a store its values came from (a loop). */
export function loopProblems(secret: V1Secret, targets: AnySecretStore[]): string[] {
  const froms = sourceStoresOf(secret);
  const out: string[] = [];
  for (const store of targets) {
    const same = froms.some((from) => store.kind === from.kind && (from.name !== undefined ? from.name === store.metadata.name : from.label === labelValue(store.metadata.name!)));
    if (!same) continue;
    out.push(`Secret "${secret.metadata?.name}" was written by an ExternalSecret from ${describeStore(store)} (labels ${STORE_KIND_LABEL}/${STORE_LABEL}); ` +
      'pushing it back into the store it came from is refused: remove that store from spec.secretStoreRefs');
  }
  return out;
}
