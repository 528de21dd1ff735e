// Turns a pod's `esi.dev/` annotations into an InjectionRequest, driven entirely by
// the table in annotations.ts. Every problem is collected, so one denial lists them all.
import Handlebars from 'handlebars';
import {
  ANNOTATIONS, FILE_NAME, INJECTED_ANNOTATION, PREFIX, TEMPLATE_PREFIX,
  type AnnotationSpec, type InjectionRequest,
} from './annotations.js';

export type ParseResult = { ok: true; request: InjectionRequest } | { ok: false; problems: string[] };

const KNOWN = new Set<string>([...ANNOTATIONS.map((a) => a.name), INJECTED_ANNOTATION]);

function closest(name: string): string | undefined {
  const candidates = [...KNOWN].filter((k) => k !== INJECTED_ANNOTATION);
  const score = (a: string, b: string) => {
    // Cheap similarity: shared prefix length plus shared characters; enough for typos.
    let p = 0;
    while (p < a.length && a[p] === b[p]) p++;
    return p + [...new Set(a)].filter((c) => b.includes(c)).length;
  };
  const best = candidates.sort((a, b) => score(name, b) - score(name, a))[0];
  return best && score(name, best) > PREFIX.length + 4 ? best : undefined;
}

// Pods of one workload carry the same templates: remember each text's verdict (bounded).
const parseVerdicts = new Map<string, string | undefined>();
const MAX_VERDICTS = 1000;

function parseProblem(template: string): string | undefined {
  if (parseVerdicts.has(template)) return parseVerdicts.get(template);
  let verdict: string | undefined;
  try {
    Handlebars.parse(template);
  } catch (err) {
    // Handlebars' parse errors carry the line; never echo the template text back.
    verdict = String((err as Error).message).split('\n')[0];
  }
  if (parseVerdicts.size >= MAX_VERDICTS) parseVerdicts.delete(parseVerdicts.keys().next().value!);
  parseVerdicts.set(template, verdict);
  return verdict;
}

function templateProblems(file: string, template: string): string | undefined {
  if (!FILE_NAME.test(file) || file.startsWith('..')) {
    return `${TEMPLATE_PREFIX}${file}: "${file}" is not a valid file name (letters, digits, ".", "_", "-"; not starting with "..")`;
  }
  const problem = parseProblem(template);
  return problem ? `${TEMPLATE_PREFIX}${file}: the template does not parse: ${problem}` : undefined;
}

export function parseAnnotations(annotations: Record<string, string> | undefined): ParseResult {
  const ann = annotations ?? {};
  const problems: string[] = [];
  const out: Record<string, unknown> = {};
  for (const spec of ANNOTATIONS as readonly AnnotationSpec[]) {
    const raw = ann[spec.name];
    const value = raw ?? spec.default;
    if (value === undefined) continue;
    try {
      out[spec.field] = spec.parse(value);
    } catch (err) {
      problems.push(`${spec.name}: ${(err as Error).message} (got "${raw}")`);
    }
  }
  const templates: InjectionRequest['templates'] = [];
  for (const [name, value] of Object.entries(ann)) {
    if (!name.startsWith(PREFIX) || KNOWN.has(name)) continue;
    if (name.startsWith(TEMPLATE_PREFIX)) {
      const file = name.slice(TEMPLATE_PREFIX.length);
      const problem = templateProblems(file, value);
      if (problem) problems.push(problem);
      else templates.push({ file, template: value });
      continue;
    }
    const hint = closest(name);
    problems.push(`${name}: unknown annotation${hint ? `; did you mean ${hint}?` : ''} (see docs/annotations.md)`);
  }
  if (!out.secrets && !problems.some((p) => p.startsWith('esi.dev/secrets'))) {
    problems.push('esi.dev/secrets: required: name the ExternalSecrets to mount, e.g. esi.dev/secrets: "db,api-keys"');
  }
  const secrets = (out.secrets as string[] | undefined) ?? [];
  for (const t of templates) {
    if (secrets.includes(t.file)) problems.push(`${TEMPLATE_PREFIX}${t.file}: the file name clashes with the directory of ExternalSecret "${t.file}"`);
  }
  if (problems.length) return { ok: false, problems };
  return { ok: true, request: { ...(out as Omit<InjectionRequest, 'templates'>), templates } as InjectionRequest };
}
