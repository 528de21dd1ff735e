// TypeScript shapes of the cluster-scoped kinds that provision namespaced objects:
// ClusterExternalSecret (v1) and ClusterPushSecret (v1alpha1), with ESO's field names
// (docs/controller.md). Imported from here: they build on types.ts, which does not
// re-export them (no import cycle).
import type { V1LabelSelector, V1ObjectMeta } from '@kubernetes/client-node';
import type {
  Condition, Duration, EXTERNAL_SECRET_API_VERSION, ExternalSecretSpec, KIND_CLUSTER_EXTERNAL_SECRET, KIND_CLUSTER_PUSH_SECRET,
  PUSH_SECRET_API_VERSION, PushSecretSpec,
} from './types.js';

/** Labels and annotations of the namespaced objects a cluster kind writes. */
export interface TemplatedObjectMetadata {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface NamespaceFailure {
  namespace: string;
  reason?: string;
}

export interface ClusterExternalSecretSpec {
  externalSecretSpec: ExternalSecretSpec;
  /** The ClusterExternalSecret's name when omitted. */
  externalSecretName?: string;
  externalSecretMetadata?: TemplatedObjectMetadata;
  /** Deprecated upstream in favour of `namespaceSelectors`. */
  namespaceSelector?: V1LabelSelector;
  namespaceSelectors?: V1LabelSelector[];
  namespaces?: string[];
  /** How often the namespace selection is re-evaluated. */
  refreshTime?: Duration;
}

export interface ClusterExternalSecretStatus {
  conditions?: Condition[];
  externalSecretName?: string;
  provisionedNamespaces?: string[];
  failedNamespaces?: NamespaceFailure[];
}

export interface ClusterExternalSecret {
  apiVersion: typeof EXTERNAL_SECRET_API_VERSION;
  kind: typeof KIND_CLUSTER_EXTERNAL_SECRET;
  metadata: V1ObjectMeta;
  spec: ClusterExternalSecretSpec;
  status?: ClusterExternalSecretStatus;
}

export interface ClusterPushSecretSpec {
  pushSecretSpec: PushSecretSpec;
  /** The ClusterPushSecret's name when omitted. */
  pushSecretName?: string;
  pushSecretMetadata?: TemplatedObjectMetadata;
  namespaceSelectors?: V1LabelSelector[];
  refreshTime?: Duration;
}

export interface ClusterPushSecretStatus {
  conditions?: Condition[];
  pushSecretName?: string;
  provisionedNamespaces?: string[];
  failedNamespaces?: NamespaceFailure[];
}

export interface ClusterPushSecret {
  apiVersion: typeof PUSH_SECRET_API_VERSION;
  kind: typeof KIND_CLUSTER_PUSH_SECRET;
  metadata: V1ObjectMeta;
  spec: ClusterPushSecretSpec;
  status?: ClusterPushSecretStatus;
}
