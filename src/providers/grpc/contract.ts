// The SecretsServer contract (docs/providers/grpc.md) as the provider uses it: the message schemas of
// secrets.proto for the codec in wire.ts, the method paths, the enum values, the reply
// `error` convention, and what ESI puts in the `store` / `namespace` / `objects` fields.
// secrets.proto (next to this file) is the authoritative text; docs/providers/grpc.md
// explains the contract to plugin authors.
import { join } from 'node:path';
import { packageRoot } from '../../package-root.js';
import type { ProviderErrorCode } from '../types.js';
import type { Schema } from './wire.js';

/** The service name. secrets.proto has no `package` (as the seed), so it is also the
 *  fully-qualified name and every method path is `/SecretsServer/<Method>`. */
const SERVICE = 'SecretsServer';

export const METHODS = {
  GetSecret: `/${SERVICE}/GetSecret`,
  PushSecret: `/${SERVICE}/PushSecret`,
  DeleteSecret: `/${SERVICE}/DeleteSecret`,
  SecretExists: `/${SERVICE}/SecretExists`,
} as const;
export type MethodName = keyof typeof METHODS;

/** The standard gRPC health check, used by `validate()` when the plugin implements it. */
export const HEALTH_CHECK = '/grpc.health.v1.Health/Check';
/** grpc.health.v1.HealthCheckResponse.ServingStatus */
export const HEALTH_SERVING = 1;

/** Where secrets.proto lives in the package: `<package root>/src/providers/grpc/secrets.proto`,
 *  the same path whether ESI runs from src/ (tsx) or dist/ (tsc output). The provider does
 *  not read it (wire.ts carries the schemas); plugins and tests load it. */
export function secretsProtoPath(): string {
  return join(packageRoot(), 'src', 'providers', 'grpc', 'secrets.proto');
}

// ---------------------------------------------------------------- enums (values as the seed)

/** enum ConverstionStrategy (sic, as the seed spells it). */
export const ConversionStrategy = { DEFAULT: 0, UNICODE: 1 } as const;
/** enum DecodingStrategy. Note that 0 is AUTO, not NONE. */
export const DecodingStrategy = { AUTO: 0, BASE64: 1, BASE64URL: 2, NONE: 3 } as const;

// ---------------------------------------------------------------- messages

const RemoteRefSchema: Schema = {
  name: 'RemoteRef',
  fields: [
    { no: 1, name: 'key', kind: 'string' },
    { no: 2, name: 'metadataPolicy', kind: 'string' },
    { no: 3, name: 'property', kind: 'string' },
    { no: 4, name: 'version', kind: 'string' },
    { no: 5, name: 'conversionStrategy', kind: 'enum' },
    { no: 6, name: 'decodingStrategy', kind: 'enum' },
  ],
};

const PushRemoteRefSchema: Schema = {
  name: 'PushRemoteRef',
  fields: [
    { no: 1, name: 'remoteKey', kind: 'string' },
    { no: 2, name: 'property', kind: 'string' },
  ],
};

const GetSecretRequestSchema: Schema = {
  name: 'GetSecretRequest',
  fields: [
    { no: 1, name: 'store', kind: 'bytes' },
    { no: 2, name: 'namespace', kind: 'string' },
    { no: 3, name: 'objects', kind: 'bytes' },
    { no: 4, name: 'remoteRef', kind: 'message', message: RemoteRefSchema },
  ],
};

const GetSecretReplySchema: Schema = {
  name: 'GetSecretReply',
  fields: [
    { no: 1, name: 'secret', kind: 'bytes' },
    { no: 2, name: 'error', kind: 'string' },
  ],
};

const PushSecretRequestSchema: Schema = {
  name: 'PushSecretRequest',
  fields: [
    { no: 1, name: 'store', kind: 'bytes' },
    { no: 2, name: 'namespace', kind: 'string' },
    { no: 3, name: 'objects', kind: 'bytes' },
    { no: 4, name: 'secret', kind: 'bytes' },
    { no: 5, name: 'remoteRef', kind: 'message', message: PushRemoteRefSchema },
  ],
};

const PushSecretReplySchema: Schema = {
  name: 'PushSecretReply',
  fields: [{ no: 1, name: 'error', kind: 'string' }],
};

const DeleteSecretRequestSchema: Schema = {
  name: 'DeleteSecretRequest',
  fields: [{ no: 1, name: 'remoteRef', kind: 'message', message: PushRemoteRefSchema }],
};

const DeleteSecretReplySchema: Schema = {
  name: 'DeleteSecretReply',
  fields: [{ no: 1, name: 'error', kind: 'string' }],
};

const SecretExistsRequestSchema: Schema = {
  name: 'SecretExistsRequest',
  fields: [{ no: 1, name: 'remoteRef', kind: 'message', message: PushRemoteRefSchema }],
};

const SecretExistsReplySchema: Schema = {
  name: 'SecretExistsReply',
  fields: [
    { no: 1, name: 'exists', kind: 'bool' },
    { no: 2, name: 'error', kind: 'string' },
  ],
};

/** Every message of secrets.proto, by name (the schema test walks these). */
export const SCHEMAS: readonly Schema[] = [
  RemoteRefSchema, PushRemoteRefSchema, GetSecretRequestSchema, GetSecretReplySchema,
  PushSecretRequestSchema, PushSecretReplySchema, DeleteSecretRequestSchema, DeleteSecretReplySchema,
  SecretExistsRequestSchema, SecretExistsReplySchema,
];

/** Request and reply schema of each method. */
export const METHOD_SCHEMAS: Record<MethodName, { request: Schema; reply: Schema }> = {
  GetSecret: { request: GetSecretRequestSchema, reply: GetSecretReplySchema },
  PushSecret: { request: PushSecretRequestSchema, reply: PushSecretReplySchema },
  DeleteSecret: { request: DeleteSecretRequestSchema, reply: DeleteSecretReplySchema },
  SecretExists: { request: SecretExistsRequestSchema, reply: SecretExistsReplySchema },
};

// ---------------------------------------------------------------- the reply `error` convention

/** `error` = "<Code>: <message>"; these codes are understood, anything else is Unknown. */
const ERROR_CODES: Readonly<Record<string, ProviderErrorCode>> = Object.freeze({
  notfound: 'NotFound',
  authfailed: 'AuthFailed',
  forbidden: 'Forbidden',
  unsupported: 'Unsupported',
});

/** Splits a reply's `error` into ESI's code and the plugin's message. */
export function parseReplyError(error: string): { code: ProviderErrorCode; message: string } {
  const m = /^\s*([A-Za-z]+)\s*:\s*([\s\S]*)$/.exec(error);
  const code = m ? ERROR_CODES[m[1]!.toLowerCase()] : undefined;
  if (m && code) return { code, message: m[2]!.trim() };
  return { code: 'Unknown', message: error.trim() };
}

// ---------------------------------------------------------------- `store`, `namespace`, `objects`

/** The credential-free store description ESI sends as `store` (UTF-8 JSON). */
export interface StoreDescription {
  apiVersion: 'external-secrets.io/v1';
  kind: 'SecretStore' | 'ClusterSecretStore';
  metadata: { name: string; namespace?: string };
  spec: { provider: { grpc: { url: string; tlsSecretRef?: { name: string; namespace?: string } } } };
}

/** Builds `store` from the store id (`SecretStore/<ns>/<name>` or `ClusterSecretStore/<name>`)
 *  and the grpc spec. Only names: never a key, certificate or any Secret content. */
export function describeStore(storeId: string, spec: { url: string; tlsSecretRef?: { name: string; namespace?: string } }): StoreDescription {
  const parts = storeId.split('/');
  const cluster = parts[0] === 'ClusterSecretStore';
  const metadata = cluster
    ? { name: parts.slice(1).join('/') }
    : { name: parts.slice(2).join('/') || storeId, ...(parts[1] ? { namespace: parts[1] } : {}) };
  const grpc: StoreDescription['spec']['provider']['grpc'] = { url: spec.url };
  if (spec.tlsSecretRef) {
    grpc.tlsSecretRef = { name: spec.tlsSecretRef.name, ...(spec.tlsSecretRef.namespace ? { namespace: spec.tlsSecretRef.namespace } : {}) };
  }
  return {
    apiVersion: 'external-secrets.io/v1',
    kind: cluster ? 'ClusterSecretStore' : 'SecretStore',
    metadata,
    spec: { provider: { grpc } },
  };
}
