// node-vault's HTTP transport, on node:http(s). node-vault takes its transport from its
// `request-promise` option (an object whose defaults() returns the request function); without
// it node-vault sends through axios, which was ~40 % of the agent's CPU per refresh and
// ~10 MiB of its private memory (docs/decisions/0050-vault-transport.md). node-vault still
// builds every request (paths, token and namespace headers) and judges every answer
// (handleVaultResponse, ApiResponseError); this module only moves bytes.
import http from 'node:http';
import https from 'node:https';
import { parseJsonText, stringifyJson } from '../json-text.js';
import { proxyAgent, tunnelIdentity } from '../proxy.js';

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
}

/** Vault redirects a client from a standby node to the active one with 307 (308 alike). */
const REDIRECTS = new Set([307, 308]);
const MAX_REDIRECTS = 5;
/** Larger than any secret Vault stores (its default request limit is 32 MiB). */
export const MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

function codedError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code });
}

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

// eslint-disable-next-line max-params -- one hop of one call: where, what, with which TLS, until when
function once(url: URL, req: TransportRequest, body: Buffer | undefined, tls: TransportOptions, signal: AbortSignal): Promise<{ status: number; location?: string; text: string }> {
  const headers: Record<string, string | number> = { Accept: 'application/json', ...req.headers };
  if (body) {
    headers['Content-Type'] ??= 'application/json';
    headers['Content-Length'] = body.length;
  }
  const verify = url.protocol === 'https:' ? { ca: tls.ca, cert: tls.cert, key: tls.key, rejectUnauthorized: true, ...tunnelIdentity(url) } : {};
  const options: https.RequestOptions = {
    method: req.method, headers, signal,
    // One connection per call, as node-vault's https.Agent did when a CA was set; through the
    // environment's proxy when one applies to this address (src/providers/proxy.ts).
    agent: proxyAgent(url) ?? false,
    ...verify,
  };
  return new Promise((resolve, reject) => {
    const r = (url.protocol === 'https:' ? https : http).request(url, options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_RESPONSE_BYTES) res.destroy(codedError('ERR_RESPONSE_TOO_LARGE', `answer larger than ${MAX_RESPONSE_BYTES} bytes`));
        else chunks.push(c);
      });
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, text: Buffer.concat(chunks).toString('utf8') }));
    });
    r.on('error', reject);
    r.end(body);
  });
}

/** One call, following Vault's standby redirects; never downgrades https to http (the
 *  token travels in a header). Rejects with an Error whose `code` names the failure
 *  (ETIMEDOUT, ECONNREFUSED, a TLS code, …) for the provider's error mapping. */
export async function send(req: TransportRequest, opts: TransportOptions): Promise<TransportResponse> {
  const first = new URL(req.uri);
  // Encoded once: a redirect resends the same bytes.
  const body = req.json === undefined ? undefined : Buffer.from(stringifyJson(req.json));
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(codedError('ETIMEDOUT', `no answer within ${opts.timeoutMs} ms`)), opts.timeoutMs);
  try {
    let url = first;
    for (let hop = 0; ; hop++) {
      const res = await once(url, req, body, opts, controller.signal).catch((err: unknown) => {
        throw controller.signal.aborted ? controller.signal.reason : err;
      });
      if (!REDIRECTS.has(res.status) || !res.location) return { statusCode: res.status, body: parseBody(res.text), request: { path: first.pathname } };
      if (hop >= MAX_REDIRECTS) throw codedError('ERR_TOO_MANY_REDIRECTS', `more than ${MAX_REDIRECTS} redirects`);
      const next = new URL(res.location, url);
      if (next.protocol !== 'https:' && (next.protocol !== 'http:' || url.protocol === 'https:')) {
        throw codedError('ERR_REDIRECT_REFUSED', `refused a redirect from ${url.protocol} to ${next.protocol}`);
      }
      url = next;
    }
  } finally {
    clearTimeout(timer);
  }
}

/** The object node-vault's `request-promise` option expects. */
export function nodeVaultTransport(opts: TransportOptions): { defaults(): (req: TransportRequest) => Promise<TransportResponse> } {
  return { defaults: () => (req) => send(req, opts) };
}
