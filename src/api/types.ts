// TypeScript shapes of the external-secrets.io API ESI serves: ExternalSecret,
// SecretStore and ClusterSecretStore at v1, PushSecret at v1alpha1 (docs/design.md, "The external-secrets.io API").
// Field names and meanings are those of the public API (External Secrets Operator v1);
// the CRD schemas in charts/esi/files/crds/ validate them. Provider specs live in providers.ts.
// Optional fields stay optional: the CRDs set no defaults, the code applies them.
import type { V1LabelSelector, V1ObjectMeta } from '@kubernetes/client-node';
import type { Condition } from './condition.js';
import type { SecretStoreProvider } from './providers.js';

export * from './providers.js';
export * from './condition.js';
export * from './generators.js';
// The cluster kinds (./cluster-types.ts) build on these types and are imported from there.

export const API_GROUP = 'external-secrets.io';
export const API_VERSION_V1 = 'v1';
export const API_VERSION_V1ALPHA1 = 'v1alpha1';
export const EXTERNAL_SECRET_API_VERSION = `${API_GROUP}/${API_VERSION_V1}`;
export const PUSH_SECRET_API_VERSION = `${API_GROUP}/${API_VERSION_V1ALPHA1}`;

export const KIND_EXTERNAL_SECRET = 'ExternalSecret';
export const KIND_CLUSTER_EXTERNAL_SECRET = 'ClusterExternalSecret';
export const KIND_CLUSTER_PUSH_SECRET = 'ClusterPushSecret';

// ---------------------------------------------------------------- shared

export type StoreKind = 'SecretStore' | 'ClusterSecretStore';

/** A reference to a SecretStore (same namespace) or a ClusterSecretStore. */
export interface SecretStoreRef {
  name: string;
  /** `SecretStore` when omitted. */
  kind?: StoreKind;
}

/** A reference to a generator resource (generators.external-secrets.io, src/api/generators.ts). */
export interface GeneratorRef {
  apiVersion?: string;
  kind: string;
  name: string;
}

/** Go duration strings, e.g. `1h`, `15m`, `1h30m`, `500ms`; `0` disables refreshing. */
export type Duration = string;

export type ConversionStrategy = 'Default' | 'Unicode';
export type DecodingStrategy = 'Auto' | 'Base64' | 'Base64URL' | 'None';
export type MetadataPolicy = 'None' | 'Fetch';
/** `Ignore` (default): values with NUL bytes are kept; `Fail`: such a value is an error. */
export type NullBytePolicy = 'Ignore' | 'Fail';

// ---------------------------------------------------------------- ExternalSecret

/** What to read from the store: one remote secret, narrowed by property and version. */
export interface ExternalSecretDataRemoteRef {
  key: string;
  /** A field of a structured (JSON) remote secret; dots address nested fields. */
  property?: string;
  version?: string;
  /** `Default` when omitted. */
  conversionStrategy?: ConversionStrategy;
  /** `None` when omitted. */
  decodingStrategy?: DecodingStrategy;
  /** `None` (read the value, default) or `Fetch` (read the remote secret's metadata/tags). */
  metadataPolicy?: MetadataPolicy;
  nullBytePolicy?: NullBytePolicy;
}

/** Overrides the ExternalSecret's store for one `data` entry, or reads from a generator. */
export interface StoreSourceRef {
  storeRef?: SecretStoreRef;
  generatorRef?: GeneratorRef;
}

/** Overrides the store for one `dataFrom` entry, or reads from a generator. */
export interface StoreGeneratorSourceRef {
  storeRef?: SecretStoreRef;
  generatorRef?: GeneratorRef;
}

export interface ExternalSecretData {
  /** The key in the target Secret (and, for ESI, the file name). */
  secretKey: string;
  remoteRef: ExternalSecretDataRemoteRef;
  sourceRef?: StoreSourceRef;
}

/** `dataFrom[].find`: every remote secret whose name matches / which carries the tags. */
export interface ExternalSecretFind {
  /** Only secrets under this path / prefix. */
  path?: string;
  name?: { regexp: string };
  tags?: Record<string, string>;
  conversionStrategy?: ConversionStrategy;
  decodingStrategy?: DecodingStrategy;
  nullBytePolicy?: NullBytePolicy;
}

export interface ExternalSecretRewriteRegexp {
  /** A regular expression matched against each key. */
  source: string;
  /** The replacement; `$1` etc. refer to groups of `source`. */
  target: string;
}

export interface ExternalSecretRewriteTransform {
  /** A template rendered with `.value` bound to the key. */
  template: string;
}

/** Merges the fetched JSON objects (src/externalsecret/rewrite-merge.ts). */
export interface ExternalSecretRewriteMerge {
  conflictPolicy?: 'Ignore' | 'Error';
  into?: string;
  priority?: string[];
  priorityPolicy?: 'IgnoreNotFound' | 'Strict';
  strategy?: 'Extract' | 'JSON';
}

/** One rewrite step applied to the keys of a `dataFrom` entry (steps chain in order). */
export interface ExternalSecretRewrite {
  regexp?: ExternalSecretRewriteRegexp;
  /** A Go template (ESO engine v2) rendering each key, rendered by ESI's Go template engine. */
  transform?: ExternalSecretRewriteTransform;
  merge?: ExternalSecretRewriteMerge;
}

/** One `dataFrom` entry: exactly one of `extract`, `find` or `sourceRef.generatorRef`. */
export interface ExternalSecretDataFromRemoteRef {
  /** All properties of one structured remote secret. */
  extract?: ExternalSecretDataRemoteRef;
  find?: ExternalSecretFind;
  rewrite?: ExternalSecretRewrite[];
  sourceRef?: StoreGeneratorSourceRef;
}

export type TemplateEngineVersion = 'v1' | 'v2';
export type TemplateMergePolicy = 'Replace' | 'Merge';
export type TemplateScope = 'Values' | 'KeysAndValues';
/** `Data`, `Annotations`, `Labels` (upstream may add more: the CRD accepts any string). */
export type TemplateTarget = 'Data' | 'Annotations' | 'Labels' | (string & {});

export interface TemplateRefItem {
  key: string;
  /** `Values` when omitted: render the value; `KeysAndValues` renders both. */
  templateAs?: TemplateScope;
}

/** A ConfigMap or Secret (same namespace) whose keys are templates. */
export interface TemplateRef {
  name: string;
  items?: TemplateRefItem[];
}

export interface TemplateFrom {
  configMap?: TemplateRef;
  secret?: TemplateRef;
  /** `Data` when omitted: where the rendered result goes. */
  target?: TemplateTarget;
  /** An inline template. */
  literal?: string;
  /** How values of configMap / secret sources are decoded. */
  valuesDecodingStrategy?: DecodingStrategy;
}

export interface ExternalSecretTemplateMetadata {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
}

/** The blueprint of the target Secret: Go templates (ESO engine v2), or handlebars when the
 *  ExternalSecret opts in (see src/templating/eso.ts). */
export interface ExternalSecretTemplate {
  /** Secret type, e.g. `kubernetes.io/dockerconfigjson`. */
  type?: string;
  engineVersion?: TemplateEngineVersion;
  /** `Replace` when omitted: rendered data replaces fetched data; `Merge` keeps both. */
  mergePolicy?: TemplateMergePolicy;
  metadata?: ExternalSecretTemplateMetadata;
  data?: Record<string, string>;
  templateFrom?: TemplateFrom[];
}

export type CreationPolicy = 'Owner' | 'Orphan' | 'Merge' | 'None' | 'CreateOrMerge';
export type DeletionPolicy = 'Delete' | 'Merge' | 'Retain';

/** The Kubernetes Secret the reconciler writes (ignored by the injector, which writes files). */
export interface ExternalSecretTarget {
  /** The ExternalSecret's name when omitted. */
  name?: string;
  /** `Owner` when omitted. */
  creationPolicy?: CreationPolicy;
  /** `Retain` when omitted. */
  deletionPolicy?: DeletionPolicy;
  template?: ExternalSecretTemplate;
  immutable?: boolean;
  /** Write another kind of object instead of a Secret (reconciler only). */
  manifest?: { apiVersion: string; kind: string };
}

/** Windows in which syncing is allowed or denied (accepted; ESI refuses it at admission). */
export interface SyncWindows {
  kind: 'allow' | 'deny';
  windows: { schedule?: string; duration?: string }[];
}

export type RefreshPolicy = 'CreatedOnce' | 'Periodic' | 'OnChange';

export interface ExternalSecretSpec {
  /** Optional only when every data/dataFrom entry names its own sourceRef. */
  secretStoreRef?: SecretStoreRef;
  target?: ExternalSecretTarget;
  /** `1h` when omitted; `0` never refreshes. */
  refreshInterval?: Duration;
  /** `Periodic` when omitted. */
  refreshPolicy?: RefreshPolicy;
  data?: ExternalSecretData[];
  dataFrom?: ExternalSecretDataFromRemoteRef[];
  syncWindows?: SyncWindows;
}

export interface ExternalSecretStatus {
  conditions?: Condition[];
  /** When the values were last fetched (RFC 3339). */
  refreshTime?: string;
  /** A hash of the ExternalSecret's metadata and spec the last sync used. */
  syncedResourceVersion?: string;
  /** The target Secret, once written. */
  binding?: { name?: string };
}

export interface ExternalSecret {
  apiVersion: typeof EXTERNAL_SECRET_API_VERSION;
  kind: typeof KIND_EXTERNAL_SECRET;
  metadata: V1ObjectMeta;
  spec: ExternalSecretSpec;
  status?: ExternalSecretStatus;
}

// ---------------------------------------------------------------- SecretStore / ClusterSecretStore

export interface SecretStoreRetrySettings {
  maxRetries?: number;
  retryInterval?: Duration;
}

/** Which namespaces may use a ClusterSecretStore: a namespace matching any condition may. */
export interface ClusterSecretStoreCondition {
  namespaceSelector?: V1LabelSelector;
  namespaces?: string[];
  /** Regular expressions matched against the whole namespace name. */
  namespaceRegexes?: string[];
}

export interface SecretStoreSpec {
  /** The controller class that serves this store (think `ingressClassName`). */
  controller?: string;
  provider: SecretStoreProvider;
  retrySettings?: SecretStoreRetrySettings;
  /** Between store validations: seconds (an integer) or a Go duration string. */
  refreshInterval?: number | string;
  /** Only honoured on ClusterSecretStores (the field is shared, as upstream). */
  conditions?: ClusterSecretStoreCondition[];
}

export type SecretStoreCapabilities = 'ReadOnly' | 'WriteOnly' | 'ReadWrite';

export interface SecretStoreStatus {
  conditions?: Condition[];
  capabilities?: SecretStoreCapabilities;
}

export interface SecretStore {
  apiVersion: typeof EXTERNAL_SECRET_API_VERSION;
  kind: 'SecretStore';
  metadata: V1ObjectMeta;
  spec: SecretStoreSpec;
  status?: SecretStoreStatus;
}

export interface ClusterSecretStore {
  apiVersion: typeof EXTERNAL_SECRET_API_VERSION;
  kind: 'ClusterSecretStore';
  metadata: V1ObjectMeta;
  spec: SecretStoreSpec;
  status?: SecretStoreStatus;
}

export type AnySecretStore = SecretStore | ClusterSecretStore;

// ---------------------------------------------------------------- PushSecret (v1alpha1)

export interface PushSecretStoreRef {
  /** A store by name, or ... */
  name?: string;
  /** ... every store of `kind` whose labels match. */
  labelSelector?: V1LabelSelector;
  kind?: StoreKind;
}

export interface PushSecretSelector {
  secret?: {
    /** The source Secret, in the PushSecret's namespace. */
    name?: string;
    /** Or every Secret whose labels match. */
    selector?: V1LabelSelector;
  };
  generatorRef?: GeneratorRef;
}

export interface PushSecretRemoteRef {
  remoteKey: string;
  property?: string;
}

export interface PushSecretMatch {
  /** The key of the source Secret; the whole Secret (as JSON) when omitted. */
  secretKey?: string;
  remoteRef: PushSecretRemoteRef;
}

export type PushSecretConversionStrategy = 'None' | 'ReverseUnicode';

export interface PushSecretData {
  match: PushSecretMatch;
  conversionStrategy?: PushSecretConversionStrategy;
  /** Provider-specific metadata for the remote secret (free-form). */
  metadata?: unknown;
}

/** ESO's `dataTo`: the source's keys matching `match.regexp` (all when omitted), pushed to
 *  the stores `storeRef` picks among `secretStoreRefs`, each under its own (rewritten) key, or
 *  all of them as one JSON object under `remoteKey`. Explicit `data` entries win. */
export interface PushSecretDataTo {
  storeRef?: PushSecretStoreRef;
  match?: { regexp?: string };
  /** Regexp or transform steps (no merge: one source), applied to each key in order. */
  rewrite?: Pick<ExternalSecretRewrite, 'regexp' | 'transform'>[];
  /** Bundle mode: one remote secret holding every matched key; excludes `rewrite`. */
  remoteKey?: string;
  conversionStrategy?: PushSecretConversionStrategy;
  metadata?: unknown;
}

export type PushSecretUpdatePolicy = 'Replace' | 'IfNotExists';
export type PushSecretDeletionPolicy = 'Delete' | 'None';

export interface PushSecretSpec {
  secretStoreRefs: PushSecretStoreRef[];
  selector: PushSecretSelector;
  data?: PushSecretData[];
  /** `1h` when omitted. */
  refreshInterval?: Duration;
  /** `Replace` when omitted. */
  updatePolicy?: PushSecretUpdatePolicy;
  /** `None` when omitted: remote secrets outlive the PushSecret. */
  deletionPolicy?: PushSecretDeletionPolicy;
  template?: ExternalSecretTemplate;
  /** Bulk pushes: keys of the source picked by pattern, each to one store (src/controller/pushsecret/data-to.ts). */
  dataTo?: PushSecretDataTo[];
}

export interface PushSecretStatus {
  conditions?: Condition[];
  refreshTime?: string;
  syncedResourceVersion?: string;
  /** Per store (`<Kind>/<name>`), the remote keys pushed and from which data entry. */
  syncedPushSecrets?: Record<string, Record<string, PushSecretData>>;
}

export interface PushSecret {
  apiVersion: typeof PUSH_SECRET_API_VERSION;
  kind: 'PushSecret';
  metadata: V1ObjectMeta;
  spec: PushSecretSpec;
  status?: PushSecretStatus;
}
