// The one way ESI logs: pino JSON to stdout (or stderr for CLI tools whose stdout is
// data). Level from ESI_LOG_LEVEL. Fields that could ever hold a value are redacted as
// a second line of defence; the first is never passing values to the logger.
import { pino, type Logger } from 'pino';

export function createLogger(component: string, opts: { stderr?: boolean; level?: string } = {}): Logger {
  return pino(
    {
      name: `esi-${component}`,
      level: opts.level ?? process.env.ESI_LOG_LEVEL ?? 'info',
      base: { component },
      redact: { paths: ['value', '*.value', 'data', '*.data', 'env', '*.env', 'keyPem', 'token'], censor: '[redacted]' },
    },
    pino.destination({ fd: opts.stderr ? 2 : 1, sync: false }),
  );
}

export type { Logger };
