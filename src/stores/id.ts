// The one spelling of a store's identity: `ClusterSecretStore/<name>` or
// `SecretStore/<namespace>/<name>`. It keys the agent configuration's stores, the
// reconciler's clients, rate limits, metrics series and logs; one format, one place.
import type { AnySecretStore } from '../api/types.js';

export type StoreKind = 'SecretStore' | 'ClusterSecretStore';

/** The id of the store `kind`/`name` (a SecretStore in `namespace`). */
export function storeIdOf(kind: StoreKind, name: string, namespace?: string): string {
  return kind === 'ClusterSecretStore' ? `ClusterSecretStore/${name}` : `SecretStore/${namespace}/${name}`;
}

export function storeId(store: AnySecretStore): string {
  return storeIdOf(store.kind === 'ClusterSecretStore' ? 'ClusterSecretStore' : 'SecretStore', store.metadata.name!, store.metadata.namespace);
}
