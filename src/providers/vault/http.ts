// The HTTP layer of the vault provider: node-vault's generic read/write/list/delete calls
// (node-vault has no KV v2 metadata or custom-metadata helpers, so every call goes through
// the generic ones, with the token passed per request so no state is shared between
// logins). Failures become a value-free VaultCallError: the status or network code, and
// Vault's own error text with every credential of the request redacted.
import NodeVault from 'node-vault';
import type { AddressPolicy } from '../../egress/policy.js';
import type { ProviderErrorCode } from '../types.js';
import { nodeVaultTransport } from './transport.js';

export interface HttpOptions {
  server: string;
  namespace?: string;
  /** PEM CA bundle that verifies the server (caBundle / caProvider). */
  ca?: string;
  /** Client certificate and key (spec.tls). */
  cert?: string;
  key?: string;
  headers?: Record<string, string>;
  forwardInconsistent?: boolean;
  timeoutMs: number;
  /** The reconciler's egress policy for `server` (src/egress/policy.ts); absent in the agent. */
  policy?: AddressPolicy;
  /** Quote Vault's own error text in errors (false: the status only; ProviderContext.quoteStoreErrors). */
  quoteErrors?: boolean;
}

export type Method = 'GET' | 'LIST' | 'POST' | 'DELETE';

export interface CallOptions {
  token?: string;
  body?: unknown;
  /** Credentials in the body: redacted from any error text. */
  secrets?: readonly string[];
  query?: Record<string, string>;
}

/** A failed Vault call: never carries the request or response body. */
export class VaultCallError extends Error {
  override name = 'VaultCallError';
  constructor(
    readonly code: ProviderErrorCode,
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

const NET_UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'ERR_SOCKET_CLOSED']);
const NET_TIMEOUT = new Set(['ECONNABORTED', 'ETIMEDOUT', 'ESOCKETTIMEDOUT', 'ERR_CANCELED']);
const TLS_CODE = /CERT|SELF_SIGNED|UNABLE_TO|ERR_TLS|EPROTO|ERR_SSL|DEPTH_ZERO/;

/** Token-like strings (Vault service/batch/recovery tokens, JWTs) never leave in a message. */
const TOKEN_SHAPES = [/\bhv[sbr]\.[A-Za-z0-9_.-]+/g, /\b[sbr]\.[A-Za-z0-9]{20,}/g, /\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*/g];

export function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join('[redacted]');
  for (const re of TOKEN_SHAPES) out = out.replace(re, '[redacted]');
  return out.length > 300 ? `${out.slice(0, 300)}…` : out;
}

function statusCode(status: number): ProviderErrorCode {
  if (status === 401) return 'AuthFailed';
  if (status === 403) return 'Forbidden';
  if (status === 404) return 'NotFound';
  if (status === 502 || status === 503 || status === 504) return 'Unreachable';
  return 'Unknown';
}

/** Maps whatever node-vault or its transport rejected with to a value-free VaultCallError.
 *  Vault's own error text is quoted (redacted) only when `quote`: a server a tenant aims may
 *  answer anything, and the message reaches status and Events. */
function toCallError(err: unknown, secrets: readonly string[], timeoutMs: number, quote = true): VaultCallError {
  const e = err as { response?: { statusCode?: number; body?: { errors?: unknown[] } }; code?: string; message?: string };
  const status = e?.response?.statusCode;
  if (typeof status === 'number') {
    const first = quote ? (e.response?.body?.errors?.find((x) => typeof x === 'string') as string | undefined) : undefined;
    const text = first ? `: ${redact(first, secrets)}` : '';
    return new VaultCallError(statusCode(status), `Vault answered ${status}${text}`, status);
  }
  const code = typeof e?.code === 'string' ? e.code : undefined;
  return egressError(code, e.message) ?? networkError(code, timeoutMs, err);
}

/** The egress module's refusals and bounds (src/providers/vault/transport.ts): its own value-free words. */
function egressError(code: string | undefined, message: string | undefined): VaultCallError | undefined {
  if (code === 'ERR_EGRESS_REFUSED' || code === 'ERR_REDIRECT_REFUSED') return new VaultCallError('Forbidden', message ?? 'refused by the egress policy');
  if (code === 'ERR_EGRESS' || code === 'ERR_TOO_MANY_REDIRECTS' || code === 'ERR_RESPONSE_TOO_LARGE') return new VaultCallError('Unknown', `Vault request failed: ${message ?? 'egress error'}`);
  return undefined;
}

function networkError(code: string | undefined, timeoutMs: number, err: unknown): VaultCallError {
  if (code && NET_TIMEOUT.has(code)) return new VaultCallError('Timeout', `no answer from Vault within ${timeoutMs} ms`);
  if (code && NET_UNREACHABLE.has(code)) return new VaultCallError('Unreachable', `cannot reach Vault (${code})`);
  if (code && TLS_CODE.test(code)) return new VaultCallError('Unreachable', `TLS handshake with Vault failed (${code}); check caBundle/caProvider`);
  // Schema errors of node-vault and anything unexpected: name the kind only.
  return new VaultCallError('Unknown', `Vault request failed (${code ?? (err instanceof Error ? err.name : 'error')})`);
}

/** Encodes each segment of a Vault path (keys may hold spaces, `#`, `?`, …). */
function encodePath(path: string): string {
  return path.split('/').map((s) => encodeURIComponent(s)).join('/');
}

export class VaultHttp {
  private readonly nv: NodeVault.client;
  private readonly headers: Record<string, string>;

  constructor(private readonly opts: HttpOptions) {
    this.nv = NodeVault({
      apiVersion: 'v1',
      endpoint: opts.server,
      // node-vault reads VAULT_TOKEN / VAULT_NAMESPACE / VAULT_PREFIX / VAULT_SKIP_VERIFY from the
      // environment when a field is unset: pin every one so only the store spec counts.
      token: '',
      namespace: opts.namespace ?? '',
      pathPrefix: '',
      noCustomHTTPVerbs: true,
      rpDefaults: { strictSSL: true },
      // node-vault's debug logger prints request bodies (secret values): silence it.
      debug: () => undefined,
      // The transport (src/providers/vault/transport.ts) holds the TLS material and the bound.
      'request-promise': nodeVaultTransport({ timeoutMs: opts.timeoutMs, ca: opts.ca, cert: opts.cert, key: opts.key, ...(opts.policy ? { policy: opts.policy } : {}) }),
    } as NodeVault.VaultOptions);
    // The constructor falls back to the environment for these; the spec decides.
    this.nv.token = '';
    (this.nv as unknown as { namespace: string }).namespace = opts.namespace ?? '';
    this.headers = { ...(opts.headers ?? {}) };
    if (opts.forwardInconsistent) this.headers['X-Vault-Inconsistent'] = 'forward-active-node';
  }

  /** One call; the path is encoded segment by segment, `query` as URL parameters. Any
   *  failure is a VaultCallError with the request's credentials redacted. Resolves with
   *  the parsed body (undefined for 204). */
  async call(method: Method, path: string, o: CallOptions = {}): Promise<Record<string, unknown> | undefined> {
    const headers: Record<string, string> = { ...this.headers, 'X-Vault-Request': 'true' };
    if (o.token) headers['X-Vault-Token'] = o.token;
    const secrets = o.token ? [o.token, ...(o.secrets ?? [])] : (o.secrets ?? []);
    const params = new URLSearchParams(o.query ?? {});
    if (method === 'LIST') params.set('list', 'true');
    const qs = params.size > 0 ? `?${params.toString()}` : '';
    const p = `${encodePath(path)}${qs}`;
    try {
      let res: unknown;
      if (method === 'GET' || method === 'LIST') res = await this.nv.read(p, { headers });
      else if (method === 'DELETE') res = await this.nv.delete(p, { headers });
      else res = await this.nv.write(p, o.body ?? {}, { headers });
      return typeof res === 'object' && res !== null ? (res as Record<string, unknown>) : undefined;
    } catch (err) {
      throw toCallError(err, secrets, this.opts.timeoutMs, this.opts.quoteErrors ?? true);
    }
  }
}
