// The provider contract: every store backend is one folder under src/providers/ with a
// light `meta.ts` (ProviderMeta) and an `index.ts` exporting its `Provider`; the registry
// lists them.
// Values travel as bytes end to end; they are never logged or put in errors.
import type { AddressPolicy } from '../egress/policy.js';
import type { Logger } from 'pino';

/** What to read: ExternalSecret `data[].remoteRef` / `dataFrom[].extract` (docs/design.md, "The external-secrets.io API"). */
export interface RemoteRef {
  key: string;
  property?: string;
  version?: string;
  /** `None` (default) or `Fetch`: whether to read remote metadata instead of the value. */
  metadataPolicy?: 'None' | 'Fetch';
  conversionStrategy?: 'Default' | 'Unicode';
  decodingStrategy?: 'None' | 'Base64' | 'Base64URL' | 'Auto';
}

/** `dataFrom[].find`: select many remote secrets by name, tags or path. */
export interface FindRef {
  path?: string;
  name?: { regexp: string };
  tags?: Record<string, string>;
  conversionStrategy?: 'Default' | 'Unicode';
  decodingStrategy?: 'None' | 'Base64' | 'Base64URL' | 'Auto';
}

/** Where to write: PushSecret `remoteRef`, the grpc contract's `PushRemoteRef`. */
export interface PushRemoteRef {
  remoteKey: string;
  property?: string;
}

export type SecretMap = Record<string, Uint8Array>;

/** A key → bytes map without a prototype, so a remote key named `__proto__` is just a key. */
export function emptySecretMap(): SecretMap {
  return Object.create(null) as SecretMap;
}

/** What a pushed `property` means (src/providers/json-path.ts): a dotted path into a
 *  nested JSON object (`path`) or one flat key (`key`), as ESO does for that provider. */
export type PropertyMode = 'path' | 'key';

/** What a provider can do; callers check before calling, the conformance suite reads it. */
export interface Capabilities {
  read: boolean;
  write: boolean;
  find: { name: boolean; tags: boolean; path: boolean };
  versions: boolean;
  /** The meaning of PushSecret's `remoteRef.property` in this store. */
  pushProperty: PropertyMode;
  /** The provider marks what it pushes (e.g. a `managed-by` tag or custom metadata) and
   *  itself refuses to overwrite or delete unmarked entries. Without a mark, the
   *  reconciler touches only entries it recorded as written (docs/pushsecret.md). */
  ownershipMark: boolean;
  /** The store mints credentials with a lease (`SecretsClient.leases`):
   *  the agent's dynamic secrets and the reconciler's generators. Stores without leases leave it out. */
  leases?: boolean;
}

/** Per-call options. `signal` carries the caller's deadline (the agent's refresh cycle,
 *  the reconciler's reconcile): a provider stops waiting and fails with `Timeout` when it
 *  aborts. The provider's own `timeoutMs` still bounds every call. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** PushSecret `data[].metadata.spec` (inside ESO's `PushSecretMetadata` envelope) after the
 *  provider's own `validatePushMetadata` accepted it: only fields that provider applies.
 *  See docs/pushsecret.md. */
export type PushMetadata = Readonly<Record<string, unknown>>;

/** Options of one push: the caller's deadline and the entry's validated metadata. */
export interface PushOptions extends CallOptions {
  metadata?: PushMetadata;
}

/** A lease on a credential the store minted for one consumer (a database user, a
 *  certificate). The id is a secret handle: never logged, never in status or errors. */
export interface Lease {
  /** The store's lease id; for a token minted with `result: 'auth'`, `token-accessor:<accessor>`
   *  (revoked by its accessor, never renewable). */
  id: string;
  /** Seconds the store granted at mint or at the last renewal. */
  ttlSeconds: number;
  renewable: boolean;
}

/** One mint: any engine path (database/creds/x, aws/creds/x, pki/issue/x), GET or POST. */
export interface GenerateRequest {
  path: string;
  method?: 'GET' | 'POST';
  parameters?: Readonly<Record<string, unknown>>;
  /** What `Generated.data` holds: the response's `data` (default, the only form the agent
   *  uses), its `auth` section (a token minted at e.g. `auth/token/create`; auth paths are
   *  allowed), or the whole response (`raw`). ESO's VaultDynamicSecret `resultType`. */
  result?: 'data' | 'auth' | 'raw';
}

/** What a mint returned: the data (JSON values as the store sent them), its lease if any, and
 *  when the data itself stops being valid where the store says so (a certificate's notAfter). */
export interface Generated {
  data: Readonly<Record<string, unknown>>;
  lease?: Lease;
  expiresAt?: Date;
}

/** Lease-bearing operations, next to get/push/delete (capability `leases`). */
export interface LeaseOperations {
  generate(req: GenerateRequest, opts?: CallOptions): Promise<Generated>;
  /** Renews; the store may grant less than asked (max TTL): the returned lease says. */
  renew(lease: Lease, incrementSeconds?: number, opts?: CallOptions): Promise<Lease>;
  revoke(lease: Lease, opts?: CallOptions): Promise<void>;
}

/** A connected client for one store. Created per store, cached and reused by callers. */
export interface SecretsClient {
  /** One value: the key, narrowed by `property` and `version`. Throws ProviderError. */
  getSecret(ref: RemoteRef, opts?: CallOptions): Promise<Uint8Array>;
  /** All properties of one remote secret (`dataFrom.extract`). */
  getSecretMap(ref: RemoteRef, opts?: CallOptions): Promise<SecretMap>;
  /** Every secret matching `find` (`dataFrom.find`), keyed by remote name. */
  getAllSecrets(find: FindRef, opts?: CallOptions): Promise<SecretMap>;
  /** Writes one entry; `opts.metadata` (validated by this provider's
   *  `validatePushMetadata`) is applied to the remote entry, also when the value is unchanged. */
  pushSecret(value: Uint8Array, ref: PushRemoteRef, opts?: PushOptions): Promise<void>;
  deleteSecret(ref: PushRemoteRef, opts?: CallOptions): Promise<void>;
  secretExists(ref: PushRemoteRef, opts?: CallOptions): Promise<boolean>;
  /** Cheap check that configuration and credentials work (no value read). */
  validate(opts?: CallOptions): Promise<void>;
  /** Present when `capabilities.leases`: mint, renew and revoke dynamic credentials. */
  readonly leases?: LeaseOperations;
  /** Release connections, revoke tokens the client obtained. */
  close(): Promise<void>;
}

/** The methods of SecretsClient that talk to the store (all but close). */
export const CLIENT_CALLS = ['getSecret', 'getSecretMap', 'getAllSecrets', 'pushSecret', 'deleteSecret', 'secretExists', 'validate'] as const;

/** A selector of one key of a Kubernetes Secret, as stores reference credentials. */
export interface SecretKeySelector {
  name: string;
  key: string;
  namespace?: string;
}

/** What a provider may use to build a client; everything it needs from outside. */
export interface ProviderContext {
  /** `SecretStore/<ns>/<name>` or `ClusterSecretStore/<name>`: used in every error message. */
  storeId: string;
  /** The namespace the store is used from (the pod's / ExternalSecret's namespace). */
  namespace: string;
  /** The store's `spec.provider.<name>` object, unvalidated. */
  spec: unknown;
  /** Reads one credential key the store references (a mounted file in the agent,
   *  the API in the reconciler). Throws ProviderError when absent. */
  readCredential(ref: SecretKeySelector): Promise<Uint8Array>;
  /** Reads one key of a ConfigMap the store references (e.g. a `caProvider` of type
   *  ConfigMap). Optional: absent where no ConfigMap is available. */
  readConfigMap?(ref: SecretKeySelector): Promise<Uint8Array>;
  /** The workload's own service-account token (pod identity); `audience` as configured. */
  serviceAccountToken(audience?: string): Promise<string>;
  /** Whether the operator lends this store the identity of the process running the client,
   *  as its environment provides it (EKS Pod Identity, an Azure workload-identity token
   *  file): the reconciler sets it for a store --allow-ambient-identity lends it to. Absent
   *  = never (the agent: there the store names the pod's own identity). */
  environmentIdentity?: boolean;
  logger: Logger;
  /** Per-call deadline in milliseconds. */
  timeoutMs: number;
  /** Which addresses the client may dial when the spec names them (every provider: the
   *  connections go through src/egress/). Absent = any address (the agent: it calls from
   *  the pod's own network position). */
  addresses?: AddressPolicy;
  /** Whether a store's own error text may be quoted in errors (they reach status and
   *  Events). False: a class and the HTTP or gRPC status only — the reconciler's choice for
   *  a store a tenant aims (a SecretStore, a generator), whose answers are not known to be
   *  value-free. Absent = true (the agent: its errors reach the pod's own log). */
  quoteStoreErrors?: boolean;
}

/** A Secret or ConfigMap key (or a whole Secret) a store spec references: the webhook
 *  mounts it into the agent, the reconciler reads it through the API. */
export interface CredentialRef {
  /** Where in the store's `spec.provider`, e.g. `vault.auth.tokenSecretRef`. */
  path: string;
  kind: 'Secret' | 'ConfigMap';
  name: string;
  /** A single key, or undefined for the whole object (grpc tlsSecretRef). */
  key?: string;
  namespace?: string;
}

/** A ServiceAccount a store spec names for its identity (only the pod's own is usable). */
export interface ServiceAccountRef {
  path: string;
  name: string;
  namespace?: string;
  audiences?: string[];
}

export interface StoreReferences {
  credentials: CredentialRef[];
  serviceAccounts: ServiceAccountRef[];
}

/** How a provider uses the workload's own identity (a projected service-account token). */
export interface PodIdentityNeeds {
  /** Whether a spec that references no ServiceAccount still authenticates as the pod
   *  (e.g. Vault kubernetes auth without a secretRef, AWS without keys). */
  ambient(spec: unknown): boolean;
  /** The token audience when no referenced ServiceAccount names one: undefined = the
   *  webhook's configured default, '' = the Kubernetes API itself. */
  audience(spec: unknown): string | undefined;
}

/** An identity a store spec authenticates with although the store names no credential
 *  for it: the identity of the process that runs the client. In the agent that process is
 *  the pod, whose own identity it is meant to be; in the reconciler it is the controller,
 *  which never lends its identity to a SecretStore and lends it to a ClusterSecretStore
 *  only when the operator allows it (docs/controller.md, "Identity"). */
export interface AmbientIdentity {
  /** The spec field that selects it, from the provider key (`azurekv.authType`, `gcpsm.auth`). */
  field: string;
  /** What authenticates, for messages (`the managed identity of the environment (IMDS)`). */
  source: string;
  /** `environment`: credentials the SDK finds around the process (IMDS, the metadata
   *  server, Application Default Credentials); `token`: the process's own service-account
   *  token, because the spec names no ServiceAccount. */
  kind: 'environment' | 'token';
}

/** What ESI knows about a provider without loading its SDK: the webhook (admission), the
 *  reconciler (store status) and the registry read it synchronously. Each provider folder
 *  exports one from its light `meta.ts`: the webhook reads it without loading an SDK. */
export interface ProviderMeta {
  /** The key under `spec.provider` (vault, aws, fake, …). */
  readonly name: string;
  readonly capabilities: Capabilities;
  /** Checks the store spec statically (no I/O); returns human-readable problems, each
   *  naming the field (`vault.auth.appRole.secretRef needs name and key`). */
  validateSpec(spec: unknown): string[];
  /** The Secrets/ConfigMaps and ServiceAccounts the spec references. */
  references(spec: unknown): StoreReferences;
  /** Checks a PushSecret entry's `metadata.spec` statically (no I/O): one problem per field
   *  that is malformed, unknown or not applied by this provider, each naming the field.
   *  Absent = the provider applies no push metadata (every field is refused). */
  validatePushMetadata?(spec: Record<string, unknown>): string[];
  /** Absent = the provider never uses the pod's identity. */
  readonly identity?: PodIdentityNeeds;
  /** Whether this spec authenticates with an identity the store does not name, and which
   *  field selects it. Absent = the provider authenticates only with what the store names. */
  ambientIdentity?(spec: unknown): AmbientIdentity | undefined;
  /** Told to the user (an admission warning) for every pod using such a store; it
   *  follows `<kind> "<name>"`. */
  readonly admissionWarning?: string;
}

/** A provider: its meta plus the client factory (its heavy, lazily imported part). */
export interface Provider extends ProviderMeta {
  newClient(ctx: ProviderContext): Promise<SecretsClient>;
}

export type ProviderErrorCode =
  | 'NotFound'
  | 'AuthFailed'
  | 'Forbidden'
  | 'Unreachable'
  | 'Timeout'
  | 'InvalidSpec'
  | 'Unsupported'
  | 'Unknown';

/** The one error type providers throw. The message names the store and key and the
 *  cause, and never contains a secret value. */
export class ProviderError extends Error {
  // eslint-disable-next-line max-params -- Error's (message, options) plus what every message names: code, store, key.
  constructor(
    readonly code: ProviderErrorCode,
    readonly storeId: string,
    message: string,
    readonly key?: string,
    options?: { cause?: unknown },
  ) {
    super(`${storeId}${key ? ` key "${key}"` : ''}: ${message}`, options);
    this.name = 'ProviderError';
  }
}
