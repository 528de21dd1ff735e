// Static checks of `spec.provider.webhook` (ESO's field names) and the Secret keys it
// references. No I/O. The templates are parsed here, so a construct ESI does not
// interpret (src/providers/webhook/template.ts) is an admission denial naming the field.
import type { WebhookProvider } from '../../api/types.js';
import { parseGoDuration } from '../../duration.js';
import { fieldProblems, fieldReferences, type FieldRule } from '../fields.js';
import { secretKeyProblems } from '../spec-checks.js';
import type { StoreReferences } from '../types.js';
import { parseJsonPath } from './jsonpath.js';
import { parseTemplate, type Template } from './template.js';
import { isObject, type Json } from '../../json-object.js';


export const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']);
/** The one map of remoteRef fields templates read (ESO's GetTemplateData). */
export const REMOTE_REF = 'remoteRef';
/** Longest `timeout` a store may ask for: the caller's own deadline bounds it anyway. */
const MAX_TIMEOUT_MS = 60_000;

/** Every template of the spec with its field name (`webhook.headers.Authorization`). */
function templatesOf(spec: WebhookProvider): { field: string; source: string }[] {
  const out = [{ field: 'webhook.url', source: spec.url }];
  for (const [k, v] of Object.entries(spec.headers ?? {})) out.push({ field: `webhook.headers.${k}`, source: v }, { field: `webhook.headers (key ${k})`, source: k });
  if (spec.body !== undefined) out.push({ field: 'webhook.body', source: spec.body });
  if (spec.result?.jsonPath !== undefined) out.push({ field: 'webhook.result.jsonPath', source: spec.result.jsonPath });
  return out;
}

/** Parses every template of a spec that passed validateSpec. */
export function parsedTemplates(spec: WebhookProvider): Map<string, Template> {
  const out = new Map<string, Template>();
  for (const t of templatesOf(spec)) out.set(t.field, parseTemplate(t.source));
  return out;
}

/** The reference fields at fixed paths; `secrets[].secretRef` is a list (secretsProblems). */
export const FIELDS: readonly FieldRule[] = [
  { path: 'caBundle', kind: 'caBundle' },
  { path: 'caProvider', kind: 'caProvider' },
];

function secretsProblems(secrets: unknown): string[] {
  if (secrets === undefined) return [];
  if (!Array.isArray(secrets)) return ['webhook.secrets must be a list'];
  const out: string[] = [];
  const names = new Set<string>();
  secrets.forEach((s: unknown, i) => {
    const where = `webhook.secrets[${i}]`;
    if (!isObject(s)) return out.push(`${where} must be an object with name and secretRef`);
    if (typeof s.name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_-]*$/.test(s.name)) out.push(`${where}.name must be a template identifier such as auth`);
    else if (s.name === REMOTE_REF) out.push(`${where}.name "${REMOTE_REF}" is the name of the remote reference in templates`);
    else if (names.has(s.name)) out.push(`${where}.name "${s.name}" is listed twice`);
    else names.add(s.name);
    out.push(...secretKeyProblems(`${where}.secretRef`, s.secretRef, { key: false }));
    return undefined;
  });
  return out;
}

function templateProblems(spec: WebhookProvider): string[] {
  const out: string[] = [];
  const names = new Set([REMOTE_REF, ...(spec.secrets ?? []).map((s) => s.name)]);
  for (const t of templatesOf(spec)) {
    if (typeof t.source !== 'string') {
      out.push(`${t.field} must be a string`);
      continue;
    }
    try {
      for (const path of parseTemplate(t.source).fields) {
        if (path.length !== 2) out.push(`${t.field}: .${path.join('.')} must name a map and a key (.remoteRef.key, .<secret name>.<key>)`);
        else if (!names.has(path[0]!)) out.push(`${t.field}: .${path[0]} is neither remoteRef nor a name listed in webhook.secrets`);
      }
    } catch (err) {
      out.push(`${t.field}: ${(err as Error).message}`);
    }
  }
  return out;
}

function requestProblems(spec: Json): string[] {
  const out: string[] = [];
  if (typeof spec.url !== 'string' || spec.url === '') out.push('webhook.url must be a non-empty string');
  else if (!/^https?:\/\//i.test(spec.url)) out.push('webhook.url must be an http:// or https:// URL');
  if (spec.method !== undefined && (typeof spec.method !== 'string' || !METHODS.has(spec.method.toUpperCase()))) {
    out.push(`webhook.method must be one of ${[...METHODS].join(', ')}`);
  }
  if (spec.headers !== undefined && (!isObject(spec.headers) || Object.values(spec.headers).some((v) => typeof v !== 'string'))) {
    out.push('webhook.headers must be a map of strings');
  }
  if (spec.body !== undefined && typeof spec.body !== 'string') out.push('webhook.body must be a string');
  if (spec.timeout !== undefined) {
    try {
      const ms = parseGoDuration(String(spec.timeout), 'webhook.timeout');
      if (ms <= 0 || ms > MAX_TIMEOUT_MS) out.push(`webhook.timeout must be more than 0 and at most ${MAX_TIMEOUT_MS / 1000}s`);
    } catch (err) {
      out.push((err as Error).message);
    }
  }
  return out;
}

function resultProblems(spec: Json): string[] {
  const out: string[] = [];
  if (spec.result !== undefined && !isObject(spec.result)) out.push('webhook.result must be an object');
  const jsonPath = isObject(spec.result) ? spec.result.jsonPath : undefined;
  if (jsonPath !== undefined && typeof jsonPath !== 'string') out.push('webhook.result.jsonPath must be a string');
  // A jsonPath holding no template is checked now; a templated one after rendering.
  if (typeof jsonPath === 'string' && jsonPath !== '' && !jsonPath.includes('{{')) {
    try {
      parseJsonPath(jsonPath);
    } catch (err) {
      out.push(`webhook.result.jsonPath: ${(err as Error).message}`);
    }
  }
  return out;
}

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['webhook must be an object'];
  const out = [...requestProblems(spec), ...resultProblems(spec), ...fieldProblems('webhook', FIELDS, spec)];
  if (spec.auth !== undefined) out.push('webhook.auth (NTLM) is not supported by ESI: send credentials in headers built from webhook.secrets');
  out.push(...secretsProblems(spec.secrets));
  if (out.length === 0) out.push(...templateProblems(spec as unknown as WebhookProvider));
  return out;
}

/** `{name, key}` of every Secret key the templates read, per `secrets[]` entry: only
 *  those keys are mounted into the agent and read by the reconciler. */
export function secretKeysRead(spec: WebhookProvider): { name: string; index: number; keys: string[] }[] {
  const used = new Map<string, Set<string>>();
  for (const t of templatesOf(spec)) {
    let fields: string[][];
    try {
      fields = parseTemplate(t.source).fields;
    } catch {
      continue;
    }
    for (const [map, key] of fields) if (map && key) (used.get(map) ?? used.set(map, new Set()).get(map)!).add(key);
  }
  return (spec.secrets ?? []).map((s, index) => ({ name: s.name, index, keys: [...(used.get(s.name) ?? [])].sort() }));
}

export function references(spec: unknown): StoreReferences {
  const refs = fieldReferences('webhook', FIELDS, spec);
  if (validateSpec(spec).length > 0) return refs;
  const s = spec as WebhookProvider;
  for (const { index, keys } of secretKeysRead(s)) {
    const ref = s.secrets![index]!.secretRef;
    for (const key of keys) {
      refs.credentials.push({ path: `webhook.secrets[${index}].secretRef`, kind: 'Secret', name: ref.name, key, ...(ref.namespace ? { namespace: ref.namespace } : {}) });
    }
  }
  return refs;
}
