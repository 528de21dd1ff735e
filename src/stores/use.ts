// Using a store: looking up the SecretStore or ClusterSecretStore an object names, how
// messages name a store, and the rules of using it from a namespace, with one message set
// (not found, a class this instance does not serve, a namespace the store does not admit,
// references to another namespace). The webhook (webhook/resolve.ts), the ExternalSecret
// reconciler (src/controller/externalsecret/reconcile.ts) and the PushSecret reconciler
// (src/controller/pushsecret/) all say the same thing for the same rule.
import type { V1Namespace } from '@kubernetes/client-node';
import type { AnySecretStore, ClusterSecretStore, SecretStore, SecretStoreProvider } from '../api/types.js';
import { clusterStoreAdmits, referencedObjects } from './access.js';
import type { StoreKind } from './id.js';

/** Where stores and namespaces are read from (watch-backed caches, or parsed files). */
export interface StoreLookup {
  secretStore(namespace: string, name: string): SecretStore | undefined;
  clusterSecretStore(name: string): ClusterSecretStore | undefined;
  namespace(name: string): V1Namespace | undefined;
}

/** A reference to a store: `spec.secretStoreRef`, an entry of `spec.secretStoreRefs`. */
export interface StoreRef {
  kind?: string;
  name: string;
}

/** The kind a reference names; SecretStore when it names none (as ESO defaults it). */
export function storeKindOf(ref: { kind?: string }): StoreKind {
  return ref.kind === 'ClusterSecretStore' ? 'ClusterSecretStore' : 'SecretStore';
}

/** How every message names a store: `ClusterSecretStore "<name>"`, `SecretStore "<namespace>/<name>"`. */
export function describeStoreRef(kind: string | undefined, name: string, namespace: string | undefined): string {
  return kind === 'ClusterSecretStore' ? `ClusterSecretStore "${name}"` : `SecretStore "${namespace}/${name}"`;
}

export function describeStore(store: AnySecretStore): string {
  return describeStoreRef(store.kind, store.metadata.name!, store.metadata.namespace);
}

/** The store `ref` names for an object in `namespace` (a SecretStore is always of that namespace). */
export function lookupStore(lookup: Pick<StoreLookup, 'secretStore' | 'clusterSecretStore'>, ref: StoreRef, namespace: string): AnySecretStore | undefined {
  return storeKindOf(ref) === 'ClusterSecretStore' ? lookup.clusterSecretStore(ref.name) : lookup.secretStore(namespace, ref.name);
}

/** The store `ref` (at spec `field`) names does not exist. */
export function storeNotFound(ref: StoreRef, namespace: string, field: string): string {
  return `${describeStoreRef(storeKindOf(ref), ref.name, namespace)} not found; create it or fix ${field}`;
}

/** The store's class is not one this instance serves (`classes`: the ones it does), for
 *  an object in `namespace`. */
export function classNotServed(store: AnySecretStore, classes: readonly string[], namespace: string): string {
  return `${describeStoreRef(store.kind, store.metadata.name!, namespace)}: spec.controller "${store.spec.controller ?? ''}" is not served by this ESI instance (it serves: ${classes.map((c) => `"${c}"`).join(', ')})`;
}

/** Why a ClusterSecretStore may not be used from `namespace` (its spec.conditions), or
 *  undefined; a SecretStore is always usable from its own namespace. */
export function namespaceRefusal(store: AnySecretStore, lookup: Pick<StoreLookup, 'namespace'>, namespace: string): string | undefined {
  if (store.kind !== 'ClusterSecretStore') return undefined;
  const ns = lookup.namespace(namespace);
  const verdict = ns ? clusterStoreAdmits(store, ns) : { ok: false, why: `namespace "${namespace}" is not known yet; retry` };
  return verdict.ok ? undefined : `${describeStore(store)} may not be used from namespace "${namespace}": ${verdict.why}`;
}

/** A credential (`kind` "ns/name", at spec `path`) outside the namespace the store is used from. */
export function credentialElsewhere(path: string, kind: string, ref: { namespace: string; name: string }, namespace: string): string {
  return `${path} references ${kind} "${ref.namespace}/${ref.name}" in another namespace; ESI reads store credentials only from namespace "${namespace}", where the store is used — use pod identity or a SecretStore in "${namespace}"`;
}

/** A ServiceAccount outside the namespace the store is used from. */
export function serviceAccountElsewhere(path: string, ref: { namespace: string; name: string }, namespace: string): string {
  return `${path} names ServiceAccount "${ref.namespace}/${ref.name}" in another namespace; ESI requests tokens only for ServiceAccounts in namespace "${namespace}"`;
}

/** The credential references of a store that point outside `namespace`, the namespace the
 *  store is used from: ESI reads credentials only there. */
export function crossNamespaceCredentials(provider: SecretStoreProvider, namespace: string): string[] {
  return referencedObjects(provider).credentials
    .filter((c) => c.namespace && c.namespace !== namespace)
    .map((c) => credentialElsewhere(c.path, c.kind, { namespace: c.namespace!, name: c.name }, namespace));
}

/** The credential and ServiceAccount references of a store that point outside `namespace`:
 *  ESI reads credentials and requests tokens only there. */
export function crossNamespaceRefs(provider: SecretStoreProvider, namespace: string): string[] {
  const elsewhere = referencedObjects(provider).serviceAccounts
    .filter((sa) => sa.namespace && sa.namespace !== namespace)
    .map((sa) => serviceAccountElsewhere(sa.path, { namespace: sa.namespace!, name: sa.name }, namespace));
  return [...crossNamespaceCredentials(provider, namespace), ...elsewhere];
}
