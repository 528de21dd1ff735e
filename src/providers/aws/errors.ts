// Maps what the AWS SDK throws (service exceptions of Secrets Manager, SSM and STS,
// socket failures, timeouts, aborts) to ProviderError. Messages are built from error
// names and HTTP statuses; a service message is passed on only for the authorization
// errors (they name the principal, the action and the resource, which is what a user
// needs to fix a policy) and only after a value-free check: nothing a server echoed from
// a request body can reach a log line or a status condition. No `cause` either: SDK
// errors carry the raw request and response.
import { ProviderError, type ProviderErrorCode } from '../types.js';

const AUTH_FAILED = new Set([
  'UnrecognizedClientException', 'InvalidSignatureException', 'InvalidClientTokenId', 'SignatureDoesNotMatch',
  'IncompleteSignature', 'MissingAuthenticationToken', 'MissingAuthenticationTokenException', 'InvalidAccessKeyId',
  'ExpiredToken', 'ExpiredTokenException', 'RequestExpired', 'InvalidIdentityToken', 'IDPRejectedClaim',
  'InvalidIdentityTokenException', 'CredentialsProviderError', 'InvalidToken', 'NotAuthorized',
]);
const FORBIDDEN = new Set(['AccessDenied', 'AccessDeniedException', 'AuthorizationError', 'KMSAccessDeniedException']);
const NOT_FOUND = new Set(['ResourceNotFoundException', 'ParameterNotFound', 'ParameterVersionNotFound', 'ParameterVersionLabelNotFound']);
const THROTTLED = new Set(['ThrottlingException', 'Throttling', 'TooManyRequestsException', 'ThrottledException', 'RequestLimitExceeded']);
const NETWORK_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ECONNABORTED',
  'UND_ERR_SOCKET', 'CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'ERR_TLS_CERT_ALTNAME_INVALID',
]);
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT']);

interface ErrorLike {
  name?: string;
  code?: string;
  message?: string;
  cause?: unknown;
  $metadata?: { httpStatusCode?: number };
  $fault?: string;
}

const SAFE_NAME = /^[A-Za-z0-9_.:-]{1,80}$/;

/** Whether a service error names a secret that is scheduled for deletion (reads treat
 *  it as absent, as ESO does). */
export function isMarkedForDeletion(err: unknown): boolean {
  const e = err as ErrorLike | undefined;
  return (
    (e?.name === 'InvalidRequestException' || e?.name === 'InvalidParameterException') &&
    /marked (for )?delet/i.test(e.message ?? '')
  );
}

export function isNotFound(err: unknown): boolean {
  const name = (err as ErrorLike | undefined)?.name;
  return (name !== undefined && NOT_FOUND.has(name)) || isMarkedForDeletion(err);
}

function networkCode(err: unknown, depth = 0): string | undefined {
  const e = err as ErrorLike | undefined;
  if (!e || depth > 5) return undefined;
  if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || TIMEOUT_CODES.has(e.code))) return e.code;
  const m = /\b(E[A-Z_]{4,})\b/.exec(e.message ?? '');
  if (m && (NETWORK_CODES.has(m[1]!) || TIMEOUT_CODES.has(m[1]!))) return m[1];
  return networkCode(e.cause, depth + 1);
}

/** An authorization message is kept when it reads like one (principal/action/resource)
 *  and is short; anything else is dropped. */
function authorizationDetail(e: ErrorLike): string {
  const msg = (e.message ?? '').replace(/\s+/g, ' ').trim();
  if (msg.length > 0 && msg.length <= 400 && /(not authorized|is not allowed|access denied|explicit deny)/i.test(msg)) return `: ${msg}`;
  return '';
}

function classify(e: ErrorLike, name: string, status: number | undefined): [ProviderErrorCode, string] {
  const statusText = status ? ` (HTTP ${status})` : '';
  if (AUTH_FAILED.has(name)) {
    if (name === 'CredentialsProviderError') return ['AuthFailed', 'no AWS credentials could be obtained'];
    return ['AuthFailed', `AWS rejected the credentials (${name})`];
  }
  if (FORBIDDEN.has(name)) return ['Forbidden', `access denied (${name})${authorizationDetail(e)}`];
  if (NOT_FOUND.has(name)) return ['NotFound', `not found (${name})`];
  // ProviderErrorCode has no "throttled": the caller retries later with backoff.
  if (THROTTLED.has(name)) return ['Unknown', `throttled by AWS (${name})`];
  if (name === 'TimeoutError' || name === 'AbortError' || name === 'RequestTimeout' || name === 'RequestTimeoutException') {
    return ['Timeout', `no answer within the deadline (${name})`];
  }
  if (status === 401) return ['AuthFailed', `the endpoint refused the credentials${statusText}`];
  if (status === 403) return ['Forbidden', `the endpoint refused the request${statusText}`];
  if (status !== undefined && status >= 500) return ['Unreachable', `AWS service error (${SAFE_NAME.test(name) ? name : 'unknown'})${statusText}`];
  return ['Unknown', `request failed (${SAFE_NAME.test(name) ? name : 'error'})${statusText}`];
}

/** The ProviderError for an SDK failure of `op` (e.g. "GetSecretValue") on `key`. */
export function toProviderError(err: unknown, storeId: string, op: string, key?: string): ProviderError {
  if (err instanceof ProviderError) {
    // Raised by the credential chain (STS) inside a call: name the key the call was for.
    if (err.key || !key || !err.message.startsWith(`${storeId}: `)) return err;
    return new ProviderError(err.code, storeId, err.message.slice(storeId.length + 2), key);
  }
  const e = (err ?? {}) as ErrorLike;
  const net = networkCode(e);
  if (net) {
    const code: ProviderErrorCode = TIMEOUT_CODES.has(net) ? 'Timeout' : 'Unreachable';
    return new ProviderError(code, storeId, `${op}: cannot reach AWS (${net})`, key);
  }
  if (isMarkedForDeletion(e)) return new ProviderError('NotFound', storeId, `${op}: the secret is scheduled for deletion`, key);
  const name = typeof e.name === 'string' && SAFE_NAME.test(e.name) ? e.name : 'Error';
  const [code, message] = classify(e, name, e.$metadata?.httpStatusCode);
  return new ProviderError(code, storeId, `${op}: ${message}`, key);
}
