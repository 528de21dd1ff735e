// The one way ESI logs: pino JSON to stdout (or stderr for CLI tools whose stdout is
// data). Level from ESI_LOG_LEVEL. Fields that could ever hold a value are redacted as
// a second line of defence; the first is never passing values to the logger.
import { pino, type Logger } from 'pino';

export interface LoggerOptions {
  stderr?: boolean;
  level?: string;
  /** Gather lines (2–4 KiB) and write them at least every `flushMs` instead of one write per
   *  line: a server that logs one line per request (the webhook) otherwise pays a write and
   *  its completion callback per request (docs/decisions/0077-webhook-workers.md). Each write
   *  is whole lines of at most 4096 bytes (PIPE_BUF), so processes sharing one stdout pipe
   *  (`esi webhook --workers`) never interleave inside a line. Lines are still written on
   *  exit; a SIGKILL can lose the last `flushMs`. */
  flushMs?: number;
}

export function createLogger(component: string, opts: LoggerOptions = {}): Logger {
  const buffered = opts.flushMs ? { minLength: 2048, maxWrite: 4096, periodicFlush: opts.flushMs } : {};
  return pino(
    {
      name: `esi-${component}`,
      level: opts.level ?? process.env.ESI_LOG_LEVEL ?? 'info',
      base: { component },
      redact: { paths: ['value', '*.value', 'data', '*.data', 'env', '*.env', 'keyPem', 'token'], censor: '[redacted]' },
    },
    pino.destination({ fd: opts.stderr ? 2 : 1, sync: false, ...buffered }),
  );
}

export type { Logger };
