// The one validator of the agent configuration, run by the agent on what it reads and
// by the webhook on what it writes (so the webhook never admits a pod whose agent would
// exit 2). Structure, types and ranges come from the schema (src/agent-config/schema.ts,
// compiled ahead of time); the rules a schema cannot state are here. Every problem names
// the exact field, because the one line the agent prints is all an operator will see.
import { constants as osConstants } from 'node:os';
import { AGENT_CONFIG_VERSION, type AgentConfig } from './types.js';
import { ENV_NAME_PATTERN, MAX_REFRESH_SECONDS, SIGNALS } from './limits.js';
import { providerMeta, providerNames } from '../providers/registry.js';
import { validate as generated } from './validator.generated.js';
import { dynamicPathProblem } from '../providers/vault/paths.js';

export class ConfigError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`invalid agent config: ${field}: ${problem}`);
    this.name = 'ConfigError';
  }
}

interface AjvError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}
type Validate = ((data: unknown) => boolean) & { errors?: AjvError[] | null };
const validate = generated as unknown as Validate;

/** Why `name` cannot be a file or directory name in the output volume, or undefined.
 *  Names starting with `..` are reserved for the writer (`..data`, generations). The
 *  schema's FILE_NAME_PATTERN says the same for names in the configuration. */
export function fileNameProblem(name: string): string | undefined {
  if (typeof name !== 'string' || name === '') return 'must be a non-empty string';
  if (name.includes('/') || name.includes('\\') || name.includes('\0')) return 'must not contain "/", "\\" or NUL';
  if (name === '.' || name === '..') return 'must not be "." or ".."';
  if (name.startsWith('..')) return 'must not start with ".." (reserved for the atomic writer)';
  if (Buffer.byteLength(name) > 255) return 'is longer than 255 bytes';
  return undefined;
}

const ENV_NAME = new RegExp(ENV_NAME_PATTERN);
const ENV_NAME_PROBLEM = 'must be an environment variable name: letters, digits and "_", not starting with a digit, at most 128 characters';

/** Why `name` cannot be the name of a variable ESI sets from its env file, or undefined. */
export function envNameProblem(name: string): string | undefined {
  return ENV_NAME.test(name) ? undefined : ENV_NAME_PROBLEM;
}

/** Loopback hosts only: the agent never calls anything outside its pod. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** Why `url` cannot be an on-change URL, or undefined: http:// to a loopback host. */
export function onChangeUrlProblem(url: string): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'must be a URL';
  }
  if (u.protocol !== 'http:') return 'must be an http:// URL (the app in the same pod; no TLS on loopback)';
  if (!isLoopbackHost(u.hostname)) return `host ${JSON.stringify(u.hostname.slice(0, 64))} is not loopback (localhost, 127.0.0.0/8, ::1)`;
  return undefined;
}

/** JSON pointer → the field notation of our messages: `stores["SecretStore/ns/x"].kind`. */
function fieldOf(pointer: string, extra?: string): string {
  const parts = pointer.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (extra !== undefined) parts.push(extra);
  let out = '';
  parts.forEach((p, i) => {
    if (/^\d+$/.test(p)) out += `[${p}]`;
    else if (parts[i - 1] === 'stores' && i === 1) out += `[${JSON.stringify(p.slice(0, 128))}]`;
    else out += out ? `.${p}` : p;
  });
  return out || '(root)';
}

function unsupportedProvider(name: string): string {
  return `provider ${JSON.stringify(name.slice(0, 64))} is not one the agent supports (${providerNames().join(', ')})`;
}

function describeProvider(raw: unknown, pointer: string): string {
  const names = raw && typeof raw === 'object' ? Object.keys(raw).filter((k) => (raw as Record<string, unknown>)[k] != null) : [];
  const at = valueAt(raw, pointer);
  const set = at && typeof at === 'object' ? Object.keys(at) : names;
  if (set.length === 0) return 'names no provider';
  if (set.length > 1) return `must name exactly one provider, found ${set.slice(0, 8).join(', ')}`;
  return unsupportedProvider(set[0]!);
}

/** Literal unions: the first branch's error would say "must be equal to constant". */
const ENUMS: [RegExp, string][] = [
  [/^\/mode$/, 'must be one of native-sidecar, init-only, sidecar'],
  [/^\/stores\/[^/]+\/kind$/, 'must be SecretStore or ClusterSecretStore'],
];

/** Numbers with a range: one message for a wrong type and for out of range. */
const RANGES: Record<string, string> = {
  '/fileMode': 'must be an integer between 0 and 511',
  '/port': 'must be an integer between 0 and 65535',
  '/refreshSeconds': `must be a number of seconds between 1 and ${MAX_REFRESH_SECONDS}`,
};

function problemOf(e: AjvError, raw: unknown): ConfigError {
  const p = e.params;
  const literal = ENUMS.find(([re]) => re.test(e.instancePath));
  if (literal) return new ConfigError(fieldOf(e.instancePath), literal[1]);
  if (e.instancePath.endsWith('/provider') || /\/provider$/.test(e.instancePath)) {
    if (['additionalProperties', 'minProperties', 'maxProperties'].includes(e.keyword)) {
      return new ConfigError(fieldOf(e.instancePath), describeProvider(raw, e.instancePath));
    }
  }
  switch (e.keyword) {
    case 'required':
      return new ConfigError(fieldOf(e.instancePath, String(p.missingProperty)), 'is required');
    case 'additionalProperties':
      return new ConfigError(fieldOf(e.instancePath, String(p.additionalProperty).slice(0, 64)), 'is not a field of the agent configuration');
    case 'type':
      return new ConfigError(fieldOf(e.instancePath), RANGES[e.instancePath] ?? (p.type === 'object' ? 'must be an object' : p.type === 'array' ? 'must be a list' : `must be a ${String(p.type)}`));
    case 'const':
      return new ConfigError(fieldOf(e.instancePath), `must be ${JSON.stringify(p.allowedValue)}`);
    case 'minLength':
      return new ConfigError(fieldOf(e.instancePath), 'must be a non-empty string');
    case 'maxLength':
      return new ConfigError(fieldOf(e.instancePath), `is longer than ${String(p.limit)} characters`);
    case 'minimum':
    case 'maximum':
      return new ConfigError(fieldOf(e.instancePath), RANGES[e.instancePath] ?? `must be ${e.keyword === 'minimum' ? '>=' : '<='} ${String(p.limit)}`);
    case 'pattern':
      return new ConfigError(fieldOf(e.instancePath), patternProblem(e.instancePath, valueAt(raw, e.instancePath)));
    default:
      return new ConfigError(fieldOf(e.instancePath), e.message ?? 'is invalid');
  }
}

function valueAt(raw: unknown, pointer: string): unknown {
  return pointer.split('/').slice(1).reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], raw);
}

function patternProblem(pointer: string, value: unknown): string {
  if (/\/(outputDir|tokenPath|credentialsDir|configMapsDir)$/.test(pointer)) return 'must be an absolute path without ".." segments';
  if (/^\/env\/vars\/\d+\/name$/.test(pointer)) return ENV_NAME_PROBLEM;
  if (pointer.endsWith('/process')) return 'must be a process name (1-15 characters, no "/" or spaces)';
  return fileNameProblem(value as string) ?? 'must be a file name';
}

/** Union branches report the first branch's errors; re-check the branch `type` selects. */
function onChangeProblem(v: Record<string, unknown>): ConfigError {
  if (v.type === 'http') {
    if (!['POST', 'PUT', 'GET'].includes(v.method as string)) return new ConfigError('onChange.method', 'must be POST, PUT or GET');
    if (typeof v.url !== 'string') return new ConfigError('onChange.url', 'must be a non-empty string');
    return new ConfigError('onChange', 'has a field other than type, url and method');
  }
  if (v.type === 'signal') {
    if (typeof v.signal !== 'string' || !(v.signal in osConstants.signals) || !(SIGNALS as readonly string[]).includes(v.signal)) {
      return new ConfigError('onChange.signal', `must be one of ${SIGNALS.join(', ')}, got ${JSON.stringify(String(v.signal).slice(0, 32))}`);
    }
    if (typeof v.process !== 'string' || !/^[^\s/]{1,15}$/.test(v.process)) return new ConfigError('onChange.process', 'must be a process name (1-15 characters, no "/" or spaces)');
    return new ConfigError('onChange', 'has a field other than type, process and signal');
  }
  return new ConfigError('onChange.type', 'must be http or signal');
}

/** What the schema cannot say; `c` already has the schema's shape. */
function crossFieldProblem(c: AgentConfig & { refreshSeconds?: number }): ConfigError | undefined {
  if (c.mode !== 'init-only' && c.refreshSeconds === undefined) return new ConfigError('refreshSeconds', 'is required in the sidecar modes');
  for (const [key, store] of Object.entries(c.stores)) {
    const name = Object.keys(store.provider)[0]!;
    if (!providerMeta(name)) return new ConfigError(`stores[${JSON.stringify(key.slice(0, 128))}].provider`, unsupportedProvider(name));
  }
  const names = new Set<string>();
  for (const [i, s] of c.secrets.entries()) {
    const f = `secrets[${i}]`;
    const bytes = fileNameProblem(s.name);
    if (bytes) return new ConfigError(`${f}.name`, bytes);
    if (names.has(s.name)) return new ConfigError(`${f}.name`, `${JSON.stringify(s.name)} is used twice`);
    names.add(s.name);
    if (!Object.hasOwn(c.stores, s.store)) return new ConfigError(`${f}.store`, `must be a key of stores, got ${JSON.stringify(s.store.slice(0, 128))}`);
    if (s.data.length === 0 && s.dataFrom.length === 0) return new ConfigError(f, 'has neither data nor dataFrom');
    for (const [j, d] of s.data.entries()) {
      const p = fileNameProblem(d.secretKey);
      if (p) return new ConfigError(`${f}.data[${j}].secretKey`, p);
    }
  }
  const dyn = dynamicProblem(c, names);
  if (dyn) return dyn;
  for (const [i, t] of c.templates.entries()) {
    const p = fileNameProblem(t.file);
    if (p) return new ConfigError(`templates[${i}].file`, p);
    if (names.has(t.file)) return new ConfigError(`templates[${i}].file`, `${JSON.stringify(t.file)} collides with another secret or template`);
    names.add(t.file);
  }
  if (c.onChange?.type === 'http') {
    const p = onChangeUrlProblem(c.onChange.url);
    if (p) return new ConfigError('onChange.url', p);
  }
  return undefined;
}

/** Dynamic secrets: names apart from the ExternalSecrets', stores with leases, and only
 *  the mode whose agent lives as long as the pod (init-only would leave nothing to renew
 *  the lease, sidecar would mint twice). */
function dynamicProblem(c: AgentConfig, names: Set<string>): ConfigError | undefined {
  for (const [i, d] of (c.dynamicSecrets ?? []).entries()) {
    const f = `dynamicSecrets[${i}]`;
    if (c.mode !== 'native-sidecar') {
      return new ConfigError(f, c.mode === 'init-only'
        ? 'dynamic secrets need mode native-sidecar: an init-only agent exits after rendering, so nothing would renew the lease, and the end of the token that minted it would revoke it'
        : 'dynamic secrets need mode native-sidecar: in sidecar mode the init container and the sidecar would each mint a credential (two leases for one pod)');
    }
    const bytes = fileNameProblem(d.name);
    if (bytes) return new ConfigError(`${f}.name`, bytes);
    if (names.has(d.name)) return new ConfigError(`${f}.name`, `${JSON.stringify(d.name)} is used twice`);
    names.add(d.name);
    if (!Object.hasOwn(c.stores, d.store)) return new ConfigError(`${f}.store`, `must be a key of stores, got ${JSON.stringify(d.store.slice(0, 128))}`);
    const provider = Object.keys(c.stores[d.store]!.provider)[0]!;
    if (!providerMeta(provider)?.capabilities.leases) return new ConfigError(`${f}.store`, `provider ${provider} mints no leases (dynamic secrets need vault or openBao)`);
    if (d.method === 'GET' && d.parameters && Object.keys(d.parameters).length > 0) return new ConfigError(`${f}.parameters`, 'need method POST');
    const path = dynamicPathProblem(d.path);
    if (path) return new ConfigError(`${f}.path`, path);
  }
  return undefined;
}

/** The env file (docs/agent.md, "Environment variables"): written before the app starts, so not
 *  in sidecar mode; each variable once, from an ExternalSecret of `secrets`. */
function envProblem(c: AgentConfig): ConfigError | undefined {
  if (!c.env) return undefined;
  if (c.mode === 'sidecar') return new ConfigError('env', 'needs mode native-sidecar or init-only (sidecar mode is for clusters without native sidecars, which have no env files either)');
  const seen = new Set<string>();
  for (const [i, v] of c.env.vars.entries()) {
    if (seen.has(v.name)) return new ConfigError(`env.vars[${i}].name`, `${JSON.stringify(v.name)} is set twice`);
    seen.add(v.name);
    if (!c.secrets.some((s) => s.name === v.secret)) return new ConfigError(`env.vars[${i}].secret`, `must be the name of one of secrets, got ${JSON.stringify(v.secret.slice(0, 128))}`);
  }
  return undefined;
}

/** The first problem of a parsed config, or undefined when the agent accepts it. */
export function agentConfigProblem(raw: unknown): ConfigError | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return new ConfigError('(root)', 'must be an object');
  const version = (raw as Record<string, unknown>).version;
  if (version !== AGENT_CONFIG_VERSION) return new ConfigError('version', `must be ${AGENT_CONFIG_VERSION}, got ${JSON.stringify(version)?.slice(0, 32)}`);
  if (!validate(raw)) {
    const e = validate.errors![0]!;
    if (e.instancePath === '/onChange' || e.instancePath.startsWith('/onChange/')) {
      const v = (raw as Record<string, unknown>).onChange;
      if (v === null || typeof v !== 'object' || Array.isArray(v)) return new ConfigError('onChange', 'must be an object');
      return onChangeProblem(v as Record<string, unknown>);
    }
    return problemOf(e, raw);
  }
  return crossFieldProblem(raw as AgentConfig) ?? envProblem(raw as AgentConfig);
}

/** Checks a parsed config; throws ConfigError naming the first bad field. */
export function validateAgentConfig(raw: unknown): AgentConfig {
  const problem = agentConfigProblem(raw);
  if (problem) throw problem;
  return raw as AgentConfig;
}
