// One HTTP call to an address a store spec names: bounded in time (the deadline covers
// lookup, connect, TLS, every redirect and the whole body) and size, TLS always verified,
// every socket checked against the caller's policy (src/egress/connect.ts). Redirects are
// followed only when the caller asks (Vault's standby redirects), at most a few, never from
// https to http, and under a policy never to another origin (the token travels in a header);
// each hop's address is checked like the first.
// Through an outbound proxy (HTTPS_PROXY/HTTP_PROXY/NO_PROXY, src/egress/proxy.ts) the
// address is checked as resolved here, but the proxy connects by name: where a proxy carries
// the calls, it is the operator's egress control that governs what they reach.
import type http from 'node:http';
import https from 'node:https';
import nodeHttp from 'node:http';
import { proxyAgent, tunnelIdentity } from './proxy.js';
import { checkedAgent, EgressError, resolveChecked } from './connect.js';
import type { AddressPolicy } from './policy.js';

/** Larger than any value the HTTP-reached stores hold (1Password, Doppler, a webhook's answer). */
const MAX_HTTP_RESPONSE_BYTES = 4 * 1024 * 1024;

export interface HttpCall {
  url: URL;
  method: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** PEM bundle that verifies the server (the system roots when absent); client cert and key. */
  ca?: string;
  cert?: string;
  key?: string;
  timeoutMs: number;
  maxBytes?: number;
  /** Absent: any address (the agent, from the pod's own network position). */
  policy?: AddressPolicy;
  signal?: AbortSignal;
  /** Follow these redirect statuses, at most `max` hops. Default: none followed. */
  redirects?: { statuses: readonly number[]; max: number };
}

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** Where the answer came from (after redirects). */
  url: URL;
}

const abortReason = (signal: AbortSignal) => (signal.reason instanceof EgressError ? signal.reason : new EgressError('Timeout', 'the caller\'s deadline passed'));

function nextHop(from: URL, location: string, policy: AddressPolicy | undefined): URL {
  const next = new URL(location, from);
  if (next.protocol !== 'https:' && (next.protocol !== 'http:' || from.protocol === 'https:')) {
    throw new EgressError('Forbidden', `refused a redirect from ${from.protocol} to ${next.protocol}`, 'ERR_REDIRECT_REFUSED');
  }
  if (policy && next.origin !== from.origin) {
    throw new EgressError('Forbidden', `refused a redirect from ${from.origin} to another origin (${next.origin})`, 'ERR_REDIRECT_REFUSED');
  }
  return next;
}

/** The proxy's agent (the address checked here first), or one of checked sockets that
 *  lives for this request only (`own`). */
async function agentFor(c: HttpCall, url: URL): Promise<{ agent: http.Agent | false; own: boolean }> {
  const proxied = proxyAgent(url);
  if (proxied) {
    if (c.policy) await resolveChecked(url.hostname, c.policy);
    return { agent: proxied, own: false };
  }
  const checked = checkedAgent(url, c.policy);
  return checked ? { agent: checked, own: true } : { agent: false, own: false };
}

async function once(c: HttpCall, url: URL, body: Buffer | undefined, signal: AbortSignal): Promise<HttpAnswer> {
  const max = c.maxBytes ?? MAX_HTTP_RESPONSE_BYTES;
  const headers: Record<string, string | number> = { ...c.headers };
  if (body) headers['Content-Length'] = body.length;
  const { agent, own } = await agentFor(c, url);
  const options: https.RequestOptions = {
    method: c.method, headers, signal, agent,
    ...(url.protocol === 'https:' ? { ca: c.ca, cert: c.cert, key: c.key, rejectUnauthorized: true, ...tunnelIdentity(url) } : {}),
  };
  try {
    return await new Promise<HttpAnswer>((resolve, reject) => {
      const req = (url.protocol === 'https:' ? https : nodeHttp).request(url, options, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > max) res.destroy(new EgressError('Unknown', `the answer is larger than ${max} bytes`, 'ERR_RESPONSE_TOO_LARGE'));
          else chunks.push(chunk);
        });
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), url }));
      });
      req.on('error', reject);
      req.end(body);
    });
  } finally {
    if (own && agent) agent.destroy();
  }
}

/** Sends one request (and the redirects the caller follows); resolves with the answer
 *  whatever its status. Rejects with an EgressError (policy, size, deadline, redirect) or the
 *  socket/TLS error (its `code` is mapped by the provider's error map). */
export async function httpCall(c: HttpCall): Promise<HttpAnswer> {
  if (c.url.protocol !== 'https:' && c.url.protocol !== 'http:') throw new EgressError('Unknown', `unsupported URL scheme ${c.url.protocol}`);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new EgressError('Timeout', `no complete answer within ${c.timeoutMs} ms`, 'ETIMEDOUT')), c.timeoutMs);
  const onCaller = () => controller.abort(abortReason(c.signal!));
  c.signal?.addEventListener('abort', onCaller, { once: true });
  // Encoded once: a redirect resends the same bytes.
  const body = c.body === undefined ? undefined : Buffer.from(c.body);
  try {
    if (c.signal?.aborted) throw abortReason(c.signal);
    let url = c.url;
    for (let hop = 0; ; hop++) {
      const answer = await once(c, url, body, controller.signal).catch((err: unknown) => {
        throw controller.signal.aborted ? controller.signal.reason : err;
      });
      const location = answer.headers.location;
      if (!c.redirects || !c.redirects.statuses.includes(answer.status) || !location) return answer;
      if (hop >= c.redirects.max) throw new EgressError('Unknown', `more than ${c.redirects.max} redirects`, 'ERR_TOO_MANY_REDIRECTS');
      url = nextHop(url, location, c.policy);
    }
  } finally {
    clearTimeout(timer);
    c.signal?.removeEventListener('abort', onCaller);
  }
}
