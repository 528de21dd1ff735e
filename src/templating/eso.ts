// An ExternalSecret's own `target.template`. By default it is what ESO renders: a Go
// template (engine v2), rendered by ESI's Go engine (src/templating/go/). ESI's handlebars
// engine stays available as an opt-in; `engineVersion` is an enum ESI cannot extend (ESI
// must work with CRDs installed by another controller), so the opt-in is an annotation:
//   metadata.annotations["esi.dev/template-engine"] = "handlebars"
// Go templates are parsed at admission, so a syntax error is a denial, not an agent failure.
import type { ExternalSecretTemplate } from '../api/types.js';
import type { TemplateEngine } from './engine.js';
import { TemplateError } from './errors.js';
import { secretScope } from './context.js';
import { loadYaml } from './lazy.js';
import { parseGoTemplates, renderGoTemplates, type GoRenderJob, type GoTemplate } from './go/index.js';

export const TEMPLATE_ENGINE_ANNOTATION = 'esi.dev/template-engine';
export const HANDLEBARS = 'handlebars';

export type TemplateEngineChoice = 'none' | 'handlebars' | 'go';

/** The Go templates of a `target.template` that produce files (data keys and values,
 *  templateFrom literals targeting Data), with the names used in messages. */
function goTemplatesOf(esName: string, template: ExternalSecretTemplate): GoTemplate[] {
  const out: GoTemplate[] = [];
  (template.templateFrom ?? []).forEach((tf, i) => {
    if (tf.literal !== undefined) out.push({ name: `ExternalSecret ${esName} target.template.templateFrom[${i}].literal`, source: tf.literal });
  });
  for (const [key, source] of Object.entries(template.data ?? {})) {
    const name = `ExternalSecret ${esName} target.template.data.${key}`;
    if (key.includes('{{')) out.push({ name: `${name} (key)`, source: key });
    out.push({ name, source });
  }
  return out;
}

/** Which engine renders an ExternalSecret's `target.template`; throws a user-facing
 *  Error when ESI cannot render it (for the webhook's denial). A Go template is parsed
 *  here: a syntax error or an unknown function names the template and the line. */
export function selectTemplateEngine(
  esName: string,
  annotations: Record<string, string> | undefined,
  template: ExternalSecretTemplate | undefined,
): TemplateEngineChoice {
  const hasTemplate = !!template && (Object.keys(template.data ?? {}).length > 0 || (template.templateFrom ?? []).length > 0);
  const engine = annotations?.[TEMPLATE_ENGINE_ANNOTATION];
  if (engine !== undefined && engine !== HANDLEBARS) {
    throw new Error(`ExternalSecret "${esName}": annotation ${TEMPLATE_ENGINE_ANNOTATION} must be "${HANDLEBARS}" (or absent for ESO's Go templates), got "${engine}"`);
  }
  if (!hasTemplate) return 'none';
  if (engine === HANDLEBARS) return 'handlebars';
  if (template?.engineVersion === 'v1') {
    throw new Error(
      `ExternalSecret "${esName}": spec.target.template.engineVersion v1 (ESO's deprecated engine) is not supported by ESI; ` +
        'use engineVersion v2 (Go templates with Sprig, rendered as ESO does)',
    );
  }
  const errors = parseGoTemplates(goTemplatesOf(esName, template!));
  if (errors.length > 0) throw new Error(errors.map((e) => e.message).join('; '));
  return 'go';
}

const enc = new TextEncoder();
const VALID_KEY = /^[-._a-zA-Z0-9]+$/;

/** `templateFrom[].literal` renders to a YAML map of key → value (as ESO does). */
function literalToMap(name: string, rendered: string): Record<string, string> {
  const yaml = loadYaml();
  let doc: unknown;
  try {
    doc = yaml.parse(rendered);
  } catch {
    // yaml's messages quote the document, which now holds values.
    throw new TemplateError(name, 'rendered literal is not a YAML map of key: value');
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new TemplateError(name, 'rendered literal is not a YAML map of key: value');
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(doc)) {
    out[k] = typeof v === 'string' ? v : typeof v === 'object' && v !== null ? yaml.stringify(v) : String(v);
  }
  return out;
}

/** `rendered`: the key came out of a template and may hold a value, so it is never quoted. */
function setKey(out: Record<string, Uint8Array>, name: string, { key, rendered }: { key: string; rendered: boolean }, value: string): void {
  if (!VALID_KEY.test(key) || key.length > 253 || key.startsWith('..') || key === '.') {
    const which = rendered ? 'a rendered output key' : `output key "${key}"`;
    throw new TemplateError(name, `${which} is not a valid key ([-._a-zA-Z0-9]+, at most 253 characters, not "." or starting with "..")`);
  }
  out[key] = enc.encode(value);
}

const dec = new TextDecoder();

/** The Go engine's side of applyExternalSecretTemplate: every template of the
 *  ExternalSecret rendered in one call, against the fetched values. */
function applyGoTemplate(esName: string, template: ExternalSecretTemplate, data: Record<string, Uint8Array>, out: Record<string, Uint8Array>): void {
  const jobs: GoRenderJob[] = [];
  const literals: { name: string; index: number }[] = [];
  (template.templateFrom ?? []).forEach((tf, i) => {
    const name = `ExternalSecret ${esName} target.template.templateFrom[${i}]`;
    if (tf.target && tf.target !== 'Data') return; // Labels/Annotations describe a Secret object: no file.
    if (tf.configMap || tf.secret) throw new TemplateError(name, 'configMap/secret template sources are not supported by the agent; use literal or data');
    if (tf.literal === undefined) return;
    literals.push({ name, index: jobs.length });
    jobs.push({ name: `${name}.literal`, source: tf.literal });
  });
  const entries = Object.entries(template.data ?? {}).map(([key, source]) => {
    const name = `ExternalSecret ${esName} target.template.data.${key}`;
    const keyJob = key.includes('{{') ? jobs.push({ name: `${name} (key)`, source: key }) - 1 : undefined;
    return { key, name, keyJob, valueJob: jobs.push({ name, source }) - 1 };
  });
  const rendered = renderGoTemplates(jobs, data);
  for (const l of literals) {
    for (const [k, v] of Object.entries(literalToMap(l.name, dec.decode(rendered[l.index])))) setKey(out, l.name, { key: k, rendered: true }, v);
  }
  for (const e of entries) {
    const key = e.keyJob === undefined ? e.key : dec.decode(rendered[e.keyJob]);
    // The key check is setKey's (a rendered key is never quoted: it may hold a value).
    setKey(out, e.name, { key, rendered: e.keyJob !== undefined }, '');
    out[key] = rendered[e.valueJob]!;
  }
}

/** Applies `target.template` to the fetched data of ExternalSecret `esName`, with the
 *  engine selectTemplateEngine chose (Go by default, as ESO; handlebars on opt-in, whose
 *  context is the secret's own keys: `{{password}}`). ESO order: templateFrom, then data;
 *  `mergePolicy: Merge` keeps fetched keys the templates do not override. */
// eslint-disable-next-line max-params -- the engine choice joined the four inputs every caller already passes; a default keeps handlebars callers unchanged
export function applyExternalSecretTemplate(
  engine: TemplateEngine,
  esName: string,
  template: ExternalSecretTemplate | undefined,
  data: Record<string, Uint8Array>,
  choice: Exclude<TemplateEngineChoice, 'none'> = 'handlebars',
): Record<string, Uint8Array> {
  const hasData = !!template?.data && Object.keys(template.data).length > 0;
  const from = template?.templateFrom ?? [];
  if (!template || (!hasData && from.length === 0)) return data;
  const out: Record<string, Uint8Array> = Object.create(null) as Record<string, Uint8Array>;
  if (template.mergePolicy === 'Merge') Object.assign(out, data);
  if (choice === 'go') {
    applyGoTemplate(esName, template, data, out);
    return out;
  }
  const context = secretScope(data);
  from.forEach((tf, i) => {
    const name = `ExternalSecret ${esName} target.template.templateFrom[${i}]`;
    if (tf.target && tf.target !== 'Data') return; // Labels/Annotations describe a Secret object: no file.
    if (tf.configMap || tf.secret) {
      throw new TemplateError(name, 'configMap/secret template sources are not supported by the agent; use literal or data');
    }
    if (tf.literal === undefined) return;
    const map = literalToMap(name, engine.render(name, tf.literal, context));
    for (const [k, v] of Object.entries(map)) setKey(out, name, { key: k, rendered: true }, v);
  });
  for (const [key, source] of Object.entries(template.data ?? {})) {
    const name = `ExternalSecret ${esName} target.template.data.${key}`;
    setKey(out, name, { key, rendered: false }, engine.render(name, source, context));
  }
  return out;
}
