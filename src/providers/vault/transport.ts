// node-vault's HTTP transport, through the egress module (src/egress/http.ts). node-vault takes its transport from its
// `request-promise` option (an object whose defaults() returns the request function); without
// it node-vault sends through axios, which was ~40 % of the agent's CPU per refresh and
// ~10 MiB of its private memory (docs/performance/agent-profile.md). node-vault still
// builds every request (paths, token and namespace headers) and judges every answer
// (handleVaultResponse, ApiResponseError); this module only moves bytes.
import type { AddressPolicy } from '../../egress/policy.js';
import { EgressError } from '../../egress/connect.js';
import { httpCall } from '../../egress/http.js';
import { parseJsonText, stringifyJson } from '../json-text.js';

/** What node-vault hands its transport (the fields of request-promise it uses). */
export interface TransportRequest {
  method: string;
  uri: string;
  headers?: Record<string, string>;
  /** A request body, sent as JSON (node-vault's write and update). */
  json?: unknown;
}

/** What node-vault reads back: the status, the parsed body, the request path. */
export interface TransportResponse {
  statusCode: number;
  body: unknown;
  request: { path: string };
}

export interface TransportOptions {
  /** PEM CA bundle that verifies the server, client certificate and key (spec.tls). */
  ca?: string;
  cert?: string;
  key?: string;
  /** Whole-call bound, connection and redirects included. */
  timeoutMs: number;
  /** The addresses the server's name may resolve to (the reconciler's egress policy);
   *  under a policy a redirect to another origin is refused. */
  policy?: AddressPolicy;
}

/** Vault redirects a client from a standby node to the active one with 307 (308 alike). */
const REDIRECTS = { statuses: [307, 308], max: 5 };
/** Larger than any secret Vault stores (its default request limit is 32 MiB). */
export const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** JSON when the answer is JSON (Vault's errors are), the text otherwise, undefined when empty.
 *  Numbers keep their text (src/providers/json-text.ts): a KV value is read, and a pushed
 *  map written back, as Vault holds it. */
function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return parseJsonText(text);
  } catch {
    return text;
  }
}

/** The egress module's own failures as node-vault's transport errors (a `code`). */
function transportError(err: unknown): unknown {
  if (!(err instanceof EgressError)) return err;
  const code = err.reason ?? { Timeout: 'ETIMEDOUT', Unreachable: 'ENOTFOUND', Forbidden: 'ERR_EGRESS_REFUSED', Unknown: 'ERR_EGRESS' }[err.code];
  return Object.assign(new Error(err.message), { code });
}

/** One call, following Vault's standby redirects (src/egress/http.ts: never from https to
 *  http, and under a policy only within the server's origin: the token travels in a header).
 *  Rejects with an Error whose `code` names the failure (ETIMEDOUT, ECONNREFUSED, a TLS code,
 *  ERR_EGRESS_REFUSED, …) for the provider's error mapping. */
export async function send(req: TransportRequest, opts: TransportOptions): Promise<TransportResponse> {
  const first = new URL(req.uri);
  const headers: Record<string, string> = { Accept: 'application/json', ...req.headers };
  const body = req.json === undefined ? undefined : Buffer.from(stringifyJson(req.json));
  if (body) headers['Content-Type'] ??= 'application/json';
  try {
    const res = await httpCall({
      url: first, method: req.method, headers, ...(body ? { body } : {}),
      ca: opts.ca, cert: opts.cert, key: opts.key, timeoutMs: opts.timeoutMs, maxBytes: MAX_RESPONSE_BYTES,
      ...(opts.policy ? { policy: opts.policy } : {}), redirects: REDIRECTS,
    });
    return { statusCode: res.status, body: parseBody(res.body.toString('utf8')), request: { path: first.pathname } };
  } catch (err) {
    throw transportError(err);
  }
}

/** The object node-vault's `request-promise` option expects. */
export function nodeVaultTransport(opts: TransportOptions): { defaults(): (req: TransportRequest) => Promise<TransportResponse> } {
  return { defaults: () => (req) => send(req, opts) };
}
