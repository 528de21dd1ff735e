// Stage 0 of the agent: read and validate its configuration (the JSON the webhook put in
// ESI_AGENT_CONFIG, or a file). Validation is the one validator the webhook also runs on
// what it writes (src/agent-config/check.ts); a malformed config is a webhook/agent
// version skew or a hand-written pod, and the agent exits 2 with one line naming the field.
import { readFile } from 'node:fs/promises';
import { join, relative, resolve, sep } from 'node:path';
import { AGENT_CONFIG_ENV, type AgentConfig } from '../src/agent-config/types.js';
import { ConfigError, fileNameProblem, isLoopbackHost, validateAgentConfig } from '../src/agent-config/check.js';

export { ConfigError, fileNameProblem, isLoopbackHost, validateAgentConfig };

export function parseAgentConfig(text: string, source: string): AgentConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    // JSON.parse's message quotes the text, which may hold a fake store's values.
    throw new ConfigError(source, `not valid JSON (${(err as Error).name})`);
  }
  return validateAgentConfig(raw);
}

/** The config from `configFile` if given, else from the ESI_AGENT_CONFIG variable. */
export async function readAgentConfig(opts: { env: NodeJS.ProcessEnv; configFile?: string }): Promise<AgentConfig> {
  if (opts.configFile) {
    let text: string;
    try {
      text = await readFile(opts.configFile, 'utf8');
    } catch (err) {
      throw new ConfigError(opts.configFile, `cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    return parseAgentConfig(text, opts.configFile);
  }
  const text = opts.env[AGENT_CONFIG_ENV];
  if (text === undefined || text === '') throw new ConfigError(AGENT_CONFIG_ENV, 'is not set (or pass --config-file)');
  return parseAgentConfig(text, AGENT_CONFIG_ENV);
}

/** A container path from the config, under `root` (so the agent runs outside a pod).
 *  The result never leaves `root` (the schema already refuses ".." segments; this holds
 *  for any caller). */
export function underRoot(root: string | undefined, path: string): string {
  if (!root) return path;
  const out = join(root, path);
  const rel = relative(resolve(root), resolve(out));
  if (rel === '..' || rel.startsWith(`..${sep}`)) throw new ConfigError(path, `resolves outside --root ${root}`);
  return out;
}
