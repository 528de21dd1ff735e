// `esi agent [--root DIR] [--config-file FILE]`: the agent container's entry point.
// Exit codes: 0 done (init-only) or stopped by SIGTERM/SIGINT; 1 a render failed
// (init-only) or the agent crashed; 2 bad usage or a malformed configuration. A failure also
// leaves a value-free termination message for the kubelet (src/agent-config/termination.ts).
import { pino, type Logger } from 'pino';
import { AGENT_CONFIG_ENV } from '../src/agent-config/types.js';
import { runAgentReporting } from './agent.js';
import { terminationMessage, writeTerminationMessage } from '../src/agent-config/termination.js';
import { ConfigError, readAgentConfig } from './config.js';
import { UsageError } from '../src/usage.js';
import { logDestination, logSettings, pinoOptions } from '../src/log.js';

const USAGE = `Usage: esi agent [--root DIR] [--config-file FILE]

Fetches the ExternalSecrets named in the configuration, renders them as files and keeps
them fresh. The configuration is the JSON in $${AGENT_CONFIG_ENV} unless --config-file is given.

  --root DIR          prefix every container path of the configuration with DIR
  --config-file FILE  read the configuration from FILE
  --help              show this help

Environment: ESI_LOG_LEVEL (info by default).
`;

interface Args {
  root?: string;
  configFile?: string;
  help?: boolean;
}


export function parseArgs(argv: string[]): Args {
  const args: Args = {};
  const rest = argv[0] === 'agent' ? argv.slice(1) : argv;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    const [flag, inline] = a.startsWith('--') && a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    const value = (): string => {
      const v = inline ?? rest[++i];
      if (v === undefined || v === '') throw new UsageError(`${flag} needs a value`);
      return v;
    };
    if (flag === '--root') args.root = value();
    else if (flag === '--config-file') args.configFile = value();
    else if (flag === '--help' || flag === '-h') args.help = true;
    else throw new UsageError(`unknown argument "${a}"`);
  }
  return args;
}

function makeLogger(): Logger {
  const { level, format } = logSettings();
  // Values never reach a log call; the redaction is a second line of defence for fields whose
  // name says they might hold one. Synchronous writes, as pino's default: an agent that exits
  // on a failure still says why.
  return pino(
    pinoOptions({ component: 'esi-agent' }, level, ['value', 'values', 'secret.value', '*.password', '*.token']),
    logDestination(1, format, { sync: true }),
  );
}

export async function main(argv: string[]): Promise<number> {
  let args: Args;
  try {
    args = parseArgs(argv);
  } catch (err) {
    process.stderr.write(`esi agent: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  const logger = makeLogger();
  let config;
  try {
    config = await readAgentConfig({ env: process.env, configFile: args.configFile });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    logger.fatal({ field: err.field }, err.message);
    await writeTerminationMessage(terminationMessage('config', err));
    return 2;
  }
  const abort = new AbortController();
  const stop = (signal: NodeJS.Signals): void => {
    logger.info({ signal }, 'shutting down');
    abort.abort();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  try {
    const { code, failure } = await runAgentReporting({ config, root: args.root, logger, signal: abort.signal });
    if (failure) await writeTerminationMessage(failure);
    return code;
  } catch (err) {
    logger.fatal({ err: (err as Error).message }, 'agent crashed');
    await writeTerminationMessage(terminationMessage('start', err));
    return 1;
  } finally {
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
  }
}
