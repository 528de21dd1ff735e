// The one way a provider turns whatever a call threw into a ProviderError. Every provider
// calls `toProviderError(err, scope, classify)` with its own `classify` (the SDK's error
// types and codes, never message text); what no classifier claims is mapped here by
// type and code alone. No value may reach a message: classifiers build messages from
// names, codes and statuses, and no SDK error is kept as `cause` unless the classifier
// says it is safe (SDK errors carry requests and responses a log serializer would print).
// See docs/decisions/0007-no-values-in-errors.md.
import { ProviderError, type ProviderErrorCode, type RemoteRef } from './types.js';

/** A value-free failure of a pure helper (JSON paths, key rules) with its code; the
 *  provider adds the store and key through `toProviderError`. */
export class RemoteRefError extends Error {
  override name = 'RemoteRefError';

  constructor(
    message: string,
    readonly code: ProviderErrorCode = 'Unknown',
  ) {
    super(message);
  }
}

/** Where a failure happened: the store, the operation (e.g. "GetSecretValue") and the key. */
export interface ErrorScope {
  storeId: string;
  op?: string;
  key?: string;
}

/** What a provider's classifier says about an error it recognises. */
export interface Classified {
  code: ProviderErrorCode;
  message: string;
  /** Keep the original error as `cause` (only for errors known to hold no payload). */
  keepCause?: boolean;
}

/** A provider's knowledge of its SDK's errors; undefined = not one of mine. */
export type Classifier = (err: unknown) => Classified | undefined;

interface ErrorLike {
  name?: unknown;
  code?: unknown;
  cause?: unknown;
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ECONNABORTED',
  'REQUEST_SEND_ERROR', 'UND_ERR_SOCKET',
]);
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ABORT_ERR']);
const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_HAS_EXPIRED', 'ERR_TLS_CERT_ALTNAME_INVALID', 'CERT_UNTRUSTED',
]);
const TIMEOUT_NAMES = new Set(['AbortError', 'TimeoutError', 'DeadlineError']);
const SAFE_NAME = /^[A-Za-z0-9_.:-]{1,80}$/;

/** The Node socket/TLS error code of `err` or of its `cause` chain, if any. */
export function networkCode(err: unknown, depth = 0): string | undefined {
  const e = err as ErrorLike | null | undefined;
  if (!e || typeof e !== 'object' || depth > 5) return undefined;
  if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || TIMEOUT_CODES.has(e.code) || TLS_CODES.has(e.code))) return e.code;
  if (Array.isArray((e as { errors?: unknown }).errors)) {
    for (const inner of (e as { errors: unknown[] }).errors) {
      const c = networkCode(inner, depth + 1);
      if (c) return c;
    }
  }
  return networkCode(e.cause, depth + 1);
}

/** The classification of a socket, TLS or deadline failure, whoever raised it. */
function transportFailure(err: unknown): Classified | undefined {
  const name = (err as ErrorLike | null)?.name;
  if (typeof name === 'string' && TIMEOUT_NAMES.has(name)) return { code: 'Timeout', message: `no answer within the deadline (${name})` };
  const code = networkCode(err);
  if (!code) return undefined;
  if (TIMEOUT_CODES.has(code)) return { code: 'Timeout', message: `connection timed out (${code})` };
  if (TLS_CODES.has(code)) return { code: 'Unreachable', message: `TLS verification of the server failed (${code})` };
  return { code: 'Unreachable', message: `cannot connect (${code})` };
}

/** A short, value-free name for an unrecognised error. */
function safeName(err: unknown): string {
  const name = (err as ErrorLike | null)?.name;
  return typeof name === 'string' && SAFE_NAME.test(name) ? name : 'error';
}

/** Maps anything thrown during `scope.op` to a ProviderError naming the store and key:
 *  a ProviderError passes unchanged, a RemoteRefError keeps its
 *  code, then the provider's classifier, then transport failures, else Unknown. */
export function toProviderError(err: unknown, scope: ErrorScope, classify?: Classifier): ProviderError {
  const prefix = scope.op ? `${scope.op}: ` : '';
  // Already mapped below this call (a credential exchange, the caller's own context):
  // passed on as it is, so the first and most precise description wins.
  if (err instanceof ProviderError) return err;
  if (err instanceof RemoteRefError) return new ProviderError(err.code, scope.storeId, err.message, scope.key);
  const c = classify?.(err) ?? transportFailure(err);
  if (c) return new ProviderError(c.code, scope.storeId, `${prefix}${c.message}`, scope.key, c.keepCause ? { cause: err } : undefined);
  return new ProviderError('Unknown', scope.storeId, `${prefix}unexpected ${safeName(err)}`, scope.key);
}

/** Runs a pure helper (JSON paths, key rules) and maps what it throws for `scope`. */
export function guard<T>(scope: ErrorScope, fn: () => T, classify?: Classifier): T {
  try {
    return fn();
  } catch (err) {
    throw toProviderError(err, scope, classify);
  }
}

/** `<what> is not supported by the <provider> provider` (code Unsupported). */
export function unsupportedBy(provider: string, storeId: string, what: string, key?: string): ProviderError {
  return new ProviderError('Unsupported', storeId, `${what} is not supported by the ${provider} provider`, key);
}

/** The stores read over HTTP keep no versions and no metadata ESO could fetch: a
 *  `remoteRef.version` or `metadataPolicy: Fetch` is refused, naming the field. */
export function refuseVersionAndMetadata(provider: string, storeId: string, ref: RemoteRef): void {
  if (ref.version) throw unsupportedBy(provider, storeId, 'remoteRef.version', ref.key);
  if (ref.metadataPolicy === 'Fetch') throw unsupportedBy(provider, storeId, 'metadataPolicy Fetch', ref.key);
}
