// ESO's template language (engine v2: Go text/template + Sprig minus env/expandenv + ESO's
// helpers), rendered by ESI's TypeScript engine only (text.ts and its modules;
// docs/decisions/0087-templating-engines.md). What that engine cannot render exactly as Go
// does it refuses: a parse-time refusal (an unsupported function) is a syntax-like error at
// admission, a render-time one an error of that template. Bounded: template size, output
// size per template, time per call. Error messages name the template and line and never
// carry values.
import { TemplateError } from '../errors.js';
import { redactValues } from '../redact.js';
import { AllocationExceeded, ExecFailure, GoExecError, GoSyntaxError, OutputTooLarge, parseGoText, renderGoText, Unsupported } from './text.js';

/** Largest template source accepted (admission and agent). */
export const MAX_GO_TEMPLATE_BYTES = 64 * 1024;
/** Largest rendered result of one template (a Secret holds at most 1 MiB). */
export const MAX_GO_OUTPUT_BYTES = 1024 * 1024;
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

/** `template: NAME:LINE:COL: msg` (Go's format) → a TemplateError with line and column. */
function fromGoMessage(t: GoTemplate, message: string): TemplateError {
  const prefix = `template: ${t.name}:`;
  const rest = message.startsWith(prefix) ? message.slice(prefix.length) : message.replace(/^template: /, '');
  const m = /^(\d+)(?::(\d+))?: (.*)$/s.exec(rest);
  return m ? new TemplateError(t.name, m[3]!, Number(m[1]), m[2] ? Number(m[2]) : undefined) : new TemplateError(t.name, rest);
}

/** The engine's own failures as the template's error; `values` are redacted from the
 *  messages that may quote data (Go's wording, `fail`'s text). */
function toTemplateError(t: GoTemplate, err: unknown, values: Uint8Array[]): TemplateError {
  if (err instanceof GoSyntaxError) return new TemplateError(t.name, err.reason, err.line);
  if (err instanceof GoExecError) return fromGoMessage(t, redactValues(err.goMessage, values));
  if (err instanceof AllocationExceeded) return new TemplateError(t.name, `${err.reason} (the limit of one render)`);
  if (err instanceof ExecFailure) return new TemplateError(t.name, `executing: ${redactValues(err.reason, values)}`);
  if (err instanceof Unsupported) return new TemplateError(t.name, `not supported by ESI: ${err.reason} (docs/templates.md lists what ESI renders)`, err.line);
  if (err instanceof OutputTooLarge) return new TemplateError(t.name, 'rendered output exceeds the size limit');
  throw err;
}

function checkSize(t: GoTemplate): void {
  if (Buffer.byteLength(t.source) > MAX_GO_TEMPLATE_BYTES) {
    throw new TemplateError(t.name, `template is larger than ${MAX_GO_TEMPLATE_BYTES} bytes`);
  }
}

/** Parses every template (syntax and function names); returns one error per bad template. */
export function parseGoTemplates(templates: GoTemplate[]): TemplateError[] {
  const errors: TemplateError[] = [];
  for (const t of templates) {
    try {
      checkSize(t);
      parseGoText(t.source);
    } catch (err) {
      errors.push(err instanceof TemplateError ? err : toTemplateError(t, err, []));
    }
  }
  return errors;
}

/** The render's timeout, marked `timedOut` (the render pool's TemplateTimeout reason:
 *  src/templating/pool/worker.ts). */
function timeoutError(what: string, timeoutMs: number): TemplateError {
  return Object.assign(new TemplateError(what, `Go template engine: took longer than ${timeoutMs} ms and was stopped`), { timedOut: true });
}

/** Renders every job; throws the first failure (in job order) as a TemplateError.
 *  `timeoutMs` bounds the whole call (the reconciler's render pool passes its own,
 *  src/templating/pool/). */
export function renderGoTemplates(jobs: GoRenderJob[], data: Record<string, Uint8Array> = {}, timeoutMs = GO_RENDER_TIMEOUT_MS): Uint8Array[] {
  jobs.forEach(checkSize);
  const deadline = performance.now() + timeoutMs;
  return jobs.map((j) => {
    const onTimeout = () => timeoutError(j.name, timeoutMs);
    try {
      return renderGoText(j.name, j.source, j.data ?? data, { maxOutput: MAX_GO_OUTPUT_BYTES, deadline, onTimeout });
    } catch (err) {
      throw toTemplateError(j, err, [...Object.values(data), ...Object.values(j.data ?? {})]);
    }
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
