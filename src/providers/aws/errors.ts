// Maps what the AWS SDK throws (service exceptions of Secrets Manager, SSM and STS,
// socket failures, timeouts, aborts) to ProviderError. Messages are built from error
// names and HTTP statuses; a service message is passed on only for the authorization
// errors (they name the principal, the action and the resource, which is what a user
// needs to fix a policy) and only after a value-free check: nothing a server echoed from
// a request body can reach a log line or a status condition. No `cause` either: SDK
// errors carry the raw request and response.
import { networkCode, type Classified } from '../errors.js';
import type { ProviderErrorCode } from '../types.js';

const AUTH_FAILED = new Set([
  'UnrecognizedClientException', 'InvalidSignatureException', 'InvalidClientTokenId', 'SignatureDoesNotMatch',
  'IncompleteSignature', 'MissingAuthenticationToken', 'MissingAuthenticationTokenException', 'InvalidAccessKeyId',
  'ExpiredToken', 'ExpiredTokenException', 'RequestExpired', 'InvalidIdentityToken', 'IDPRejectedClaim',
  'InvalidIdentityTokenException', 'CredentialsProviderError', 'InvalidToken', 'NotAuthorized',
]);
const FORBIDDEN = new Set(['AccessDenied', 'AccessDeniedException', 'AuthorizationError', 'KMSAccessDeniedException']);
const NOT_FOUND = new Set(['ResourceNotFoundException', 'ParameterNotFound', 'ParameterVersionNotFound', 'ParameterVersionLabelNotFound']);
const THROTTLED = new Set(['ThrottlingException', 'Throttling', 'TooManyRequestsException', 'ThrottledException', 'RequestLimitExceeded']);
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'ABORT_ERR']);

interface ErrorLike {
  name?: string;
  code?: string;
  message?: string;
  cause?: unknown;
  $metadata?: { httpStatusCode?: number };
  $fault?: string;
}

const SAFE_NAME = /^[A-Za-z0-9_.:-]{1,80}$/;

export function isNotFound(err: unknown): boolean {
  const name = (err as ErrorLike | undefined)?.name;
  return name !== undefined && NOT_FOUND.has(name);
}

/** The exception Secrets Manager answers for a secret scheduled for deletion (among other
 *  invalid requests: the client asks DescribeSecret which one it is). */
export function isInvalidRequest(err: unknown): boolean {
  return (err as ErrorLike | undefined)?.name === 'InvalidRequestException';
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

/** What an AWS SDK failure means, from its exception name, HTTP status and the socket
 *  error code of its cause chain. */
export function classifyAws(err: unknown): Classified | undefined {
  const e = (err ?? {}) as ErrorLike;
  const net = networkCode(e);
  if (net) return { code: TIMEOUT_CODES.has(net) ? 'Timeout' : 'Unreachable', message: `cannot reach AWS (${net})` };
  const name = typeof e.name === 'string' && SAFE_NAME.test(e.name) ? e.name : 'Error';
  const [code, message] = classify(e, name, e.$metadata?.httpStatusCode);
  return { code, message };
}
