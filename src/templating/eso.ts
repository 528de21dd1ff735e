// An ExternalSecret's own `target.template`. By default it is what ESO renders: a Go
// template (engine v2), rendered by ESI's Go-template engine (src/templating/go/). ESI's handlebars
// engine stays available as an opt-in; `engineVersion` is an enum ESI cannot extend (ESI
// must work with CRDs installed by another controller), so the opt-in is an annotation:
//   metadata.annotations["esi.dev/template-engine"] = "handlebars"
// Go templates are parsed at admission, so a syntax error is a denial, not an agent failure.
import type { ExternalSecretTemplate, TemplateFrom } from '../api/types.js';
import type { TemplateEngine } from './handlebars/engine.js';
import { TemplateError } from './errors.js';
import { secretScope } from './handlebars/context.js';
import { loadYaml } from './lazy.js';
import { setMetadata, type MetadataTarget } from './metadata.js';
import { parseGoTemplates, renderGoTemplates, type GoRenderJob, type GoTemplate } from './go/index.js';
import { isDataKey } from '../kube/names.js';

export const TEMPLATE_ENGINE_ANNOTATION = 'esi.dev/template-engine';
export const HANDLEBARS = 'handlebars';

export type TemplateEngineChoice = 'none' | 'handlebars' | 'go';

/** Every inline template of a `target.template` (data keys and values, templateFrom
 *  literals, metadata label and annotation values), with the names used in messages.
 *  configMap/secret sources are only known at render time (the reconciler). */
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
  for (const field of ['labels', 'annotations'] as const) {
    for (const [key, source] of Object.entries(template.metadata?.[field] ?? {})) {
      out.push({ name: `ExternalSecret ${esName} target.template.metadata.${field}.${key}`, source });
    }
  }
  return out;
}

/** Names the templates of `template` at once, for a message about all of them (the render
 *  pool's deadline, src/templating/pool/): `template ExternalSecret db target.template.data.password`. */
export function describeTemplates(esName: string, template: ExternalSecretTemplate | undefined): string {
  const prefix = `ExternalSecret ${esName} target.template`;
  const names = goTemplatesOf(esName, template ?? {}).map((t) => t.name.slice(prefix.length + 1));
  if (names.length === 1) return `template ${prefix}.${names[0]}`;
  const shown = names.length > 8 ? [...names.slice(0, 8), `${names.length - 8} more`] : names;
  return `template ${prefix}${shown.length ? ` (${shown.join(', ')})` : ''}`;
}

/** Whether `template` asks for rendering: data, templateFrom, or a metadata value holding
 *  a template (plain labels and annotations are copied as they are). */
function hasTemplates(template: ExternalSecretTemplate | undefined): boolean {
  if (!template) return false;
  const meta = [...Object.values(template.metadata?.labels ?? {}), ...Object.values(template.metadata?.annotations ?? {})];
  return Object.keys(template.data ?? {}).length > 0 || (template.templateFrom ?? []).length > 0 || meta.some((v) => v.includes('{{'));
}

/** Which engine renders an ExternalSecret's `target.template`; throws a user-facing
 *  Error when ESI cannot render it (for the webhook's denial). A Go template is parsed
 *  here: a syntax error or an unknown function names the template and the line. */
export function selectTemplateEngine(
  esName: string,
  annotations: Record<string, string> | undefined,
  template: ExternalSecretTemplate | undefined,
): TemplateEngineChoice {
  const hasTemplate = hasTemplates(template);
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
function setKey(out: Record<string, Uint8Array>, at: { name: string; rendered: boolean }, key: string, value: string): void {
  const { name, rendered } = at;
  if (!isDataKey(key)) {
    const which = rendered ? 'a rendered output key' : `output key "${key}"`;
    throw new TemplateError(name, `${which} is not a valid key ([-._a-zA-Z0-9]+, at most 253 characters, not "." or starting with "..")`);
  }
  out[key] = enc.encode(value);
}

const dec = new TextDecoder();

/** templateFrom configMap/secret sources, read by the caller (the reconciler) from the
 *  ExternalSecret's own namespace: name → key → template text. */
export interface TemplateSources {
  configMap: Record<string, Record<string, string>>;
  secret: Record<string, Record<string, string>>;
}

/** How renderExternalSecretTemplate renders: `metadata` renders labels and annotations (the
 *  reconciler), `sources` holds templateFrom configMap/secret texts, `goTimeoutMs` bounds the
 *  Go-template engine's call (handlebars is bounded by the engine's own limits). */
export interface RenderOptions {
  metadata: boolean;
  sources?: TemplateSources;
  goTimeoutMs?: number;
}

/** What `target.template` makes of the fetched data: the Secret's data and the labels and
 *  annotations it renders (empty for the agent, which writes files, not a Secret). */
export interface RenderedTemplate {
  data: Record<string, Uint8Array>;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

type Target = 'Data' | MetadataTarget;

/** One template to render and where its result goes: `Values` sets `key` to the output;
 *  `KeysAndValues` parses the output as a YAML map of key: value. */
interface Job {
  name: string;
  source: string;
  target: Target;
  scope: 'Values' | 'KeysAndValues';
  key?: string;
  /** The key is itself a template (template.data keys holding `{{`). */
  keyTemplate?: boolean;
}

const TARGETS: readonly string[] = ['Data', 'Labels', 'Annotations'];

function sourceJobs(at: { name: string; kind: 'configMap' | 'secret'; target: Target }, tf: TemplateFrom, sources: TemplateSources | undefined): Job[] {
  const { name, kind, target } = at;
  if (!sources) throw new TemplateError(name, 'configMap/secret template sources are not supported by the agent; use literal or data');
  const ref = tf[kind]!;
  const items = ref.items ?? [];
  if (!items.length) throw new TemplateError(`${name}.${kind}`, 'items must list the keys to render ([{key, templateAs}])');
  const objectKind = kind === 'configMap' ? 'ConfigMap' : 'Secret';
  return items.map((item, j) => {
    const source = sources[kind][ref.name]?.[item.key];
    if (source === undefined) throw new TemplateError(`${name}.${kind}.items[${j}]`, `key "${item.key}" is not in ${objectKind} "${ref.name}"`);
    return { name: `${name}.${kind}.items[${j}]`, source, target, scope: item.templateAs ?? 'Values', key: item.key };
  });
}

/** The templates of `template` in ESO's order (templateFrom, data, labels, annotations):
 *  later results override earlier ones. `metadata: false` (the agent) leaves out what
 *  only describes a Secret object. */
function jobsOf(esName: string, template: ExternalSecretTemplate, opts: { metadata: boolean; sources?: TemplateSources }): Job[] {
  const jobs: Job[] = [];
  (template.templateFrom ?? []).forEach((tf, i) => {
    const name = `ExternalSecret ${esName} target.template.templateFrom[${i}]`;
    const target = tf.target ?? 'Data';
    if (target !== 'Data' && !opts.metadata) return; // Labels/Annotations describe a Secret object: no file.
    if (!TARGETS.includes(target)) throw new TemplateError(name, `target "${target}" is not supported; use Data, Labels or Annotations`);
    const kind = tf.configMap ? 'configMap' : tf.secret ? 'secret' : undefined;
    if (kind) jobs.push(...sourceJobs({ name, kind, target: target as Target }, tf, opts.sources));
    else if (tf.literal !== undefined) jobs.push({ name: `${name}.literal`, source: tf.literal, target: target as Target, scope: 'KeysAndValues' });
  });
  for (const [key, source] of Object.entries(template.data ?? {})) {
    jobs.push({ name: `ExternalSecret ${esName} target.template.data.${key}`, source, target: 'Data', scope: 'Values', key, keyTemplate: key.includes('{{') });
  }
  if (!opts.metadata) return jobs;
  for (const [field, target] of [['labels', 'Labels'], ['annotations', 'Annotations']] as const) {
    for (const [key, source] of Object.entries(template.metadata?.[field] ?? {})) {
      jobs.push({ name: `ExternalSecret ${esName} target.template.metadata.${field}.${key}`, source, target, scope: 'Values', key });
    }
  }
  return jobs;
}

/** Renders every job (and templated keys) with the chosen engine: outputs in job order,
 *  each job's key output (if templated) right after it. */
function renderAll(engine: TemplateEngine, how: { choice: 'go' | 'handlebars'; goTimeoutMs?: number }, jobs: Job[], data: Record<string, Uint8Array>): Uint8Array[] {
  const flat: GoRenderJob[] = [];
  for (const j of jobs) {
    flat.push({ name: j.name, source: j.source });
    if (j.keyTemplate) flat.push({ name: `${j.name} (key)`, source: j.key! });
  }
  if (how.choice === 'go') return renderGoTemplates(flat, data, how.goTimeoutMs);
  const context = secretScope(data);
  return flat.map((f) => enc.encode(engine.render(f.name, f.source, context)));
}

/** Renders `target.template` against the fetched data of ExternalSecret `esName`, with the
 *  engine selectTemplateEngine chose (Go by default, as ESO; handlebars on opt-in, whose
 *  context is the secret's own keys: `{{password}}`). `mergePolicy: Merge` keeps fetched
 *  keys the templates do not override; without any template targeting Data the fetched
 *  data is kept as it is (as ESO). Labels and annotations are rendered only with
 *  `metadata: true` (the reconciler); configMap/secret sources need `sources`. */
/** What renderExternalSecretTemplate returns when there is nothing to render (no template,
 *  or one with metadata only): the data as fetched, the template's literal metadata.
 *  Undefined when a template must run. No user code runs here, so the reconciler does this
 *  on its main thread rather than in the render pool. */
export function untemplated(
  target: { template: ExternalSecretTemplate | undefined; choice: TemplateEngineChoice },
  data: Record<string, Uint8Array>,
  opts: Pick<RenderOptions, 'metadata'>,
): RenderedTemplate | undefined {
  const { template, choice } = target;
  if (choice !== 'none' && template) return undefined;
  if (!opts.metadata) return { data, labels: {}, annotations: {} };
  return { data, labels: { ...(template?.metadata?.labels ?? {}) }, annotations: { ...(template?.metadata?.annotations ?? {}) } };
}

export function renderExternalSecretTemplate(
  engine: TemplateEngine,
  target: { name: string; template: ExternalSecretTemplate | undefined; choice: TemplateEngineChoice },
  data: Record<string, Uint8Array>,
  opts: RenderOptions = { metadata: false },
): RenderedTemplate {
  const { name: esName, template, choice } = target;
  const plain = untemplated(target, data, opts);
  if (plain || !template || choice === 'none') return plain!;
  const jobs = jobsOf(esName, template, opts);
  const toData = jobs.some((j) => j.target === 'Data');
  const out: RenderedTemplate = { data: toData ? (Object.create(null) as Record<string, Uint8Array>) : data, labels: {}, annotations: {} };
  if (toData && template.mergePolicy === 'Merge') Object.assign(out.data, data);
  const rendered = renderAll(engine, { choice, goTimeoutMs: opts.goTimeoutMs }, jobs, data);
  let at = 0;
  for (const j of jobs) {
    const value = rendered[at++]!;
    applyJob(out, j, j.keyTemplate ? dec.decode(rendered[at++]) : j.key, value);
  }
  return out;
}

/** Puts one job's rendered output where its target says. */
function applyJob(out: RenderedTemplate, j: Job, key: string | undefined, value: Uint8Array): void {
  const pairs: [string, Uint8Array | string][] = j.scope === 'Values' ? [[key!, value]] : Object.entries(literalToMap(j.name, dec.decode(value)));
  const renderedKey = j.scope === 'KeysAndValues' || !!j.keyTemplate;
  for (const [k, v] of pairs) {
    if (j.target === 'Data') {
      // The key check is setKey's; Values keep the rendered bytes (binary-safe).
      setKey(out.data, { name: j.name, rendered: renderedKey }, k, '');
      out.data[k] = typeof v === 'string' ? enc.encode(v) : v;
    } else {
      setMetadata(j.target === 'Labels' ? out.labels : out.annotations, { name: j.name, target: j.target, renderedKey }, k, typeof v === 'string' ? v : dec.decode(v));
    }
  }
}

/** The agent's (and PushSecret's) side of renderExternalSecretTemplate: the data only. */
export function applyExternalSecretTemplate(
  engine: TemplateEngine,
  target: { name: string; template: ExternalSecretTemplate | undefined; choice: TemplateEngineChoice },
  data: Record<string, Uint8Array>,
): Record<string, Uint8Array> {
  return renderExternalSecretTemplate(engine, target, data).data;
}
