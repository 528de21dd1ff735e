// ESO's template language (engine v2: Go text/template + Sprig minus env/expandenv + ESO's
// helpers). Each template is rendered by ESI's TypeScript engine (src/templating/gotext/)
// when that engine can render it exactly, else by the real Go engine compiled to
// WebAssembly (docs/decisions/0015-go-templates-in-webassembly.md), loaded only then
// (docs/decisions/0071-go-templates-in-typescript.md). Bounded: template size, output
// size per template, time per call. Error messages name the template and line and never
// carry values (the engine redacts values it quotes).
import { TemplateError } from '../errors.js';
import { GoExecError, OutputTooLarge, parseGoText, renderGoText, Unsupported } from '../gotext/index.js';
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

/** Templates each engine took on since the process started; the reasons the Go engine was
 *  needed, by reason (no values: function names, Go's error classes, syntax). */
export const goTemplateStats = { typescript: 0, webassembly: 0, fallbacks: new Map<string, number>() };

export type GoFallbackListener = (template: string, reason: string) => void;
let fallbackListener: GoFallbackListener | undefined;

/** Called for each template handed to the Go engine (the agent logs it at debug). */
export function onGoTemplateFallback(listener: GoFallbackListener | undefined): void {
  fallbackListener = listener;
}

/** The coarse kind of a fallback reason, for a metric label of bounded cardinality. */
export function goFallbackKind(reason: string): 'function' | 'syntax' | 'execution' | 'data' | 'other' {
  if (reason.startsWith('function ')) return 'function';
  if (reason.startsWith('syntax: ')) return 'syntax';
  if (reason.startsWith('execution error: ')) return 'execution';
  if (reason.includes('not UTF-8')) return 'data';
  return 'other';
}

/** `ESI_GO_TEMPLATE_ENGINE=wasm` renders every Go template with the Go engine (an escape
 *  hatch, and the benchmarks' baseline). */
const typescriptEnabled = () => process.env.ESI_GO_TEMPLATE_ENGINE !== 'wasm';

function declined(t: GoTemplate, reason: string): void {
  goTemplateStats.fallbacks.set(reason, (goTemplateStats.fallbacks.get(reason) ?? 0) + 1);
  fallbackListener?.(t.name, reason);
}

/** `shownMs`: the deadline a timeout message names (the whole call's, when the Go engine
 *  got what the TypeScript engine left of it). */
function call(request: object, templates: GoTemplate[], timeoutMs: number, shownMs = timeoutMs): NonNullable<EngineResponse['results']> {
  let resp: EngineResponse;
  try {
    resp = callEngine(request, timeoutMs) as EngineResponse;
  } catch (err) {
    const what = templates.length === 1 ? templates[0]!.name : templates.map((t) => t.name).join(', ');
    const message = err instanceof GoEngineError ? `Go template engine: ${err.message.replace(/took longer than \d+ ms/, `took longer than ${shownMs} ms`)}` : String(err);
    throw new TemplateError(what, message);
  }
  if (resp.error !== undefined || !resp.results || resp.results.length !== templates.length) {
    throw new TemplateError(templates[0]?.name ?? 'Go template', `Go template engine: ${resp.error ?? 'malformed response'}`);
  }
  return resp.results;
}

/** Starts the WebAssembly Go engine now (the reconciler's render threads: a template that
 *  falls back mid-render must not pay the engine's start inside its deadline). */
export function warmGoEngine(): void {
  call({ parseOnly: true, jobs: [{ name: 'warm-up', source: '' }] }, [{ name: 'warm-up', source: '' }], GO_PARSE_TIMEOUT_MS);
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
  // What the TypeScript engine parses is valid Go (gotext-differential.test.ts); the rest,
  // including every syntax error, is Go's to parse and word.
  const forGo = ok.filter((t) => {
    if (!typescriptEnabled()) return true;
    try {
      parseGoText(t.source);
      return false;
    } catch (err) {
      if (!(err instanceof Unsupported)) throw err;
      declined(t, err.message);
      return true;
    }
  });
  if (forGo.length === 0) return errors;
  const results = call({ parseOnly: true, jobs: forGo.map(({ name, source }) => ({ name, source })) }, forGo, GO_PARSE_TIMEOUT_MS);
  results.forEach((r, i) => r.error !== undefined && errors.push(toTemplateError(forGo[i]!, r.error)));
  return errors;
}

/** The Go engine's timeout, worded alike, marked `timedOut` (the render pool's TemplateTimeout
 *  reason: src/templating/pool/worker.ts). */
function timeoutError(what: string, timeoutMs: number): TemplateError {
  return Object.assign(new TemplateError(what, `Go template engine: took longer than ${timeoutMs} ms and was stopped`), { timedOut: true });
}

/** Renders every job; throws the first failure (in job order) as a TemplateError.
 *  `timeoutMs` bounds the whole call (the reconciler's render pool passes its own,
 *  src/templating/pool/). */
export function renderGoTemplates(jobs: GoRenderJob[], data: Record<string, Uint8Array> = {}, timeoutMs = GO_RENDER_TIMEOUT_MS): Uint8Array[] {
  if (jobs.length === 0) return [];
  jobs.forEach(checkSize);
  const deadline = performance.now() + timeoutMs;
  const results: (Uint8Array | TemplateError)[] = [];
  const forGo: number[] = [];
  jobs.forEach((j, i) => {
    if (!typescriptEnabled()) return forGo.push(i);
    // Worded as the Go engine's own timeout and size errors.
    const onTimeout = () => timeoutError(j.name, timeoutMs);
    try {
      results[i] = renderGoText(j.name, j.source, j.data ?? data, { maxOutput: MAX_GO_OUTPUT_BYTES, deadline, onTimeout });
      goTemplateStats.typescript++;
    } catch (err) {
      if (err instanceof OutputTooLarge) results[i] = new TemplateError(j.name, 'rendered output exceeds the size limit');
      else if (err instanceof GoExecError) {
        // Go's own message (gotext-differential.test.ts), redacted as the Go engine's are below.
        goTemplateStats.typescript++;
        results[i] = toTemplateError(j, redactValues(err.goMessage, [...Object.values(data), ...Object.values(j.data ?? {})]));
      } else if (err instanceof Unsupported) {
        declined(j, err.message);
        forGo.push(i);
      } else throw err;
    }
  });
  if (forGo.length > 0) {
    goTemplateStats.webassembly += forGo.length;
    const goJobs = forGo.map((i) => jobs[i]!);
    const request = {
      maxOutput: MAX_GO_OUTPUT_BYTES,
      data: encodeData(data),
      jobs: goJobs.map((j) => ({ name: j.name, source: j.source, ...(j.data ? { data: encodeData(j.data) } : {}) })),
    };
    const left = Math.max(1, Math.ceil(deadline - performance.now()));
    // The deadline covers both engines. A template the TypeScript engine worked on for most
    // of it before declining (a loop past its memory allowance) is over the time limit: the
    // Go engine is not started for the rest of a deadline it could not meet either.
    if (left < timeoutMs / 2) {
      throw timeoutError(goJobs.map((j) => j.name).join(', '), timeoutMs);
    }
    call(request, goJobs, left, timeoutMs).forEach((r, k) => {
      const j = goJobs[k]!;
      results[forGo[k]!] =
        r.error !== undefined
          ? toTemplateError(j, redactValues(r.error, [...Object.values(data), ...Object.values(j.data ?? {})]))
          : new Uint8Array(Buffer.from(r.output ?? '', 'base64'));
    });
  }
  return results.map((r) => {
    if (r instanceof TemplateError) throw r;
    return r;
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
