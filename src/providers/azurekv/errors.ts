// Maps what the Azure SDK throws (RestError from the Key Vault data plane, the
// @azure/identity credential errors, aborts, socket and TLS failures) to ProviderError.
// Messages are built from status codes and service error codes only: service and
// token-endpoint messages are not passed through, so nothing a server chose to echo
// (a request body, a value) can reach a log line or a status condition.
import { networkCode, type Classified, type Classifier } from '../errors.js';
import type { ProviderErrorCode } from '../types.js';

/** Thrown by our own deadline when the SDK does not give up in time. */
export class DeadlineError extends Error {
  override name = 'DeadlineError';
}

const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT']);
const TLS_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'CERT_HAS_EXPIRED', 'ERR_TLS_CERT_ALTNAME_INVALID', 'CERT_UNTRUSTED',
]);

interface ErrorLike {
  name?: string;
  code?: string;
  statusCode?: number;
  message?: string;
  cause?: unknown;
  errors?: unknown[];
  errorResponse?: { error?: string; errorDescription?: string };
  details?: { error?: { code?: string; innerError?: { code?: string }; innererror?: { code?: string } } };
}

/** A short, value-free description of a service error: its code and inner code. */
function serviceCode(e: ErrorLike): string {
  const d = e.details?.error;
  const inner = d?.innerError?.code ?? d?.innererror?.code;
  return [d?.code ?? e.code, inner].filter((c) => typeof c === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(c)).join('/');
}

function fromNetworkCode(code: string): [ProviderErrorCode, string] {
  if (TIMEOUT_CODES.has(code)) return ['Timeout', `connection timed out (${code})`];
  if (TLS_CODES.has(code)) {
    return ['Unreachable', `TLS verification of the server failed (${code}); trust its CA through the system store or ESI_AZUREKV_CA_FILE`];
  }
  return ['Unreachable', `cannot connect (${code})`];
}

function fromStatus(status: number, code: string, what: string): [ProviderErrorCode, string] {
  const detail = code ? `${status} ${code}` : String(status);
  if (status === 404) return ['NotFound', `${what} not found (${detail})`];
  if (status === 401) return ['AuthFailed', `the vault rejected the access token (${detail})`];
  if (status === 403) return ['Forbidden', `the identity may not do this on the vault (${detail}); see the required Key Vault permissions`];
  if (status === 409) return ['Unknown', `conflict (${detail})`];
  if (status === 429) return ['Unknown', `throttled by the vault (${detail})`];
  if (status >= 500) return ['Unreachable', `vault error (${detail})`];
  return ['Unknown', `request failed (${detail})`];
}

/** OAuth 2.0 / Entra ID error codes worth naming (RFC 6749 §5.2 and MSAL's). */
const OAUTH_CODES = /\b(invalid_client|invalid_request|invalid_grant|invalid_scope|invalid_tenant|unauthorized_client|unsupported_grant_type|interaction_required|temporarily_unavailable|not_found|server_error)\b/;
const CREDENTIAL_ERRORS = new Set(['AuthenticationError', 'AuthenticationRequiredError', 'CredentialUnavailableError']);

/** Identity errors: the token endpoint (Entra ID, IMDS) refused or was not reachable.
 *  Only the OAuth error code, the AADSTS number and the status are kept. */
function fromCredential(e: ErrorLike): [ProviderErrorCode, string] | undefined {
  if (e.name === 'AggregateAuthenticationError' && e.errors?.length) return fromCredential(e.errors[0] as ErrorLike);
  if (!CREDENTIAL_ERRORS.has(e.name ?? '')) return undefined;
  const net = networkCode(e);
  if (net) {
    const [code, message] = fromNetworkCode(net);
    return [code, `token endpoint: ${message}`];
  }
  const said = `${e.errorResponse?.error ?? ''} ${e.errorResponse?.errorDescription ?? ''} ${e.message ?? ''}`;
  const parts = [OAUTH_CODES.exec(said)?.[1], /\bAADSTS\d+\b/.exec(said)?.[0], e.statusCode ? `status ${e.statusCode}` : undefined].filter(Boolean);
  if (e.name === 'CredentialUnavailableError' && parts.length === 0) {
    return ['AuthFailed', 'no usable credential: the managed identity or workload identity endpoint is not available in this environment'];
  }
  return ['AuthFailed', `the token endpoint refused the credentials (${parts.join(', ') || 'no details'})`];
}

/** What an Azure SDK / identity failure of an operation on `what` (a secret, the
 *  vault) means, from error names, status codes and service error codes. */
export function classifyAzure(what = 'secret'): Classifier {
  return (err: unknown): Classified | undefined => {
    const e = (err ?? {}) as ErrorLike;
    let mapped: [ProviderErrorCode, string] | undefined;
    if (e.name === 'AbortError' || e.name === 'DeadlineError') {
      mapped = ['Timeout', e.name === 'DeadlineError' ? (e.message ?? 'deadline exceeded') : 'the request was aborted at its deadline'];
    } else {
      mapped = fromCredential(e);
    }
    if (!mapped && e.name === 'RestError' && typeof e.statusCode === 'number') mapped = fromStatus(e.statusCode, serviceCode(e), what);
    if (!mapped) {
      const net = networkCode(e);
      if (net) mapped = fromNetworkCode(net);
    }
    mapped ??= ['Unknown', `unexpected ${typeof e.name === 'string' ? e.name : 'error'}`];
    // No `cause`: SDK errors carry requests and responses (headers, bodies) that a log
    // serializer would print; the mapped message says what happened without them.
    return { code: mapped[0], message: mapped[1] };
  };
}
