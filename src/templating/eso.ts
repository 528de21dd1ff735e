// An ExternalSecret's own `target.template`, rendered with handlebars when the
// ExternalSecret opts in. ESO's engine (engineVersion v1/v2) is Go text/template, which
// ESI does not implement, and `engineVersion` is an enum ESI cannot extend (ESI must work
// with CRDs installed by another controller), so the opt-in is an annotation:
//   metadata.annotations["esi.dev/template-engine"] = "handlebars"
// Without it a `target.template` is a Go template and ESI refuses to serve it.
import type { ExternalSecretTemplate } from '../api/types.js';
import type { TemplateEngine } from './engine.js';
import { TemplateError } from './errors.js';
import { secretScope } from './context.js';
import { loadYaml } from './lazy.js';

export const TEMPLATE_ENGINE_ANNOTATION = 'esi.dev/template-engine';
export const HANDLEBARS = 'handlebars';

export type TemplateEngineChoice = 'none' | 'handlebars';

/** Which engine renders an ExternalSecret's `target.template`; throws a user-facing
 *  Error when ESI cannot render it (for the webhook's denial and the agent's log). */
export function selectTemplateEngine(
  esName: string,
  annotations: Record<string, string> | undefined,
  template: ExternalSecretTemplate | undefined,
): TemplateEngineChoice {
  const hasTemplate = !!template && (Object.keys(template.data ?? {}).length > 0 || (template.templateFrom ?? []).length > 0);
  const engine = annotations?.[TEMPLATE_ENGINE_ANNOTATION];
  if (engine !== undefined && engine !== HANDLEBARS) {
    throw new Error(`ExternalSecret "${esName}": annotation ${TEMPLATE_ENGINE_ANNOTATION} must be "${HANDLEBARS}", got "${engine}"`);
  }
  if (!hasTemplate) return 'none';
  if (engine !== HANDLEBARS) {
    throw new Error(
      `ExternalSecret "${esName}": spec.target.template is a Go template (ESO engine ${template?.engineVersion ?? 'v2'}), ` +
        `which ESI does not render; write it in handlebars and annotate ${TEMPLATE_ENGINE_ANNOTATION}: ${HANDLEBARS}`,
    );
  }
  return 'handlebars';
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

/** Checks an output key; `shown` is how the error names it: a key that came out of a
 *  template may hold a value, so it is never quoted. */
function checkKey(name: string, key: string, shown: string): string {
  if (!VALID_KEY.test(key) || key.length > 253 || key.startsWith('..') || key === '.') {
    throw new TemplateError(name, `${shown} is not a valid key ([-._a-zA-Z0-9]+, at most 253 characters, not "." or starting with "..")`);
  }
  return key;
}

/** Applies a handlebars `target.template` to the fetched data of ExternalSecret
 *  `esName`. Context: the secret's own keys (`{{password}}`). ESO order: templateFrom,
 *  then data; `mergePolicy: Merge` keeps fetched keys the templates do not override. */
export function applyExternalSecretTemplate(
  engine: TemplateEngine,
  esName: string,
  template: ExternalSecretTemplate | undefined,
  data: Record<string, Uint8Array>,
): Record<string, Uint8Array> {
  const hasData = !!template?.data && Object.keys(template.data).length > 0;
  const from = template?.templateFrom ?? [];
  if (!template || (!hasData && from.length === 0)) return data;
  const context = secretScope(data);
  const out: Record<string, Uint8Array> = Object.create(null) as Record<string, Uint8Array>;
  if (template.mergePolicy === 'Merge') Object.assign(out, data);
  from.forEach((tf, i) => {
    const name = `ExternalSecret ${esName} target.template.templateFrom[${i}]`;
    if (tf.target && tf.target !== 'Data') return; // Labels/Annotations describe a Secret object: no file.
    if (tf.configMap || tf.secret) {
      throw new TemplateError(name, 'configMap/secret template sources are not supported by the agent; use literal or data');
    }
    if (tf.literal === undefined) return;
    const map = literalToMap(name, engine.render(name, tf.literal, context));
    for (const [k, v] of Object.entries(map)) out[checkKey(name, k, 'a rendered output key')] = enc.encode(v);
  });
  for (const [key, source] of Object.entries(template.data ?? {})) {
    const name = `ExternalSecret ${esName} target.template.data.${key}`;
    out[checkKey(name, key, `output key "${key}"`)] = enc.encode(engine.render(name, source, context));
  }
  return out;
}
