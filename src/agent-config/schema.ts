// The agent configuration, declared ONCE as a JSON schema (TypeBox). From it come:
//  - the TypeScript types (src/agent-config/types.ts, type-only: the agent never loads TypeBox);
//  - the validator both the agent and the webhook run (Ajv, compiled ahead of time into
//    src/agent-config/validator.generated.ts by `npm run generate`, so the
//    agent's start-up pays neither TypeBox nor Ajv, ~150–300 ms).
// Rules a JSON schema cannot say (names unique, store keys that exist, loopback URLs) are
// in src/agent-config/check.ts, next to the validator.
import { Type, type TSchema } from '@sinclair/typebox';
import type {
  ExternalSecretData,
  ExternalSecretDataFromRemoteRef,
  ExternalSecretTemplate,
  SecretStoreProvider,
} from '../api/types.js';

import { ENV_NAME_PATTERN, FILE_NAME_PATTERN, MAX_ENV_VARS, MAX_REFRESH_SECONDS, MAX_TEMPLATE_LENGTH, SIGNALS } from './limits.js';

const NonEmpty = (o: object = {}) => Type.String({ minLength: 1, maxLength: 4096, ...o });
/** Absolute, without a ".." segment (so `--root` confines it). */
const AbsolutePath = NonEmpty({ pattern: '^/(?!(?:.*/)?\\.\\.(?:/|$))' });
const FileName = Type.String({ minLength: 1, maxLength: 255, pattern: FILE_NAME_PATTERN });
const Loose = <T>(schema: TSchema) => Type.Unsafe<T>(schema);

/** Exactly one provider; that it is one the agent implements is checked against the
 *  provider registry (src/providers/registry.ts, the only list of providers). */
const Provider = Loose<SecretStoreProvider>(Type.Record(Type.String(), Type.Object({}), { minProperties: 1, maxProperties: 1 }));

export const AgentStoreSchema = Type.Object({
  kind: Type.Union([Type.Literal('SecretStore'), Type.Literal('ClusterSecretStore')]),
  name: NonEmpty(),
  provider: Provider,
  /** Credential Secrets the webhook mounted into the agent container only: each
   *  referenced `{name, key}` is the file `<credentialsDir>/<name>/<key>`. */
  credentialsDir: Type.Optional(AbsolutePath),
  /** ConfigMaps the store references (CA bundles): `<configMapsDir>/<name>/<key>`. */
  configMapsDir: Type.Optional(AbsolutePath),
  /** Projected token of the pod's own service account for this store (pod identity). */
  tokenPath: Type.Optional(AbsolutePath),
  /** Audience that token was issued for. */
  tokenAudience: Type.Optional(NonEmpty()),
}, { additionalProperties: false });

const Data = Loose<ExternalSecretData>(Type.Object({
  secretKey: FileName,
  remoteRef: Type.Object({ key: NonEmpty() }),
}));

export const AgentSecretSchema = Type.Object({
  /** The ExternalSecret's name; also its directory and its name in template contexts. */
  name: FileName,
  /** Key into `AgentConfig.stores`. */
  store: NonEmpty(),
  data: Type.Array(Data),
  dataFrom: Type.Array(Loose<ExternalSecretDataFromRemoteRef>(Type.Object({}))),
  /** The ExternalSecret's own `target.template`, when it has one. */
  template: Type.Optional(Loose<ExternalSecretTemplate>(Type.Object({}))),
  /** The engine that renders `template`: Go (ESO's, the default) or handlebars (opt-in). */
  templateEngine: Type.Optional(Type.Union([Type.Literal('go'), Type.Literal('handlebars')])),
  /** false: fetched only for `env` (esi.dev/env without esi.dev/secrets): no files. */
  files: Type.Optional(Type.Boolean()),
}, { additionalProperties: false });

/** The env file (esi.dev/env, docs/agent.md): the agent writes
 *  `<dir>/<file>` in the kubelet's env-file format; app containers read it through
 *  `env[].valueFrom.fileKeyRef` when they start, without mounting the volume. */
export const AgentEnvSchema = Type.Object({
  /** Where the env volume is mounted in the agent container (and only there). */
  dir: AbsolutePath,
  /** The file in it, the `path` of every fileKeyRef. */
  file: FileName,
  vars: Type.Array(Type.Object({
    /** The variable, also its key in the file. */
    name: Type.String({ pattern: ENV_NAME_PATTERN }),
    /** A `secrets[].name`. */
    secret: FileName,
    /** The key of that ExternalSecret (after its own template). */
    key: FileName,
  }, { additionalProperties: false }), { minItems: 1, maxItems: MAX_ENV_VARS }),
}, { additionalProperties: false });

/** A dynamic secret (docs/dynamic-secrets.md): credentials the store mints for this pod
 *  alone (capability `leases`), held for the pod's life by the native-sidecar agent. Its
 *  keys land in `<outputDir>/<name>/` and in template contexts like an ExternalSecret's. */
export const AgentDynamicSecretSchema = Type.Object({
  name: FileName,
  /** Key into `AgentConfig.stores`; the store's provider must have the `leases` capability. */
  store: NonEmpty(),
  /** Engine path, e.g. `database/creds/app` or `pki/issue/web`. */
  path: NonEmpty({ maxLength: 1024 }),
  /** GET by default; POST sends `parameters` (PKI's common_name, ttl, …). */
  method: Type.Optional(Type.Union([Type.Literal('GET'), Type.Literal('POST')])),
  parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { maxProperties: 64 })),
  /** Seconds the old credential stays valid after a rotation published the new one. */
  overlapSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_REFRESH_SECONDS })),
  /** Revoke the lease when the agent stops (the pod ends); true by default. */
  revokeOnExit: Type.Optional(Type.Boolean()),
}, { additionalProperties: false });

export const AgentTemplateSchema = Type.Object({
  /** File name relative to the output directory (no `/`, no `..`). */
  file: FileName,
  template: Type.String({ maxLength: MAX_TEMPLATE_LENGTH }),
}, { additionalProperties: false });

export const OnChangeSchema = Type.Union([
  Type.Object({
    type: Type.Literal('http'),
    /** http:// on a loopback host (checked in check.ts). */
    url: NonEmpty(),
    method: Type.Union([Type.Literal('POST'), Type.Literal('PUT'), Type.Literal('GET')]),
  }, { additionalProperties: false }),
  Type.Object({
    type: Type.Literal('signal'),
    process: Type.String({ pattern: '^[^\\s/]{1,15}$' }),
    signal: Type.Union(SIGNALS.map((s) => Type.Literal(s))),
  }, { additionalProperties: false }),
]);

export const InjectionModeSchema = Type.Union([Type.Literal('native-sidecar'), Type.Literal('init-only'), Type.Literal('sidecar')]);

export const AgentConfigSchema = Type.Object({
  version: Type.Literal(1),
  mode: InjectionModeSchema,
  pod: Type.Object({ namespace: NonEmpty(), name: NonEmpty(), serviceAccountName: Type.String() }, { additionalProperties: false }),
  /** Container path of the in-memory volume the agent writes (read-only in app containers). */
  outputDir: AbsolutePath,
  /** File mode of rendered files, e.g. 0o440 (JSON carries it as a number). */
  fileMode: Type.Integer({ minimum: 0, maximum: 0o777 }),
  /** Refresh period in seconds; jitter is applied by the agent. Required in the sidecar
   *  modes (checked in check.ts), optional in init-only. */
  refreshSeconds: Type.Optional(Type.Number({ minimum: 1, maximum: MAX_REFRESH_SECONDS })),
  /** Default projected token for stores that set no `tokenPath` of their own. */
  tokenPath: Type.Optional(AbsolutePath),
  tokenAudience: Type.Optional(NonEmpty()),
  /** Port of the agent's health/metrics server (startup probe target). */
  port: Type.Integer({ minimum: 0, maximum: 65535 }),
  stores: Type.Record(Type.String(), AgentStoreSchema),
  secrets: Type.Array(AgentSecretSchema),
  templates: Type.Array(AgentTemplateSchema),
  dynamicSecrets: Type.Optional(Type.Array(AgentDynamicSecretSchema, { maxItems: 32 })),
  env: Type.Optional(AgentEnvSchema),
  onChange: Type.Optional(OnChangeSchema),
  /** The controller → agent channel (docs/fleet.md):
   *  a downwardAPI directory with the files `refresh-floor` and `change-generation`. */
  channelDir: Type.Optional(AbsolutePath),
}, { additionalProperties: false });
