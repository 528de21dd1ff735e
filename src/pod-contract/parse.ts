// Turns a pod's `esi.dev/` annotations into an InjectionRequest, driven entirely by
// the table in annotations.ts. Every problem is collected, so one denial lists them all.
// The cost is linear in the annotations' size (docs/decisions/0002-admission-reads-only-caches.md):
// templates get handlebars' grammar checked by src/templating/syntax.ts, never by
// handlebars' own parser, and values are quoted only in short.
import { checkTemplateSyntax, TemplateSyntaxError } from '../templating/syntax.js';
import {
  ANNOTATIONS, DYNAMIC_PREFIX, FILE_NAME, INJECTED_ANNOTATION, parseDynamic, PREFIX, TEMPLATE_PREFIX,
  type AnnotationSpec, type DynamicRequest, type InjectionRequest,
} from './annotations.js';
import type { EnvRequest } from './env.js';

export type ParseResult = { ok: true; request: InjectionRequest } | { ok: false; problems: string[] };

const KNOWN = new Set<string>([...ANNOTATIONS.map((a) => a.name), INJECTED_ANNOTATION]);

const CANDIDATES = [...KNOWN].filter((k) => k !== INJECTED_ANNOTATION);
/** Typo hints are offered for the first few unknown names only (bounded work). */
const MAX_HINTS = 10;

function closest(name: string): string | undefined {
  // Cheap similarity: shared prefix length plus shared characters; enough for typos.
  const chars = new Set(name);
  const score = (b: string) => {
    let p = 0;
    while (p < name.length && name[p] === b[p]) p++;
    return p + [...chars].filter((c) => b.includes(c)).length;
  };
  let best: string | undefined;
  let bestScore = -1;
  for (const c of CANDIDATES) {
    const s = score(c);
    if (s > bestScore) [best, bestScore] = [c, s];
  }
  return bestScore > PREFIX.length + 4 ? best : undefined;
}

/** Longest denial message (the apiserver shows it to whoever created the pod). */
export const MAX_DENIAL_LENGTH = 4096;
/** Characters of a value quoted back in a problem. */
const MAX_QUOTED = 64;
/** Template text of one pod, all `esi.dev/template-*` annotations together. */
const MAX_TEMPLATES_LENGTH = 64 * 1024;

/** `value` as a short JSON string: users see what they wrote, never a megabyte of it. */
export function quoteShort(value: string): string {
  return value.length > MAX_QUOTED ? `${JSON.stringify(value.slice(0, MAX_QUOTED))}… (${value.length} characters)` : JSON.stringify(value);
}

/** Joins problems into one bounded line: the first ones in full, then a count. */
export function joinProblems(problems: string[], budget = MAX_DENIAL_LENGTH - 200): string {
  let out = '';
  for (const [i, p] of problems.entries()) {
    const piece = i === 0 ? p : `; ${p}`;
    if (out.length + piece.length > budget) return `${out}; and ${problems.length - i} more problems`;
    out += piece;
  }
  return out;
}

function templateProblem(file: string, template: unknown): string | undefined {
  const name = `${TEMPLATE_PREFIX}${file}`;
  if (!FILE_NAME.test(file) || file.startsWith('..')) {
    return `${name}: ${quoteShort(file)} is not a valid file name (letters, digits, ".", "_", "-"; not starting with "..")`;
  }
  if (typeof template !== 'string') return `${name}: must be a string`;
  try {
    checkTemplateSyntax(template);
  } catch (err) {
    if (!(err instanceof TemplateSyntaxError)) throw err;
    return `${name}: the template does not parse: ${err.message}`;
  }
  return undefined;
}

/** The table's annotations: typed values into `out`, problems naming each annotation. */
function parseTable(ann: Record<string, unknown>, out: Record<string, unknown>, problems: string[]): void {
  for (const spec of ANNOTATIONS as readonly AnnotationSpec[]) {
    const raw = Object.hasOwn(ann, spec.name) ? ann[spec.name] : undefined;
    if (raw !== undefined && typeof raw !== 'string') {
      problems.push(`${spec.name}: must be a string`);
      continue;
    }
    const value = raw ?? spec.default;
    if (value === undefined) continue;
    try {
      out[spec.field] = spec.parse(value);
    } catch (err) {
      problems.push(`${spec.name}: ${(err as Error).message} (got ${quoteShort(raw ?? '')})`);
    }
  }
}

/** At most this many dynamic secrets per pod (the agent configuration's own bound). */
const MAX_DYNAMIC = 32;

/** `esi.dev/dynamic-<name>`: a credential minted for the pod (docs/dynamic-secrets.md). */
function dynamicEntry(name: string, value: unknown, dynamic: DynamicRequest[], problems: string[]): void {
  const entry = name.slice(DYNAMIC_PREFIX.length);
  if (!FILE_NAME.test(entry) || entry.startsWith('..')) {
    problems.push(`${quoteShort(name).slice(1, -1)}: ${quoteShort(entry)} is not a valid name (letters, digits, ".", "_", "-")`);
    return;
  }
  if (typeof value !== 'string') {
    problems.push(`${name}: must be a string`);
    return;
  }
  if (dynamic.length >= MAX_DYNAMIC) {
    problems.push(`${name}: at most ${MAX_DYNAMIC} dynamic secrets per pod`);
    return;
  }
  try {
    dynamic.push(parseDynamic(entry, value));
  } catch (err) {
    problems.push(`${name}: ${(err as Error).message} (got ${quoteShort(value)})`);
  }
}

/** `esi.dev/template-*`, `esi.dev/dynamic-*` and unknown `esi.dev/` names; template text
 *  is bounded per pod. */
function parseRest(ann: Record<string, unknown>, problems: string[]): { templates: InjectionRequest['templates']; dynamic: DynamicRequest[] } {
  const templates: InjectionRequest['templates'] = [];
  const dynamic: DynamicRequest[] = [];
  let templateLength = 0;
  let unknown = 0;
  for (const [name, value] of Object.entries(ann)) {
    if (!name.startsWith(PREFIX) || KNOWN.has(name)) continue;
    if (name.startsWith(DYNAMIC_PREFIX)) {
      dynamicEntry(name, value, dynamic, problems);
      continue;
    }
    if (!name.startsWith(TEMPLATE_PREFIX)) {
      const hint = ++unknown <= MAX_HINTS ? closest(name) : undefined;
      problems.push(`${quoteShort(name).slice(1, -1)}: unknown annotation${hint ? `; did you mean ${hint}?` : ''} (see docs/annotations.md)`);
      continue;
    }
    if (typeof value === 'string') templateLength += value.length;
    // Past the pod's budget, no further template is even looked at.
    if (templateLength > MAX_TEMPLATES_LENGTH) continue;
    const file = name.slice(TEMPLATE_PREFIX.length);
    const problem = templateProblem(file, value);
    if (problem) problems.push(problem);
    else templates.push({ file, template: value as string });
  }
  if (templateLength > MAX_TEMPLATES_LENGTH) {
    problems.push(`${TEMPLATE_PREFIX}*: the templates total ${templateLength} characters; the limit is ${MAX_TEMPLATES_LENGTH}`);
  }
  return { templates, dynamic };
}

/** What esi.dev/mode allows and what dynamic secrets' names may clash with. */
function modeAndNameProblems(out: Record<string, unknown>, secrets: string[], dynamic: DynamicRequest[]): string[] {
  const problems: string[] = [];
  const envSecrets = ((out.env as EnvRequest[] | undefined) ?? []).map((r) => r.secret);
  // The env file exists before the app starts only when an init container or a native
  // sidecar writes it; sidecar mode's clusters (no native sidecars) have no env files.
  if (out.env && out.mode === 'sidecar') problems.push('esi.dev/env: needs esi.dev/mode native-sidecar or init-only (sidecar mode is for clusters without native sidecars, which have no env files either)');
  for (const d of dynamic) {
    if (secrets.includes(d.name) || envSecrets.includes(d.name)) problems.push(`${DYNAMIC_PREFIX}${d.name}: the name clashes with ExternalSecret "${d.name}" in ${secrets.includes(d.name) ? 'esi.dev/secrets' : 'esi.dev/env'}`);
    // The agent lives as long as the pod only as a native sidecar (docs/dynamic-secrets.md).
    if (out.mode !== undefined && out.mode !== 'native-sidecar') {
      problems.push(`${DYNAMIC_PREFIX}${d.name}: dynamic secrets need esi.dev/mode native-sidecar (${out.mode === 'init-only'
        ? 'an init-only agent exits after rendering: nothing would renew the lease, and the end of its token would revoke it'
        : 'in sidecar mode the init container and the sidecar would mint two credentials for one pod'})`);
    }
  }
  if (!dynamic.length) {
    for (const [field, name] of [['leaseOverlapSeconds', 'esi.dev/lease-overlap'], ['leaseRevokeOnExit', 'esi.dev/lease-revoke-on-exit']] as const) {
      if (out[field] !== undefined) problems.push(`${name}: applies to esi.dev/dynamic-<name> credentials, and the pod has none; remove it`);
    }
  }
  return problems;
}

export function parseAnnotations(annotations: Record<string, unknown> | undefined): ParseResult {
  const ann = annotations ?? {};
  if (typeof ann !== 'object' || Array.isArray(ann)) return { ok: false, problems: ['metadata.annotations: must be a map of names to strings'] };
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  parseTable(ann, out, problems);
  const { templates, dynamic } = parseRest(ann, problems);
  if (!out.secrets && !out.env && dynamic.length === 0 && !problems.some((p) => /^esi\.dev\/(secrets|env)/.test(p) || p.startsWith(DYNAMIC_PREFIX))) {
    problems.push('esi.dev/secrets: required: name the ExternalSecrets to mount, e.g. esi.dev/secrets: "db,api-keys" (or esi.dev/env for environment variables)');
  }
  const secrets = (out.secrets as string[] | undefined) ?? [];
  problems.push(...modeAndNameProblems(out, secrets, dynamic));
  for (const t of templates) {
    if (secrets.includes(t.file)) problems.push(`${TEMPLATE_PREFIX}${t.file}: the file name clashes with the directory of ExternalSecret "${t.file}"`);
    if (dynamic.some((d) => d.name === t.file)) problems.push(`${TEMPLATE_PREFIX}${t.file}: the file name clashes with the directory of ${DYNAMIC_PREFIX}${t.file}`);
  }
  if (problems.length) return { ok: false, problems };
  return { ok: true, request: { ...(out as Omit<InjectionRequest, 'templates' | 'dynamic'>), secrets, templates, dynamic } as InjectionRequest };
}
