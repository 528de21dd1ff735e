// Secrets as environment variables (annotation esi.dev/env, docs/agent.md):
// the agent writes an env file into a memory-backed emptyDir mounted only into the agent;
// the app containers get `env[].valueFrom.fileKeyRef` entries the kubelet resolves from that
// file each time it starts them (Kubernetes 1.35+, feature EnvFiles). Parsing, resolution
// against the ExternalSecret and the pod changes are here; mutate.ts calls them.
import type { V1Container, V1EnvVar, V1Pod, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import type { AgentEnv } from '../agent-config/types.js';
import type { ExternalSecret } from '../api/types.js';
import { envNameProblem } from '../agent-config/check.js';
import { MAX_ENV_VARS } from '../agent-config/limits.js';
import { isValidName } from '../kube/names.js';

const ENV_ANNOTATION = 'esi.dev/env';
export const ENV_VOLUME = 'esi-env';
/** Under the agent's internal directory (mutate.ts AGENT_INTERNAL_DIR): never the app's. */
export const ENV_DIR = '/var/run/esi/env';
/** The file in the volume: the `path` of every fileKeyRef. */
export const ENV_FILE = 'esi.env';
/** Holds the file twice (the atomic writer keeps the previous generation) with room. */
const ENV_VOLUME_SIZE = '4Mi';

/** One `<ExternalSecret>[:VAR,VAR=key,…]` entry; no `vars` = every key of the
 *  ExternalSecret's `data`, each its own variable name. */
export interface EnvRequest {
  secret: string;
  vars?: { name: string; key: string }[];
}

/** ESO's secretKey characters. */
const KEY = /^[-._a-zA-Z0-9]{1,253}$/;
const MAX_ENTRIES = 16;

const short = (s: string) => JSON.stringify(s.slice(0, 64));

/** `db:DB_USER=username,DB_PASSWORD=password; api-keys` → requests; throws with what is wrong. */
export function parseEnvAnnotation(raw: string): EnvRequest[] {
  const entries = raw.split(';').map((s) => s.trim()).filter(Boolean);
  if (entries.length === 0) throw new Error('must name at least one ExternalSecret, e.g. "db:DB_PASSWORD=password"');
  if (entries.length > MAX_ENTRIES) throw new Error(`lists ${entries.length} ExternalSecrets; at most ${MAX_ENTRIES}`);
  const out: EnvRequest[] = [];
  const names = new Set<string>();
  let count = 0;
  for (const entry of entries) {
    const colon = entry.indexOf(':');
    const secret = (colon < 0 ? entry : entry.slice(0, colon)).trim();
    if (!isValidName(secret, 'subdomain')) throw new Error(`${short(secret)} is not a valid ExternalSecret name (lowercase letters, digits, "-", ".")`);
    if (out.some((r) => r.secret === secret)) throw new Error(`names ExternalSecret "${secret}" twice; list its variables in one entry`);
    const req: EnvRequest = { secret };
    if (colon >= 0) {
      const items = entry.slice(colon + 1).split(',').map((s) => s.trim()).filter(Boolean);
      if (items.length === 0) throw new Error(`"${secret}:" lists no variables; leave out the ":" to take every key`);
      req.vars = items.map((item) => {
        const eq = item.indexOf('=');
        const name = eq < 0 ? item : item.slice(0, eq).trim();
        const key = eq < 0 ? item : item.slice(eq + 1).trim();
        const problem = envNameProblem(name);
        if (problem) throw new Error(`${short(name)} ${problem}${eq < 0 ? `; name the variable: ${secret}:MY_VAR=${key.slice(0, 64)}` : ''}`);
        if (!KEY.test(key)) throw new Error(`${short(key)} is not an ExternalSecret key (letters, digits, "-", ".", "_")`);
        return { name, key };
      });
      for (const v of req.vars) {
        if (names.has(v.name)) throw new Error(`sets ${v.name} twice`);
        names.add(v.name);
      }
      count += req.vars.length;
    }
    out.push(req);
  }
  if (count > MAX_ENV_VARS) throw new Error(`sets ${count} variables; at most ${MAX_ENV_VARS}`);
  return out;
}

/** Keys the ExternalSecret will have, when admission can know them: its `data` entries,
 *  unless dataFrom or its own template decide the keys only when the agent fetches. */
function knownKeys(es: ExternalSecret): string[] | undefined {
  if ((es.spec.dataFrom ?? []).length > 0 || es.spec.target?.template) return undefined;
  return (es.spec.data ?? []).map((d) => d.secretKey);
}

/** The variables of every request, checked against the ExternalSecrets (`lookup` returns
 *  undefined for one that does not exist; resolve.ts reports that). */
export function resolveEnv(requests: EnvRequest[], lookup: (name: string) => ExternalSecret | undefined, problems: string[]): AgentEnv['vars'] {
  const vars: AgentEnv['vars'] = [];
  for (const r of requests) {
    const es = lookup(r.secret);
    if (!es) continue;
    const keys = knownKeys(es);
    const where = `${ENV_ANNOTATION}: ExternalSecret "${r.secret}"`;
    if (!r.vars) {
      if (!keys) {
        problems.push(`${where} has dataFrom or a target.template, so its keys are known only when the agent fetches; list the variables: "${r.secret}:MY_VAR=<key>,…"`);
        continue;
      }
      for (const key of keys) {
        if (envNameProblem(key)) problems.push(`${where}: key ${short(key)} is not an environment variable name; name the variable: "${r.secret}:MY_VAR=${key.slice(0, 64)}"`);
        else vars.push({ name: key, secret: r.secret, key });
      }
      continue;
    }
    for (const v of r.vars) {
      if (keys && !keys.includes(v.key)) problems.push(`${where} has no key ${short(v.key)} (its keys: ${keys.slice(0, 16).join(', ') || 'none'})`);
      else vars.push({ name: v.name, secret: r.secret, key: v.key });
    }
  }
  const seen = new Set<string>();
  for (const v of vars) {
    if (seen.has(v.name)) problems.push(`${ENV_ANNOTATION}: variable ${v.name} comes from two keys; name them apart with "VAR=key"`);
    seen.add(v.name);
  }
  if (vars.length > MAX_ENV_VARS) problems.push(`${ENV_ANNOTATION}: sets ${vars.length} variables; at most ${MAX_ENV_VARS}`);
  return vars;
}

/** The apiserver's version, as `/version` reports it (the webhook reads it at start). */
export interface ClusterVersion {
  major: string;
  minor: string;
  gitVersion: string;
}

/** Why this cluster cannot serve esi.dev/env, or undefined (also when unknown). Before 1.35
 *  the apiserver drops `fileKeyRef` (1.34, EnvFiles off by default) or does not know it, and
 *  then refuses the pod with a message that does not say why; 1.34's alpha kubelet also
 *  parses another format. A 1.35 cluster with the gate turned off is not detectable here. */
export function envClusterProblem(version: ClusterVersion | undefined): string | undefined {
  if (!version) return undefined;
  const major = parseInt(version.major, 10);
  const minor = parseInt(version.minor, 10);
  if (!Number.isFinite(major) || !Number.isFinite(minor) || major > 1 || (major === 1 && minor >= 35)) return undefined;
  return `${ENV_ANNOTATION}: needs Kubernetes 1.35 or later (env files: env[].valueFrom.fileKeyRef, feature EnvFiles); this cluster's apiserver is ${version.gitVersion.slice(0, 64)}, which would drop the field and refuse the pod ("must specify one of: \`fieldRef\`, …"); mount the ExternalSecret as files with esi.dev/secrets instead`;
}

/** Pod-shape problems of an env request: `targets` are the containers that get the
 *  variables, `agentIndex` where the agent will stand among the init containers. */
export function envPodProblems(pod: V1Pod, targets: V1Container[], agentIndex: number): string[] {
  const problems: string[] = [];
  if ((pod.spec?.volumes ?? []).some((v) => v.name === ENV_VOLUME)) problems.push(`the pod already has a volume named "${ENV_VOLUME}", which ESI needs; rename it`);
  const inits = pod.spec?.initContainers ?? [];
  for (const c of targets) {
    const i = inits.indexOf(c);
    if (i >= 0 && i < agentIndex) {
      problems.push(`${ENV_ANNOTATION}: init container "${c.name}" starts before ESI's agent (which runs after the pod's last native sidecar), so the env file does not exist yet when it starts; leave it out of esi.dev/containers`);
    }
  }
  return problems;
}

/** Variables a target container already sets under a name ESI would set. */
export function envClashes(targets: V1Container[], vars: AgentEnv['vars']): string[] {
  const names = new Set(vars.map((v) => v.name));
  const problems: string[] = [];
  for (const c of targets) {
    for (const e of c.env ?? []) {
      if (names.has(e.name)) problems.push(`${ENV_ANNOTATION}: container "${c.name}" already sets ${e.name}; remove it there or name ESI's variable differently`);
    }
  }
  return problems;
}

export function envVolume(): V1Volume {
  return { name: ENV_VOLUME, emptyDir: { medium: 'Memory', sizeLimit: ENV_VOLUME_SIZE } };
}

export function envAgentMount(): V1VolumeMount {
  return { name: ENV_VOLUME, mountPath: ENV_DIR };
}

export function agentEnv(vars: AgentEnv['vars']): AgentEnv {
  return { dir: ENV_DIR, file: ENV_FILE, vars };
}

/** `c` with one fileKeyRef per variable. Not optional: the agent writes every variable or
 *  no file at all (its error names the key), so a missing key is never silently unset. */
export function withEnvRefs(c: V1Container, vars: AgentEnv['vars']): V1Container {
  const refs: V1EnvVar[] = vars.map((v) => ({
    name: v.name,
    valueFrom: { fileKeyRef: { volumeName: ENV_VOLUME, path: ENV_FILE, key: v.name, optional: false } },
  }));
  return { ...c, env: [...(c.env ?? []), ...refs] };
}
