// The provider contract: every store backend (fake, kubernetes, vault, aws, azurekv,
// gcpsm, grpc) is one folder under src/providers/ exporting a `Provider`.
// Values travel as bytes end to end; they are never logged or put in errors.
import type { Logger } from 'pino';

/** What to read: ExternalSecret `data[].remoteRef` / `dataFrom[].extract` (seed 000). */
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

/** Where to write (PushSecret `remoteRef`, seed 003 / 004 `PushRemoteRef`). */
export interface PushRemoteRef {
  remoteKey: string;
  property?: string;
}

export type SecretMap = Record<string, Uint8Array>;

/** A key → bytes map without a prototype, so a remote key named `__proto__` is just a key. */
export function emptySecretMap(): SecretMap {
  return Object.create(null) as SecretMap;
}

/** What a provider can do; callers check before calling, the conformance suite reads it. */
export interface Capabilities {
  read: boolean;
  write: boolean;
  find: { name: boolean; tags: boolean; path: boolean };
  versions: boolean;
}

/** Per-call options. `signal` carries the caller's deadline (the agent's refresh cycle,
 *  the reconciler's reconcile): a provider stops waiting and fails with `Timeout` when it
 *  aborts. The provider's own `timeoutMs` still bounds every call. */
export interface CallOptions {
  signal?: AbortSignal;
}

/** A connected client for one store. Created per store, cached and reused by callers. */
export interface SecretsClient {
  /** One value: the key, narrowed by `property` and `version`. Throws ProviderError. */
  getSecret(ref: RemoteRef, opts?: CallOptions): Promise<Uint8Array>;
  /** All properties of one remote secret (`dataFrom.extract`). */
  getSecretMap(ref: RemoteRef, opts?: CallOptions): Promise<SecretMap>;
  /** Every secret matching `find` (`dataFrom.find`), keyed by remote name. */
  getAllSecrets(find: FindRef, opts?: CallOptions): Promise<SecretMap>;
  pushSecret(value: Uint8Array, ref: PushRemoteRef, opts?: CallOptions): Promise<void>;
  deleteSecret(ref: PushRemoteRef, opts?: CallOptions): Promise<void>;
  secretExists(ref: PushRemoteRef, opts?: CallOptions): Promise<boolean>;
  /** Cheap check that configuration and credentials work (no value read). */
  validate(opts?: CallOptions): Promise<void>;
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
  logger: Logger;
  /** Per-call deadline in milliseconds. */
  timeoutMs: number;
}

export interface Provider {
  /** The key under `spec.provider` (vault, aws, fake, …). */
  readonly name: string;
  readonly capabilities: Capabilities;
  /** Checks the store spec statically (no I/O); returns human-readable problems. */
  validateSpec(spec: unknown): string[];
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
