// The agent's termination message: when it exits with a failure it writes, to the file the
// kubelet reads as the container's termination message (`terminationMessagePath`,
// /dev/termination-log by default), which ExternalSecret failed, on which store, and the error
// class: the same value-free text it logs. The
// kubelet puts it in the pod's status, which the controller reads for ExternalSecrets only the
// agents serve (src/controller/externalsecret/pod-agents.ts). Pods get no API right for
// this: the kubelet reports it.
import { writeFile } from 'node:fs/promises';

/** Where the kubelet reads it unless the container sets terminationMessagePath. */
const DEFAULT_TERMINATION_LOG = '/dev/termination-log';
/** The kubelet keeps at most 4096 bytes of it; the JSON must fit whole. */
const MAX_BYTES = 4096;
const MAX_FAILURES = 4;
const MAX_TEXT = 512;

export interface TerminationMessage {
  esiAgent: 1;
  stage: string;
  failures: { externalSecret?: string; store?: string; code?: string; message: string }[];
}

// Control characters and the like never reach a status (the apiserver would keep them).
const clean = (s: unknown, max = MAX_TEXT): string => String(s ?? '').replace(/[\p{Cc}\p{Cf}]/gu, ' ').slice(0, max);

/** One ExternalSecret's failure, as the agent's fetch stage reports it (injector/fetch.ts). */
interface SecretFailure {
  secret: string;
  store: string;
  error: Error;
}

/** The error class (a ProviderError's code) of `err` or of its causes. */
function codeOf(err: unknown, depth = 0): string | undefined {
  const e = err as { code?: unknown; cause?: unknown } | null;
  if (typeof e?.code === 'string' && /^[A-Za-z]{1,64}$/.test(e.code)) return e.code;
  return depth < 3 && e?.cause ? codeOf(e.cause, depth + 1) : undefined;
}

/** The message for a failure at `stage` (value-free: errors are built without values); an
 *  error with `failures` (the fetch stage's) names each ExternalSecret. */
export function terminationMessage(stage: string, err: unknown): string {
  const each = (err as { failures?: unknown } | null)?.failures;
  const failures = Array.isArray(each)
    ? (each as SecretFailure[]).slice(0, MAX_FAILURES).map((f) => ({
      externalSecret: clean(f.secret, 253), store: clean(f.store, 253),
      ...(codeOf(f.error) ? { code: codeOf(f.error) } : {}),
      message: clean(f.error.message),
    }))
    : [{ message: clean((err as Error)?.message ?? err) }];
  const msg: TerminationMessage = { esiAgent: 1, stage: clean(stage, 16), failures };
  let out = JSON.stringify(msg);
  while (Buffer.byteLength(out) > MAX_BYTES && msg.failures.length > 1) out = JSON.stringify({ ...msg, failures: (msg.failures = msg.failures.slice(0, -1)) });
  return Buffer.byteLength(out) > MAX_BYTES ? JSON.stringify({ esiAgent: 1, stage: msg.stage, failures: [{ message: 'the agent failed (see its log)' }] }) : out;
}

/** Writes the message where the kubelet reads it; a container without that file (the agent
 *  run outside Kubernetes) is not an error. */
export async function writeTerminationMessage(message: string, path = process.env.ESI_TERMINATION_LOG ?? DEFAULT_TERMINATION_LOG): Promise<void> {
  await writeFile(path, message, { flag: 'r+' }).catch(() => undefined);
}

/** One line for a status from a termination message the agent wrote; undefined for any other
 *  text (an older agent, a container's log tail): only the agent's own fields are shown. */
export function parseTerminationMessage(raw: string | undefined): string | undefined {
  if (!raw?.startsWith('{"esiAgent":1')) return undefined;
  let msg: TerminationMessage;
  try {
    msg = JSON.parse(raw) as TerminationMessage;
  } catch {
    return undefined;
  }
  const [first, ...more] = Array.isArray(msg.failures) ? msg.failures : [];
  if (!first) return undefined;
  const where = first.externalSecret ? `ExternalSecret "${clean(first.externalSecret, 253)}"${first.store ? ` (${clean(first.store, 253)})` : ''}: ` : '';
  const code = first.code ? `${clean(first.code, 64)}: ` : '';
  return `${where}${code}${clean(first.message)}${more.length ? ` (and ${more.length} more)` : ''} [agent ${clean(msg.stage, 16)}]`;
}
