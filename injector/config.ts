// Stage 0 of the agent: read and validate its configuration (the JSON the webhook put in
// ESI_AGENT_CONFIG, or a file). Validation is strict and names the exact field, because
// a malformed config is a webhook/agent version skew or a hand-written pod, and the one
// line the agent prints is all an operator will see (exit code 2).
import { readFile } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { AGENT_CONFIG_ENV, AGENT_CONFIG_VERSION, type AgentConfig } from '../src/agent-config.js';
import { providerNameOf } from '../src/providers/registry.js';

export class ConfigError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`invalid agent config: ${field}: ${problem}`);
    this.name = 'ConfigError';
  }
}

const MODES = ['native-sidecar', 'init-only', 'sidecar'] as const;

/** Why `name` cannot be a file or directory name in the output volume, or undefined.
 *  Names starting with `..` are reserved for the writer (`..data`, generations). */
export function fileNameProblem(name: string): string | undefined {
  if (typeof name !== 'string' || name === '') return 'must be a non-empty string';
  if (name.includes('/') || name.includes('\\') || name.includes('\0')) return 'must not contain "/", "\\" or NUL';
  if (name === '.' || name === '..') return 'must not be "." or ".."';
  if (name.startsWith('..')) return 'must not start with ".." (reserved for the atomic writer)';
  if (Buffer.byteLength(name) > 255) return 'is longer than 255 bytes';
  return undefined;
}

/** Loopback hosts only: the agent never calls anything outside its pod. */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

type Obj = Record<string, unknown>;

function obj(v: unknown, field: string): Obj {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new ConfigError(field, 'must be an object');
  return v as Obj;
}

function arr(v: unknown, field: string): unknown[] {
  if (!Array.isArray(v)) throw new ConfigError(field, 'must be a list');
  return v;
}

function str(v: unknown, field: string, opts: { optional?: boolean; absolute?: boolean } = {}): string | undefined {
  if (v === undefined && opts.optional) return undefined;
  if (typeof v !== 'string' || v === '') throw new ConfigError(field, 'must be a non-empty string');
  if (opts.absolute && !isAbsolute(v)) throw new ConfigError(field, `must be an absolute path, got "${v}"`);
  return v;
}

function int(v: unknown, field: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new ConfigError(field, `must be an integer between ${min} and ${max}`);
  }
  return v;
}

function checkStores(v: unknown): void {
  for (const [key, raw] of Object.entries(obj(v, 'stores'))) {
    const f = `stores["${key}"]`;
    const s = obj(raw, f);
    if (s.kind !== 'SecretStore' && s.kind !== 'ClusterSecretStore') {
      throw new ConfigError(`${f}.kind`, 'must be SecretStore or ClusterSecretStore');
    }
    str(s.name, `${f}.name`);
    str(s.credentialsDir, `${f}.credentialsDir`, { optional: true, absolute: true });
    str(s.configMapsDir, `${f}.configMapsDir`, { optional: true, absolute: true });
    str(s.tokenPath, `${f}.tokenPath`, { optional: true, absolute: true });
    str(s.tokenAudience, `${f}.tokenAudience`, { optional: true });
    try {
      providerNameOf(obj(s.provider, `${f}.provider`) as never);
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw new ConfigError(`${f}.provider`, (err as Error).message.replace(/^spec\.provider /, ''));
    }
  }
}

function checkData(d: unknown, f: string): void {
  const entry = obj(d, f);
  const problem = fileNameProblem(entry.secretKey as string);
  if (problem) throw new ConfigError(`${f}.secretKey`, problem);
  str(obj(entry.remoteRef, `${f}.remoteRef`).key, `${f}.remoteRef.key`);
}

function checkSecret(raw: unknown, i: number, stores: Obj, seen: Set<string>): void {
  const f = `secrets[${i}]`;
  const s = obj(raw, f);
  const problem = fileNameProblem(s.name as string);
  if (problem) throw new ConfigError(`${f}.name`, problem);
  if (seen.has(s.name as string)) throw new ConfigError(`${f}.name`, `"${String(s.name)}" is used twice`);
  seen.add(s.name as string);
  if (typeof s.store !== 'string' || !Object.prototype.hasOwnProperty.call(stores, s.store)) {
    throw new ConfigError(`${f}.store`, `must be a key of stores, got "${String(s.store)}"`);
  }
  arr(s.data, `${f}.data`).forEach((d, j) => checkData(d, `${f}.data[${j}]`));
  arr(s.dataFrom, `${f}.dataFrom`).forEach((d, j) => obj(d, `${f}.dataFrom[${j}]`));
  if (s.template !== undefined) obj(s.template, `${f}.template`);
  if (s.templateEngine !== undefined && s.templateEngine !== 'go' && s.templateEngine !== 'handlebars') {
    throw new ConfigError(`${f}.templateEngine`, `must be "go" or "handlebars", got "${String(s.templateEngine)}"`);
  }
  if (arr(s.data, '').length === 0 && arr(s.dataFrom, '').length === 0) {
    throw new ConfigError(f, 'has neither data nor dataFrom');
  }
}

function checkTemplates(v: unknown, names: Set<string>): void {
  arr(v, 'templates').forEach((raw, i) => {
    const f = `templates[${i}]`;
    const t = obj(raw, f);
    const problem = fileNameProblem(t.file as string);
    if (problem) throw new ConfigError(`${f}.file`, problem);
    if (names.has(t.file as string)) throw new ConfigError(`${f}.file`, `"${String(t.file)}" collides with another secret or template`);
    names.add(t.file as string);
    if (typeof t.template !== 'string') throw new ConfigError(`${f}.template`, 'must be a string');
  });
}

function checkOnChange(v: unknown): void {
  if (v === undefined) return;
  const o = obj(v, 'onChange');
  if (o.type === 'http') {
    let url: URL;
    try {
      url = new URL(str(o.url, 'onChange.url')!);
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw new ConfigError('onChange.url', 'must be a URL');
    }
    if (url.protocol !== 'http:') throw new ConfigError('onChange.url', 'must be an http:// URL');
    if (!isLoopbackHost(url.hostname)) throw new ConfigError('onChange.url', `host "${url.hostname}" is not loopback (localhost, 127.0.0.0/8, ::1)`);
    if (!['POST', 'PUT', 'GET'].includes(o.method as string)) throw new ConfigError('onChange.method', 'must be POST, PUT or GET');
  } else if (o.type === 'signal') {
    str(o.process, 'onChange.process');
    if (typeof o.signal !== 'string' || !(o.signal in osConstants.signals)) {
      throw new ConfigError('onChange.signal', `must be a signal name such as SIGHUP, got "${String(o.signal)}"`);
    }
  } else {
    throw new ConfigError('onChange.type', 'must be http or signal');
  }
}

/** Checks the shape of a parsed config; throws ConfigError naming the first bad field. */
export function validateAgentConfig(raw: unknown): AgentConfig {
  const c = obj(raw, '(root)');
  if (c.version !== AGENT_CONFIG_VERSION) throw new ConfigError('version', `must be ${AGENT_CONFIG_VERSION}, got ${JSON.stringify(c.version)}`);
  if (!MODES.includes(c.mode as never)) throw new ConfigError('mode', `must be one of ${MODES.join(', ')}`);
  const pod = obj(c.pod, 'pod');
  str(pod.namespace, 'pod.namespace');
  str(pod.name, 'pod.name');
  if (typeof pod.serviceAccountName !== 'string') throw new ConfigError('pod.serviceAccountName', 'must be a string');
  str(c.outputDir, 'outputDir', { absolute: true });
  int(c.fileMode, 'fileMode', 0, 0o777);
  if (c.mode !== 'init-only' || c.refreshSeconds !== undefined) {
    if (typeof c.refreshSeconds !== 'number' || !(c.refreshSeconds >= 1) || !Number.isFinite(c.refreshSeconds)) {
      throw new ConfigError('refreshSeconds', 'must be a number of seconds >= 1');
    }
  }
  str(c.tokenPath, 'tokenPath', { optional: true, absolute: true });
  str(c.tokenAudience, 'tokenAudience', { optional: true });
  int(c.port, 'port', 0, 65535);
  checkStores(c.stores);
  const names = new Set<string>();
  arr(c.secrets, 'secrets').forEach((s, i) => checkSecret(s, i, c.stores as Obj, names));
  checkTemplates(c.templates, names);
  checkOnChange(c.onChange);
  return c as unknown as AgentConfig;
}

export function parseAgentConfig(text: string, source: string): AgentConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(source, `not valid JSON (${(err as Error).message.split('\n')[0]})`);
  }
  return validateAgentConfig(raw);
}

/** The config from `configFile` if given, else from the ESI_AGENT_CONFIG variable. */
export async function readAgentConfig(opts: { env: NodeJS.ProcessEnv; configFile?: string }): Promise<AgentConfig> {
  if (opts.configFile) {
    let text: string;
    try {
      text = await readFile(opts.configFile, 'utf8');
    } catch (err) {
      throw new ConfigError(opts.configFile, `cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    return parseAgentConfig(text, opts.configFile);
  }
  const text = opts.env[AGENT_CONFIG_ENV];
  if (text === undefined || text === '') throw new ConfigError(AGENT_CONFIG_ENV, 'is not set (or pass --config-file)');
  return parseAgentConfig(text, AGENT_CONFIG_ENV);
}

/** A container path from the config, under `root` (so the agent runs outside a pod). */
export function underRoot(root: string | undefined, path: string): string {
  return root ? join(root, path) : path;
}
