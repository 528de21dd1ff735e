// Maps what can go wrong talking to a plugin to ProviderError:
//  - transport failures grpc-js reports as UNAVAILABLE (refused, reset, DNS, TLS);
//  - DEADLINE_EXCEEDED (the plugin did not answer in time);
//  - status codes a plugin returns (UNAUTHENTICATED, PERMISSION_DENIED, NOT_FOUND, ...);
//  - the `error` string of a reply ("<Code>: <message>", see contract.ts).
// Text that comes from the plugin is cut short, stripped of control characters, and a
// pushed value is masked if the plugin echoes it; plugins must still keep their errors
// value-free (the contract says so) because ESI cannot recognise a value it never saw.
import { status as Status, type ServiceError } from '@grpc/grpc-js';
import type { Classified, Classifier } from '../errors.js';
import type { ProviderErrorCode } from '../types.js';
import { parseReplyError } from './contract.js';

export interface CallInfo {
  storeId: string;
  /** The url as configured, e.g. `https://plugin.esi-system.svc:50051`. */
  url: string;
  /** Method name, e.g. `GetSecret`. */
  method: string;
  key?: string;
  timeoutMs: number;
  attempts: number;
  /** Whether the channel uses TLS (false: an explicit http:// url). */
  tls: boolean;
  /** Whether a client certificate was presented (mTLS). */
  clientCert: boolean;
  /** The Secret holding the TLS material, for hints. */
  tlsSecret?: string;
  /** A value the call carried (PushSecret), masked if the plugin echoes it. */
  value?: Uint8Array;
  /** Quote the plugin's own text (false: the status only; ProviderContext.quoteStoreErrors). */
  quote?: boolean;
}

const MAX_TEXT = 200;

/** Plugin- or transport-provided text made safe for a log line: one line, short, and
 *  without the value the call carried. */
function sanitize(text: string, value?: Uint8Array): string {
  let t = text;
  if (value && value.length >= 4) {
    const v = Buffer.from(value).toString('utf8');
    if (v.trim() !== '') t = t.split(v).join('[redacted]');
  }
  // eslint-disable-next-line no-control-regex
  t = t.replace(/[\u0000-\u001f\u007f]+/g, ' ').replace(/\s+/g, ' ').trim();
  return t.length > MAX_TEXT ? `${t.slice(0, MAX_TEXT)}…` : t;
}

/** grpc-js wraps transport failures as "No connection established. Last error: <e> (<time>).
 *  Resolution note: ..."; keep <e> only, with OpenSSL's file/line noise removed. */
export function transportReason(details: string): string {
  let d = details.replace(/^No connection established\. Last error: /, '');
  d = d.replace(/\s*\(\d{4}-\d\d-\d\dT[^)]*\)/g, '').replace(/\.?\s*Resolution note:.*$/s, '').replace(/^Error: /, '');
  const alert = /(tlsv1[0-9]? )?alert ([a-z ]+?)(?::|$)/i.exec(d);
  if (alert) return `TLS alert "${alert[2]!.trim()}"`;
  const ssl = /SSL routines:[^:]*:([^:]+)/.exec(d);
  if (ssl) return `TLS error "${ssl[1]!.trim()}"`;
  if (/ECONNREFUSED/.test(d)) return 'connection refused';
  if (/ECONNRESET|EPIPE/.test(d)) return 'connection reset';
  if (/ETIMEDOUT/.test(d)) return 'connection timed out';
  if (/EHOSTUNREACH|ENETUNREACH/.test(d)) return 'no route to host';
  if (/ENOTFOUND|EAI_AGAIN|Name resolution failed|DNS resolution failed/i.test(d)) return 'the host name does not resolve';
  return d;
}

/** The plugin (server) refused our TLS client certificate, or wanted one. */
const CLIENT_CERT_REFUSED = /alert "(certificate required|bad certificate|unknown ca|certificate unknown|certificate revoked|certificate expired|unsupported certificate|access denied|handshake failure)"/;
/** We do not trust the plugin's certificate (Node's verification messages). */
const SERVER_CERT_UNTRUSTED = /self[- ]signed certificate|unable to (verify|get (local )?issuer)|certificate has expired|certificate is not yet valid|does not match certificate's altnames|altname|certificate signature failure|CERT_/i;
/** TLS client against a plaintext server. */
const NOT_TLS = /wrong version number|packet length too long|http request/i;

function statusName(code: number): string {
  return (Object.entries(Status).find(([, v]) => v === code)?.[0] ?? String(code));
}

function attemptsNote(info: CallInfo): string {
  return info.attempts > 1 ? ` (${info.attempts} attempts)` : '';
}

function unavailable(info: CallInfo, details: string): [ProviderErrorCode, string, boolean] {
  const reason = sanitize(transportReason(details), info.value);
  const at = `plugin at ${info.url}`;
  const secret = info.tlsSecret ? ` in Secret "${info.tlsSecret}"` : '';
  if (CLIENT_CERT_REFUSED.test(reason)) {
    const what = info.clientCert
      ? `refused ESI's TLS client certificate (${reason}): tls.crt${secret} must be signed by a CA the plugin trusts`
      : `requires a TLS client certificate (${reason}): put tls.crt and tls.key${secret || ' in the Secret named by tlsSecretRef'}`;
    return ['AuthFailed', `${at} ${what}`, false];
  }
  if (SERVER_CERT_UNTRUSTED.test(reason)) {
    const fix = info.tlsSecret ? `ca.crt${secret} must hold the CA that signed the plugin's certificate` : 'set tlsSecretRef to a Secret whose ca.crt holds the CA that signed it';
    return ['Unreachable', `TLS handshake with ${at} failed: its certificate is not trusted (${reason}); ${fix}`, false];
  }
  if (NOT_TLS.test(reason)) {
    return ['Unreachable', `TLS handshake with ${at} failed (${reason}): the plugin does not speak TLS; if it is plaintext, write the url as http://`, false];
  }
  const transport = /^No connection established|^Connection dropped|^Failed to connect/.test(details) || reason !== sanitize(details, info.value);
  if (/^Failed to connect/.test(reason) && info.clientCert) {
    return ['Unreachable', `${at} is not reachable: ${reason}${attemptsNote(info)}; the plugin closed the connection during the TLS handshake: it may not trust tls.crt${secret}`, true];
  }
  if (/^Failed to connect/.test(reason) && !info.tls) {
    return ['Unreachable', `${at} is not reachable: ${reason}${attemptsNote(info)}; if the plugin serves TLS, write the url as host:port or https://`, true];
  }
  return ['Unreachable', `${at} ${transport ? 'is not reachable' : 'is unavailable'}: ${reason}${attemptsNote(info)}`, true];
}

/** What a ServiceError (non-OK status) of one call means. `retryable` says whether
 *  trying again may help. */
function fromStatus(err: ServiceError, info: CallInfo): Classified & { retryable: boolean } {
  const details = String(err.details ?? '');
  const text = info.quote === false ? '' : sanitize(details, info.value);
  const at = `plugin at ${info.url}`;
  let code: ProviderErrorCode;
  let message: string;
  let retryable = false;
  switch (err.code) {
    case Status.UNAVAILABLE:
      [code, message, retryable] = unavailable(info, details);
      break;
    case Status.DEADLINE_EXCEEDED:
      code = 'Timeout';
      message = `${at} did not answer ${info.method} within ${info.timeoutMs} ms${attemptsNote(info)}`;
      retryable = true;
      break;
    case Status.UNAUTHENTICATED:
      [code, message] = ['AuthFailed', `${at} did not accept ESI's credentials (UNAUTHENTICATED${text ? `: ${text}` : ''})`];
      break;
    case Status.PERMISSION_DENIED:
      [code, message] = ['Forbidden', `${at} denied ${info.method} (PERMISSION_DENIED${text ? `: ${text}` : ''})`];
      break;
    case Status.NOT_FOUND:
      [code, message] = ['NotFound', `${at}: secret not found (NOT_FOUND${text ? `: ${text}` : ''})`];
      break;
    case Status.UNIMPLEMENTED:
      [code, message] = ['Unsupported', `${at} does not implement /SecretsServer/${info.method} (UNIMPLEMENTED): a plugin registers the service "SecretsServer" with no proto package`];
      break;
    default:
      [code, message] = ['Unknown', `${at} failed ${info.method} (${statusName(err.code)}${text ? `: ${text}` : ''})`];
  }
  // The status carries the plugin's (sanitized) text only, never a payload: keep it.
  return { code, message, retryable, keepCause: true };
}

/** A non-empty `error` field of a reply (the contract's error channel). */
export class ReplyError extends Error {
  override name = 'ReplyError';

  constructor(readonly reply: string) {
    super('the plugin replied with an error');
  }
}

/** What a failed call means, for `toProviderError`: a status of the transport or the
 *  plugin, or the reply's `error` field by the "<Code>: <message>" convention. */
export function classifyGrpc(info: CallInfo): Classifier {
  return (err) => {
    if (err instanceof ReplyError) {
      const { code, message } = parseReplyError(err.reply);
      const text = info.quote === false ? '' : sanitize(message, info.value);
      return { code, message: `plugin at ${info.url}: ${text || code}` };
    }
    return isServiceError(err) ? fromStatus(err, info) : undefined;
  };
}

/** Whether trying a failed call again may help. */
export function isRetryable(err: unknown, info: CallInfo): boolean {
  return isServiceError(err) && fromStatus(err, info).retryable;
}

export function isServiceError(err: unknown): err is ServiceError {
  return err instanceof Error && typeof (err as Partial<ServiceError>).code === 'number' && 'details' in err;
}
