// The env file (esi.dev/env, docs/agent.md): the agent writes one file
// that the kubelet reads, through `env[].valueFrom.fileKeyRef`, each time it starts a
// container that references it. The format is the one kubelet 1.35's parser accepts
// (ParseEnv in the kubelet's util/env package, read in the v1.35.4 source):
//
//   NAME='value'          the value between single quotes, taken literally: no escapes,
//                         no expansion; a newline inside the quotes is part of the value
//
// so a value can carry any text except what that parser cannot give back unchanged:
//   - a single quote (it ends the value; the format has no escape for it);
//   - a carriage return before a newline (lines are split by Go's bufio.ScanLines, which
//     drops a "\r" at the end of each line);
//   - NUL (an environment string ends at NUL) and bytes that are not UTF-8 (the value
//     reaches the runtime as a protobuf string);
//   - an empty value: the kubelet treats an empty value like a missing key;
// and every line must stay under bufio.Scanner's 64 KiB token limit (MAX_ENV_VALUE_BYTES
// keeps it there). Errors name the variable and the ExternalSecret key, never the value.
import type { AgentEnv } from '../src/agent-config/types.js';
import type { SecretMap } from '../src/providers/types.js';

/** Largest value (bytes): kubelet 1.34's limit for a fileKeyRef value; with a name of at
 *  most 128 characters every line stays under the parser's 64 KiB line limit. */
export const MAX_ENV_VALUE_BYTES = 32 * 1024;

export class EnvFileError extends Error {
  override name = 'EnvFileError';
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
const enc = new TextEncoder();

/** Why `value` cannot be carried by the env file, or undefined. Never quotes the value. */
export function envValueProblem(value: Uint8Array): string | undefined {
  if (value.length === 0) return 'is empty (the kubelet treats an empty value like a missing key and would not start the container)';
  if (value.length > MAX_ENV_VALUE_BYTES) return `is ${value.length} bytes; an env-file value holds at most ${MAX_ENV_VALUE_BYTES}`;
  let text: string;
  try {
    text = utf8.decode(value);
  } catch {
    return 'is not UTF-8 text (an environment variable carries text; mount it as a file instead)';
  }
  if (text.includes("'")) return "contains a single quote, which the env-file format cannot carry (mount it as a file instead)";
  if (text.includes('\0')) return 'contains a NUL byte, which no environment variable can carry';
  if (text.includes('\r\n')) return 'contains a carriage return before a newline, which the kubelet\'s parser drops';
  return undefined;
}

/** The env file's content for `env` from the rendered ExternalSecrets, or throws
 *  EnvFileError naming the first variable that cannot be set. */
export function formatEnvFile(env: AgentEnv, scopes: ReadonlyMap<string, SecretMap>): Uint8Array {
  const lines: string[] = [];
  for (const v of env.vars) {
    const data = scopes.get(v.secret);
    const what = `esi.dev/env: ${v.name} (key "${v.key}" of ExternalSecret "${v.secret}")`;
    const value = data && Object.hasOwn(data, v.key) ? data[v.key]! : undefined;
    if (value === undefined) throw new EnvFileError(`${what}: the ExternalSecret has no such key`);
    const problem = envValueProblem(value);
    if (problem) throw new EnvFileError(`${what}: the value ${problem}`);
    lines.push(`${v.name}='${utf8.decode(value)}'\n`);
  }
  return enc.encode(lines.join(''));
}
