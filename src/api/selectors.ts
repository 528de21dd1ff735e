// References from a store's spec to the objects holding its credentials and CA: shared by
// every provider's configuration (src/api/providers.ts, src/api/providers-http.ts).

/** A key of a Kubernetes Secret that holds a credential. `namespace` only on ClusterSecretStores. */
export interface SecretKeySelector {
  name: string;
  /** The key inside the Secret's data. */
  key?: string;
  namespace?: string;
}

/** A service account whose token authenticates to the store (pod identity where possible). */
export interface ServiceAccountSelector {
  name: string;
  namespace?: string;
  /** Audiences of the requested token, in addition to the provider's own default. */
  audiences?: string[];
}

/** Where a CA certificate used to verify the store's TLS certificate is kept. */
export interface CAProvider {
  type: 'Secret' | 'ConfigMap';
  name: string;
  key?: string;
  namespace?: string;
}
