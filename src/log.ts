// The one way ESI logs: pino to stdout (or stderr for CLI tools whose stdout is data), one
// line per event with the level's name and an ISO time (`"level":"info","time":"2026-…Z"`),
// as log pipelines and people read them. ESI_LOG_LEVEL sets the level (a clear error for a
// word pino does not know); ESI_LOG_FORMAT=text writes `time LEVEL component: msg k=v` lines
// for a terminal instead of JSON. Fields that could ever hold a value are redacted as a second
// line of defence; the first is never passing values to the logger.
import { Writable } from 'node:stream';
import { pino, type DestinationStream, type Logger, type LoggerOptions as PinoOptions } from 'pino';
import { UsageError } from './usage.js';

export interface LoggerOptions {
  stderr?: boolean;
  level?: string;
  /** Gather lines (2–4 KiB) and write them at least every `flushMs` instead of one write per
   *  line: a server that logs one line per request (the webhook) otherwise pays a write and
   *  its completion callback per request (14 % of its CPU at 100 req/s). Each write
   *  is whole lines of at most 4096 bytes (PIPE_BUF), so processes sharing one stdout pipe
   *  (`esi webhook --workers`) never interleave inside a line. Lines are still written on
   *  exit; a SIGKILL can lose the last `flushMs`. */
  flushMs?: number;
  /** Paths redacted (default: the fields that could hold a value). */
  redact?: string[];
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const FORMATS = ['json', 'text'];

/** The level and format from the options and the environment, checked. */
export function logSettings(level = process.env.ESI_LOG_LEVEL || 'info', format = process.env.ESI_LOG_FORMAT || 'json'): { level: string; format: 'json' | 'text' } {
  if (!LEVELS.includes(level)) throw new UsageError(`ESI_LOG_LEVEL "${level}" must be one of ${LEVELS.join(', ')}`);
  if (!FORMATS.includes(format)) throw new UsageError(`ESI_LOG_FORMAT "${format}" must be json or text`);
  return { level, format: format as 'json' | 'text' };
}

/** pino's options for every ESI process: named levels, ISO times, redaction. */
export function pinoOptions(base: Record<string, unknown>, level: string, redact: string[]): PinoOptions {
  return {
    level,
    base,
    formatters: { level: (label) => ({ level: label }) },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: redact, censor: '[redacted]' },
  };
}

const SHOWN = new Set(['level', 'time', 'msg', 'component', 'name', 'pid', 'hostname']);
const quoteIfNeeded = (v: unknown) => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return /[\s"=]/.test(s) ? JSON.stringify(s) : s;
};

/** One JSON line as `time LEVEL component: msg k=v …`. */
export function textLine(json: string): string {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const fields = Object.entries(o).filter(([k]) => !SHOWN.has(k)).map(([k, v]) => `${k}=${quoteIfNeeded(v)}`);
  return `${String(o.time)} ${String(o.level).toUpperCase().padEnd(5)} ${String(o.component ?? o.name ?? '')}: ${String(o.msg ?? '')}${fields.length ? ` ${fields.join(' ')}` : ''}\n`;
}

/** Rewrites whole JSON lines into text lines before `out`. */
function textStream(out: DestinationStream): DestinationStream {
  let pending = '';
  return new Writable({
    write(chunk: Buffer, _enc, done) {
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop()!;
      if (lines.length) out.write(lines.map(textLine).join(''));
      done();
    },
  }) as unknown as DestinationStream;
}

/** The destination on `fd` in the chosen format. */
export function logDestination(fd: 1 | 2, format: 'json' | 'text', opts: { sync?: boolean } & object = {}): DestinationStream {
  const dest = pino.destination({ fd, sync: false, ...opts });
  return format === 'text' ? textStream(dest) : dest;
}

export function createLogger(component: string, opts: LoggerOptions = {}): Logger {
  const { level, format } = logSettings(opts.level);
  const buffered = opts.flushMs ? { minLength: 2048, maxWrite: 4096, periodicFlush: opts.flushMs } : {};
  const redact = opts.redact ?? ['value', '*.value', 'data', '*.data', 'env', '*.env', 'keyPem', 'token'];
  return pino({ name: `esi-${component}`, ...pinoOptions({ component }, level, redact) }, logDestination(opts.stderr ? 2 : 1, format, buffered));
}

export type { Logger };
