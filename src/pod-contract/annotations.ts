// The pod contract: ONE declarative table of every `esi.dev/` annotation (name, type,
// default, validation, description). Parsing, defaults, validation errors and the
// reference page docs/annotations.md are all derived from it.
import type { InjectionMode, OnChange } from '../agent-config/types.js';
import { onChangeUrlProblem } from '../agent-config/check.js';
import { MAX_REFRESH_SECONDS, SIGNALS } from '../agent-config/limits.js';
import { parseDuration, parseQuantity } from './values.js';
import { isValidName, type NameRule } from '../kube/names.js';
import { parseEnvAnnotation, type EnvRequest } from './env.js';
import { dynamicPathProblem, trimSlashes } from '../providers/vault/paths.js';

export const PREFIX = 'esi.dev/';
export const INJECT_LABEL = 'esi.dev/inject';
/** Set by the webhook on pods it injected; makes re-admission a no-op. */
export const INJECTED_ANNOTATION = 'esi.dev/injected';
export const TEMPLATE_PREFIX = 'esi.dev/template-';
export const DYNAMIC_PREFIX = 'esi.dev/dynamic-';
/** The agent's container names in an injected pod (webhook/mutate.ts; read back by
 *  src/controller/externalsecret/pod-agents.ts): a native sidecar or init container, or sidecar mode's pair. */
export const AGENT_CONTAINER = 'esi-agent';
export const AGENT_INIT_CONTAINER = 'esi-agent-init';

/** One `esi.dev/dynamic-<name>` annotation: a credential minted for this pod. */
export interface DynamicRequest {
  name: string;
  storeKind: 'SecretStore' | 'ClusterSecretStore';
  store: string;
  path: string;
  parameters?: Record<string, string>;
}

/** The parsed, validated, defaulted request a pod makes through its annotations. */
export interface InjectionRequest {
  secrets: string[];
  templates: { file: string; template: string }[];
  /** `esi.dev/dynamic-<name>` entries; absent in requests built without annotations. */
  dynamic?: DynamicRequest[];
  /** `esi.dev/env`: ExternalSecret keys as environment variables (src/pod-contract/env.ts). */
  env: EnvRequest[] | undefined;
  mode: InjectionMode;
  mountPath: string;
  containers: string[] | undefined;
  refreshSeconds: number;
  fileMode: number;
  onChange: OnChange | undefined;
  tokenAudience: string | undefined;
  volumeSizeLimit: string;
  agentPort: number;
  cpuRequest: string;
  memoryRequest: string;
  memoryLimit: string;
  /** `esi.dev/lease-overlap`: seconds an old dynamic credential outlives its rotation. */
  leaseOverlapSeconds?: number;
  /** `esi.dev/lease-revoke-on-exit`: false leaves the pod's leases to expire by themselves. */
  leaseRevokeOnExit?: boolean;
  /** `esi.dev/refresh-floor`: the period the store's read budget sets (the controller writes it). */
  refreshFloorSeconds?: number;
  /** `esi.dev/change-generation`: value-free; a new one means a source changed (the controller writes it). */
  changeGeneration?: string;
}

type Field = Exclude<keyof InjectionRequest, 'templates' | 'dynamic'>;

export interface AnnotationSpec<K extends Field = Field> {
  name: string;
  field: K;
  type: string;
  default: string | undefined;
  description: string;
  /** Turns the raw value into the typed one; throws an Error whose message says what is wrong. */
  parse: (raw: string) => InjectionRequest[K];
}

export const FILE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,252}$/;
const MODES: InjectionMode[] = ['native-sidecar', 'init-only', 'sidecar'];

/** At most this many names in a list annotation (bounded resolution work). */
const MAX_LIST = 64;

function list(raw: string, what: string, rule: NameRule): string[] {
  const items = raw.split(',').map((s) => s.trim()).filter(Boolean);
  if (items.length === 0) throw new Error(`must list at least one ${what}`);
  if (items.length > MAX_LIST) throw new Error(`lists ${items.length} names; at most ${MAX_LIST}`);
  for (const item of items) {
    if (!isValidName(item, rule)) throw new Error(`${JSON.stringify(item.slice(0, 64))} is not a valid ${what} name (lowercase letters, digits, "-")`);
  }
  if (new Set(items).size !== items.length) throw new Error(`lists the same ${what} twice`);
  return items;
}

function absolutePath(raw: string): string {
  const p = raw.trim();
  if (!p.startsWith('/') || p.split('/').includes('..') || p === '/') {
    throw new Error('must be an absolute path other than "/" without ".." (for example /var/run/secrets/esi)');
  }
  return p.replace(/\/+$/, '');
}

function fileMode(raw: string): number {
  if (!/^0?[0-7]{3}$/.test(raw.trim())) throw new Error('must be an octal file mode such as 0440 or 0400');
  const mode = parseInt(raw.trim(), 8);
  if (mode & 0o022) throw new Error('must not be group- or world-writable (the files are read-only for the app)');
  if (!(mode & 0o444)) throw new Error('must let someone read the files (for example 0440)');
  return mode;
}

/** `http://127.0.0.1:PORT/path` (POST) or `signal:SIGHUP:process-name`. The URL and the
 *  signal follow the agent configuration's own rules (src/agent-config/check.ts). */
function parseOnChange(raw: string): OnChange {
  const value = raw.trim();
  const sig = /^signal:(SIG[A-Z0-9]{1,12}):([^\s/]{1,15})$/.exec(value);
  if (sig) {
    const signal = SIGNALS.find((s) => s === sig[1]);
    if (!signal) throw new Error(`signal ${sig[1]} is not allowed (use ${SIGNALS.join(', ')})`);
    return { type: 'signal', signal, process: sig[2]! };
  }
  if (!URL.canParse(value)) throw new Error('must be "http://127.0.0.1:<port>/<path>" or "signal:<SIGNAL>:<process-name>"');
  const url = new URL(value).toString();
  const problem = onChangeUrlProblem(url);
  if (problem) throw new Error(`URL ${problem}`);
  return { type: 'http', url, method: 'POST' };
}

function port(raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1024 || n > 65535) throw new Error('must be a port number between 1024 and 65535');
  return n;
}

/** The controller → agent channel (docs/fleet.md):
 *  annotations the controller sets on the pod and the agent reads through a downwardAPI
 *  volume, each file parsed by the same entry of the table below. */
export const REFRESH_FLOOR_ANNOTATION = 'esi.dev/refresh-floor';
export const CHANGE_GENERATION_ANNOTATION = 'esi.dev/change-generation';

/** The refresh rule of esi.dev/refresh-interval, shared by esi.dev/refresh-floor. */
function parseRefreshSeconds(raw: string): number {
  const s = parseDuration(raw);
  if (s < 10) throw new Error('must be at least 10s (stores rate-limit)');
  if (s > MAX_REFRESH_SECONDS) throw new Error(`must be at most ${MAX_REFRESH_SECONDS / 3600}h`);
  return s;
}

/** A change generation: lowercase letters and digits, at most 32 (a hash, never a value). */
function parseGeneration(raw: string): string {
  const v = raw.trim();
  if (!/^[a-z0-9]{1,32}$/.test(v)) throw new Error('must be 1-32 lowercase letters and digits');
  return v;
}

function spec<K extends Field>(s: AnnotationSpec<K>): AnnotationSpec<K> {
  return s;
}

/** Every annotation a pod may set, in the order the docs list them. */
export const ANNOTATIONS = [
  spec({
    name: 'esi.dev/secrets', field: 'secrets', type: 'list of names', default: undefined,
    description: 'Comma-separated ExternalSecret names in the pod\'s namespace. Each is mounted as a directory `<mount-path>/<name>/` with one file per key, like a Secret volume.',
    parse: (raw) => list(raw, 'ExternalSecret', 'subdomain'),
  }),
  spec({
    name: 'esi.dev/env', field: 'env', type: 'env list', default: undefined,
    description: 'ExternalSecret keys as environment variables of the containers that get the secrets (`esi.dev/containers`): `db:DB_USER=username,DB_PASSWORD=password; api-keys` (entries separated by `;`; `VAR=key`, or `KEY` when the key is itself a variable name; no list = every key of the ExternalSecret\'s `data`). The agent writes them to an env file in a memory-backed volume only it mounts; the kubelet reads it (`env[].valueFrom.fileKeyRef`) each time it starts a container, so a running app keeps the values it started with and a restarted one gets the current ones. Needs Kubernetes 1.35+ and mode `native-sidecar` or `init-only`; values may not contain a single quote (docs/agent.md, "Environment variables").',
    parse: parseEnvAnnotation,
  }),
  spec({
    name: 'esi.dev/mode', field: 'mode', type: 'enum', default: 'native-sidecar',
    description: '`native-sidecar`: an init container with `restartPolicy: Always` that renders before the app starts and keeps refreshing (Jobs complete). `init-only`: render once before the app starts. `sidecar`: a classic init container plus a sidecar container, for clusters without native sidecars.',
    parse: (raw) => {
      if (!MODES.includes(raw as InjectionMode)) throw new Error(`must be one of ${MODES.join(', ')}`);
      return raw as InjectionMode;
    },
  }),
  spec({
    name: 'esi.dev/mount-path', field: 'mountPath', type: 'absolute path', default: '/var/run/secrets/esi',
    description: 'Where the in-memory volume is mounted (read-only) in the target containers.',
    parse: absolutePath,
  }),
  spec({
    name: 'esi.dev/containers', field: 'containers', type: 'list of names', default: undefined,
    description: 'Comma-separated names of the containers (or init containers) that get the volume and the `esi.dev/env` variables. Default: every container of `spec.containers`.',
    parse: (raw) => list(raw, 'container', 'label'),
  }),
  spec({
    name: 'esi.dev/refresh-interval', field: 'refreshSeconds', type: 'duration', default: '1h',
    description: 'How often the sidecar fetches again (with ±10 % jitter), for example `30s`, `5m`, `1h`. At least 10s, at most 24h. Ignored in `init-only` mode.',
    parse: parseRefreshSeconds,
  }),
  spec({
    name: REFRESH_FLOOR_ANNOTATION, field: 'refreshFloorSeconds', type: 'duration', default: undefined,
    description: 'Written by the controller, not by hand: the shortest refresh period the read budget of the pod\'s stores allows (`esi.dev/read-budget` on the store, docs/fleet.md). The agent reads it through a downwardAPI file and refreshes every max(`esi.dev/refresh-interval`, this), so a pod never refreshes more often than its own annotation asks. A value set at creation is accepted and replaced.',
    parse: parseRefreshSeconds,
  }),
  spec({
    name: CHANGE_GENERATION_ANNOTATION, field: 'changeGeneration', type: 'token', default: undefined,
    description: 'Written by the controller, not by hand: a value-free token (a hash of the changed sources\' resource versions, never a value) that changes when a source of the pod\'s ExternalSecrets changed (docs/fleet.md). The agent reads it through a downwardAPI file and fetches at once with its own identity.',
    parse: parseGeneration,
  }),
  spec({
    name: 'esi.dev/lease-overlap', field: 'leaseOverlapSeconds', type: 'duration', default: undefined,
    description: 'For the pod\'s `esi.dev/dynamic-<name>` credentials: after a rotation published the new credential, how long the old one stays valid before its lease is revoked, so that connections opened with it can finish. Default 60s (the agent\'s), `0s` revokes at once, at most 24h; never longer than the old credential\'s own end (docs/dynamic-secrets.md).',
    parse: (raw) => {
      const s = parseDuration(raw);
      if (s > MAX_REFRESH_SECONDS) throw new Error(`must be at most ${MAX_REFRESH_SECONDS / 3600}h`);
      return s;
    },
  }),
  spec({
    name: 'esi.dev/lease-revoke-on-exit', field: 'leaseRevokeOnExit', type: 'boolean', default: undefined,
    description: 'For the pod\'s `esi.dev/dynamic-<name>` credentials: `true` (the default) revokes their leases when the pod ends (the database user is dropped); `false` leaves them to expire at the end of their TTL, e.g. for a credential a job hands to something that outlives it (docs/dynamic-secrets.md).',
    parse: (raw) => {
      if (raw.trim() === 'true') return true;
      if (raw.trim() === 'false') return false;
      throw new Error('must be "true" or "false"');
    },
  }),
  spec({
    name: 'esi.dev/file-mode', field: 'fileMode', type: 'octal mode', default: '0444',
    description: 'Mode of the rendered files. The volume is mounted read-only; tighten to `0440`/`0400` when the app runs with the agent\'s group/user (under `--agent-run-as-user auto`, e.g. on OpenShift, the pod\'s containers share the assigned user).',
    parse: fileMode,
  }),
  spec({
    name: 'esi.dev/on-change', field: 'onChange', type: 'action', default: undefined,
    description: 'What to do after files changed: `http://127.0.0.1:<port>/<path>` sends a POST to the app (loopback only), `signal:<SIGNAL>:<process>` signals a process by name (needs `spec.shareProcessNamespace: true`; gives the agent CAP_KILL, which Pod Security `restricted` forbids, unless the agent runs as the user of every app container: `--agent-run-as-user auto` with the pod\'s `runAsUser`; docs/agent.md).',
    parse: parseOnChange,
  }),
  spec({
    name: 'esi.dev/token-audience', field: 'tokenAudience', type: 'string', default: undefined,
    description: 'Audience of the projected service-account token the agent uses for pod-identity auth. Default: the webhook\'s `--token-audience`.',
    parse: (raw) => {
      if (!/^[\x21-\x7e]{1,253}$/.test(raw)) throw new Error('must be a non-empty string without spaces');
      return raw;
    },
  }),
  spec({
    name: 'esi.dev/volume-size-limit', field: 'volumeSizeLimit', type: 'quantity', default: '4Mi',
    description: '`sizeLimit` of the in-memory volume (counts against the pod\'s memory).',
    parse: (raw) => parseQuantity(raw, { min: 64 * 1024, max: 1024 ** 3 }),
  }),
  spec({
    name: 'esi.dev/agent-port', field: 'agentPort', type: 'port', default: '8099',
    description: 'Port of the agent\'s health server (startup probe); change it if the app uses the same port.',
    parse: port,
  }),
  spec({
    name: 'esi.dev/agent-cpu-request', field: 'cpuRequest', type: 'quantity', default: '5m',
    description: 'CPU request of the agent container; the default shown applies unless the operator sets another for every agent (`esi webhook --agent-cpu-request`, the chart\'s `agent.resources.requests.cpu`).',
    parse: (raw) => parseQuantity(raw, { min: 0.001, max: 4 }),
  }),
  spec({
    name: 'esi.dev/agent-memory-request', field: 'memoryRequest', type: 'quantity', default: '32Mi',
    description: 'Memory request of the agent container; the default shown applies unless the operator sets another for every agent (`esi webhook --agent-memory-request`, the chart\'s `agent.resources.requests.memory`).',
    parse: (raw) => parseQuantity(raw, { min: 16 * 1024 ** 2, max: 4 * 1024 ** 3 }),
  }),
  spec({
    name: 'esi.dev/agent-memory-limit', field: 'memoryLimit', type: 'quantity', default: '96Mi',
    description: 'Memory limit of the agent container; the default shown applies unless the operator sets another for every agent (`esi webhook --agent-memory-limit`, the chart\'s `agent.resources.limits.memory`).',
    parse: (raw) => parseQuantity(raw, { min: 32 * 1024 ** 2, max: 8 * 1024 ** 3 }),
  }),
] as const satisfies readonly AnnotationSpec[];

/** `[ClusterSecretStore/]<store>:<engine path>[?<parameter>=<value>&…]`: parameters make the
 *  mint a POST with them as its body (PKI's common_name, ttl). */
export function parseDynamic(name: string, raw: string): DynamicRequest {
  if (raw.length > 2048) throw new Error('is longer than 2048 characters');
  const m = /^(?:(ClusterSecretStore|SecretStore)\/)?([^:/\s]+):([^?\s]+)(?:\?(\S*))?$/.exec(raw.trim());
  if (!m) throw new Error('must be "<store>:<engine path>" (for example "vault:database/creds/app"), optionally "ClusterSecretStore/<store>:…" and "?<parameter>=<value>&…"');
  const store = m[2]!;
  if (!isValidName(store, 'subdomain')) throw new Error(`${JSON.stringify(store.slice(0, 64))} is not a valid store name`);
  // The one rule of engine paths, as the agent and the vault provider apply it (a pod's
  // credential is a secrets engine's data: no auth section).
  const problem = dynamicPathProblem(m[3]!);
  if (problem) throw new Error(`the engine path ${problem}`);
  const path = trimSlashes(m[3]!);
  const out: DynamicRequest = { name, storeKind: (m[1] as DynamicRequest['storeKind'] | undefined) ?? 'SecretStore', store, path };
  if (m[4]) {
    const params = new URLSearchParams(m[4]);
    if ([...params.keys()].length > 32) throw new Error('at most 32 parameters');
    out.parameters = Object.fromEntries(params);
  }
  return out;
}

export const DYNAMIC_ANNOTATION = {
  name: `${DYNAMIC_PREFIX}<name>`,
  type: 'store and engine path',
  description: 'A credential minted for this pod alone (docs/dynamic-secrets.md), mounted as `<mount-path>/<name>/` and named `<name>` in templates: `vault:database/creds/app` (a SecretStore of the pod\'s namespace), `ClusterSecretStore/bao:pki/issue/web?common_name=app.example.com&ttl=24h` (parameters make it a POST). Renewed while the pod lives, rotated ahead of its max TTL, revoked when the pod ends. `native-sidecar` mode only; the store\'s provider must mint leases (vault, openBao).',
};

/** The one pattern annotation: a template per file. */
export const TEMPLATE_ANNOTATION = {
  name: `${TEMPLATE_PREFIX}<file>`,
  type: 'handlebars template',
  description: 'Renders the template to `<mount-path>/<file>`. The context has one property per mounted ExternalSecret holding its keys: `{{db.password}}`, `{{[my-db].password}}`. Strict mode: a missing key is an error, never an empty string.',
};
