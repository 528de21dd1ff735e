// gRPC status → ProviderError, and the bounded retry/deadline loop every call runs in.
// Messages are ESI's own: a server's or auth library's text is never passed through,
// since it could quote a request (a payload) back.
import type { Classified } from '../errors.js';
import type { ProviderErrorCode } from '../types.js';

/** gRPC status codes (google.rpc.Code). */
export const Code = {
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

const NAMES = new Map<number, string>(Object.entries(Code).map(([k, v]) => [v, k]));

/** The gRPC status code of an error from the client library, if it has one. */
export function grpcCode(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** A failure to obtain credentials (STS exchange, JWT signing, ADC), raised by this
 *  provider's own credential code. */
export class CredentialFailure extends Error {
  override name = 'CredentialFailure';
}

/** grpc-js reports a failure of the credentials plugin before a call only as a status
 *  with this fixed text (its own wording, never the server's): the one place the
 *  provider must read a message, because the library keeps the original error from it. */
const PLUGIN_FAILURE = 'Getting metadata from plugin failed';

function isCredentialFailure(err: unknown): boolean {
  if (err instanceof CredentialFailure) return true;
  const e = err as { code?: unknown; details?: unknown; message?: unknown } | null;
  const text = typeof e?.details === 'string' ? e.details : typeof e?.message === 'string' ? e.message : '';
  return typeof e?.code === 'number' && text.startsWith(PLUGIN_FAILURE);
}

const MAPPED: Partial<Record<number, [ProviderErrorCode, string]>> = {
  [Code.NOT_FOUND]: ['NotFound', 'not found'],
  [Code.UNAUTHENTICATED]: ['AuthFailed', 'the store rejected the credentials (UNAUTHENTICATED)'],
  [Code.PERMISSION_DENIED]: ['Forbidden', 'permission denied (PERMISSION_DENIED): check the IAM role of the identity'],
  [Code.UNAVAILABLE]: ['Unreachable', 'Secret Manager is unreachable (UNAVAILABLE)'],
  [Code.DEADLINE_EXCEEDED]: ['Timeout', 'no answer within the deadline (DEADLINE_EXCEEDED)'],
  [Code.FAILED_PRECONDITION]: ['NotFound', 'the secret version is disabled or destroyed (FAILED_PRECONDITION)'],
  [Code.INVALID_ARGUMENT]: ['Unknown', 'the request was rejected as invalid (INVALID_ARGUMENT): check the key and version'],
  [Code.RESOURCE_EXHAUSTED]: ['Unreachable', 'quota exhausted (RESOURCE_EXHAUSTED)'],
};

/** What a failed call (`what`, e.g. "access") means, from its gRPC status code. */
export function classifyGcpsm(err: unknown): Classified | undefined {
  const code = grpcCode(err);
  if (code !== Code.UNAUTHENTICATED && isCredentialFailure(err)) {
    return { code: 'AuthFailed', message: 'could not obtain credentials (token exchange or key rejected)', keepCause: true };
  }
  const mapped = code === undefined ? undefined : MAPPED[code];
  if (mapped) return { code: mapped[0], message: mapped[1], keepCause: true };
  if (code === undefined) return undefined;
  return { code: 'Unknown', message: `failed (${NAMES.get(code) ?? `code ${code}`})`, keepCause: true };
}

const TRANSIENT = new Set<number>([Code.UNAVAILABLE, Code.DEADLINE_EXCEEDED, Code.RESOURCE_EXHAUSTED, Code.INTERNAL, Code.ABORTED]);

export interface CallPolicy {
  /** Total time budget of the call, retries included. */
  timeoutMs: number;
  /** Attempts for idempotent calls (1 = no retry). */
  attempts: number;
  /** First backoff; doubles each retry. */
  backoffMs: number;
}

export const DEFAULT_POLICY: Omit<CallPolicy, 'timeoutMs'> = { attempts: 3, backoffMs: 100 };

/** Runs `fn(deadlineMs)` with bounded retries of transient failures while the budget lasts.
 *  Non-idempotent calls (adding a version) are tried once. */
export async function withRetries<T>(policy: CallPolicy, idempotent: boolean, fn: (timeoutMs: number) => Promise<T>): Promise<T> {
  const end = Date.now() + policy.timeoutMs;
  const attempts = idempotent ? Math.max(1, policy.attempts) : 1;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(Math.max(1, end - Date.now()));
    } catch (err) {
      const code = grpcCode(err);
      const wait = policy.backoffMs * 2 ** (attempt - 1);
      const retry = attempt < attempts && code !== undefined && TRANSIENT.has(code) && Date.now() + wait < end;
      if (!retry) throw err;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
