// ESO's template language (engine v2: Go text/template + Sprig minus env/expandenv + ESO's
// helpers), rendered by the real Go engine compiled to WebAssembly (see
// docs/decisions/0015-go-templates-in-webassembly.md). Bounded: template size, output
// size per template, time per call. Error messages name the template and line and never
// carry values (the engine redacts values it quotes).
import { TemplateError } from '../errors.js';
import { redactValues } from '../redact.js';
import { callEngine, GoEngineError } from './runner.js';

/** Largest template source accepted (admission and agent). */
export const MAX_GO_TEMPLATE_BYTES = 64 * 1024;
/** Largest rendered result of one template (a Secret holds at most 1 MiB). */
export const MAX_GO_OUTPUT_BYTES = 1024 * 1024;
/** Parsing at admission (warm engine: milliseconds; the first call starts the engine). */
export const GO_PARSE_TIMEOUT_MS = 2_000;
export const GO_RENDER_TIMEOUT_MS = 5_000;

export interface GoTemplate {
  /** Human name used in messages, e.g. `ExternalSecret db target.template.data.password`. */
  name: string;
  source: string;
}

export interface GoRenderJob extends GoTemplate {
  /** The job's own context; the call's shared context when omitted. */
  data?: Record<string, Uint8Array>;
}

interface EngineResponse {
  results?: { output?: string; error?: string }[];
  error?: string;
}

const b64 = (v: Uint8Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');

function encodeData(data: Record<string, Uint8Array>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(data)) out[k] = b64(v);
  return out;
}

/** `template: NAME:LINE:COL: msg` (Go's format) → a TemplateError with line and column. */
function toTemplateError(t: GoTemplate, message: string): TemplateError {
  const prefix = `template: ${t.name}:`;
  const rest = message.startsWith(prefix) ? message.slice(prefix.length) : message.replace(/^template: /, '');
  const m = /^(\d+)(?::(\d+))?: (.*)$/s.exec(rest);
  return m ? new TemplateError(t.name, m[3]!, Number(m[1]), m[2] ? Number(m[2]) : undefined) : new TemplateError(t.name, rest);
}

function checkSize(t: GoTemplate): void {
  if (Buffer.byteLength(t.source) > MAX_GO_TEMPLATE_BYTES) {
    throw new TemplateError(t.name, `template is larger than ${MAX_GO_TEMPLATE_BYTES} bytes`);
  }
}

function call(request: object, templates: GoTemplate[], timeoutMs: number): NonNullable<EngineResponse['results']> {
  let resp: EngineResponse;
  try {
    resp = callEngine(request, timeoutMs) as EngineResponse;
  } catch (err) {
    const what = templates.length === 1 ? templates[0]!.name : templates.map((t) => t.name).join(', ');
    throw new TemplateError(what, err instanceof GoEngineError ? `Go template engine: ${err.message}` : String(err));
  }
  if (resp.error !== undefined || !resp.results || resp.results.length !== templates.length) {
    throw new TemplateError(templates[0]?.name ?? 'Go template', `Go template engine: ${resp.error ?? 'malformed response'}`);
  }
  return resp.results;
}

/** Parses every template (syntax and function names); returns one error per bad template. */
export function parseGoTemplates(templates: GoTemplate[]): TemplateError[] {
  const errors: TemplateError[] = [];
  const ok: GoTemplate[] = [];
  for (const t of templates) {
    try {
      checkSize(t);
      ok.push(t);
    } catch (err) {
      errors.push(err as TemplateError);
    }
  }
  if (ok.length === 0) return errors;
  const results = call({ parseOnly: true, jobs: ok.map(({ name, source }) => ({ name, source })) }, ok, GO_PARSE_TIMEOUT_MS);
  results.forEach((r, i) => r.error !== undefined && errors.push(toTemplateError(ok[i]!, r.error)));
  return errors;
}

/** Renders every job; throws the first failure as a TemplateError. `timeoutMs` bounds the
 *  whole call (the reconciler's render pool passes its own, src/templating/pool/). */
export function renderGoTemplates(jobs: GoRenderJob[], data: Record<string, Uint8Array> = {}, timeoutMs = GO_RENDER_TIMEOUT_MS): Uint8Array[] {
  if (jobs.length === 0) return [];
  jobs.forEach(checkSize);
  const request = {
    maxOutput: MAX_GO_OUTPUT_BYTES,
    data: encodeData(data),
    jobs: jobs.map((j) => ({ name: j.name, source: j.source, ...(j.data ? { data: encodeData(j.data) } : {}) })),
  };
  return call(request, jobs, timeoutMs).map((r, i) => {
    if (r.error !== undefined) throw toTemplateError(jobs[i]!, redactValues(r.error, [...Object.values(data), ...Object.values(jobs[i]!.data ?? {})]));
    return new Uint8Array(Buffer.from(r.output ?? '', 'base64'));
  });
}

/** `dataFrom[].rewrite[].transform`: the template renders each key (bound to `.value`),
 *  as ESO does; the result is the new key. */
export function transformKeys<V>(name: string, template: string, map: Record<string, V>, timeoutMs = GO_RENDER_TIMEOUT_MS): Record<string, V> {
  const keys = Object.keys(map);
  const enc = new TextEncoder();
  const rendered = renderGoTemplates(keys.map((k) => ({ name, source: template, data: { value: enc.encode(k) } })), {}, timeoutMs);
  const out = Object.create(null) as Record<string, V>;
  const dec = new TextDecoder();
  keys.forEach((k, i) => (out[dec.decode(rendered[i])] = map[k]!));
  return out;
}
