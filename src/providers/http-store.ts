// One HTTP call to a store reached by its documented HTTP API (webhook, onepassword,
// doppler, bitwardensecretsmanager, infisical, akeyless, conjur): bounded in time (the deadline covers connect, TLS and the whole body) and
// size, no redirects followed, TLS always verified, and the address the name resolves to
// checked against the caller's AddressPolicy before connecting. The checked address is
// the one connected to (a `lookup` that answers with it), so a name cannot resolve to a
// public address for the check and a private one for the connection.
// Why: a store spec chooses the URL, and the reconciler's network position (the cloud
// metadata server, the cluster's private services) is not the tenant's to use;
// docs/decisions/0056-saas-stores-over-documented-http-apis.md.
// Through an outbound proxy (HTTPS_PROXY/HTTP_PROXY/NO_PROXY, src/providers/proxy.ts) the
// address is still checked as resolved here, but the proxy connects by name: where a proxy
// carries the calls, it is the operator's egress control that governs what they reach.
import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import type { CAProvider } from '../api/types.js';
import { proxyAgent, tunnelIdentity } from './proxy.js';
import { ProviderError, type AddressPolicy, type ProviderContext } from './types.js';

const PEM = '-----BEGIN CERTIFICATE-----';

/** Larger than any value these stores hold (1Password, Doppler and a webhook's answer). */
export const MAX_HTTP_RESPONSE_BYTES = 4 * 1024 * 1024;

export interface HttpCall {
  url: URL;
  method: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** PEM bundle that verifies the server; the system roots when absent. */
  ca?: string;
  timeoutMs: number;
  maxBytes?: number;
  policy?: AddressPolicy;
  signal?: AbortSignal;
}

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** A failed call, value-free: the code for the error map and what happened. */
export class HttpCallError extends Error {
  override name = 'HttpCallError';
  constructor(
    readonly code: 'Unreachable' | 'Timeout' | 'Forbidden' | 'Unknown',
    message: string,
  ) {
    super(message);
  }
}

function blockList(cidrs: [string, number, 'ipv4' | 'ipv6'][]): BlockList {
  const b = new BlockList();
  for (const [net, prefix, family] of cidrs) b.addSubnet(net, prefix, family);
  return b;
}

/** Link-local (the cloud metadata servers live there: 169.254.169.254, fd00:ec2::254 is ULA
 *  but AWS's IPv6 IMDS, listed here too), unspecified and multicast: never a store. */
const NEVER = blockList([
  ['169.254.0.0', 16, 'ipv4'], ['0.0.0.0', 8, 'ipv4'], ['224.0.0.0', 4, 'ipv4'], ['240.0.0.0', 4, 'ipv4'],
  ['fe80::', 10, 'ipv6'], ['::', 128, 'ipv6'], ['ff00::', 8, 'ipv6'], ['fd00:ec2::254', 128, 'ipv6'],
]);

/** Loopback and private ranges: the cluster's own network. */
const PRIVATE = blockList([
  ['127.0.0.0', 8, 'ipv4'], ['10.0.0.0', 8, 'ipv4'], ['172.16.0.0', 12, 'ipv4'], ['192.168.0.0', 16, 'ipv4'],
  ['100.64.0.0', 10, 'ipv4'], ['198.18.0.0', 15, 'ipv4'],
  ['::1', 128, 'ipv6'], ['fc00::', 7, 'ipv6'],
]);

/** Why `address` may not be called under `policy`, or undefined. IPv4-mapped IPv6
 *  addresses are judged as the IPv4 address they carry. */
export function addressProblem(address: string, policy: AddressPolicy): string | undefined {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  const ip = mapped ?? address;
  const family = isIP(ip) === 6 ? 'ipv6' : 'ipv4';
  if (NEVER.check(ip, family)) return `${ip} is a link-local, unspecified or multicast address (cloud metadata servers live there); stores never call it`;
  if (!policy.privateAddresses && PRIVATE.check(ip, family)) {
    return `${ip} is a loopback or private address; ${policy.privateHint ?? 'this store may not call it'}`;
  }
  return undefined;
}

/** Resolves `host` and checks every address; returns the first, which is then connected to. */
async function resolveChecked(host: string, policy: AddressPolicy): Promise<{ address: string; family: number }> {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const found = isIP(bare) ? [{ address: bare, family: isIP(bare) }] : await dnsLookup(bare, { all: true, verbatim: true });
  if (found.length === 0) throw new HttpCallError('Unreachable', `cannot resolve ${host}`);
  for (const a of found) {
    const problem = addressProblem(a.address, policy);
    if (problem) throw new HttpCallError('Forbidden', `refused to call ${host}: ${problem}`);
  }
  return found[0]!;
}

/** Checks, without a request, that `url`'s host resolves only to addresses `policy` allows. */
export async function checkAddress(url: URL, policy: AddressPolicy | undefined): Promise<void> {
  if (policy) await resolveChecked(url.hostname, policy);
}

const abortReason = (signal: AbortSignal) => (signal.reason instanceof HttpCallError ? signal.reason : new HttpCallError('Timeout', 'the caller\'s deadline passed'));

/** Sends one request; resolves with the answer whatever its status. Rejects with an
 *  HttpCallError (policy, size, deadline) or the socket/TLS error (its `code` is mapped by
 *  src/providers/errors.ts transportFailure). */
export async function httpCall(c: HttpCall): Promise<HttpAnswer> {
  if (c.url.protocol !== 'https:' && c.url.protocol !== 'http:') throw new HttpCallError('Unknown', `unsupported URL scheme ${c.url.protocol}`);
  const max = c.maxBytes ?? MAX_HTTP_RESPONSE_BYTES;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new HttpCallError('Timeout', `no complete answer within ${c.timeoutMs} ms`)), c.timeoutMs);
  const onCaller = () => controller.abort(abortReason(c.signal!));
  c.signal?.addEventListener('abort', onCaller, { once: true });
  try {
    if (c.signal?.aborted) throw abortReason(c.signal);
    let lookup: LookupFunction | undefined;
    const proxied = proxyAgent(c.url);
    if (c.policy) {
      const pinned = await resolveChecked(c.url.hostname, c.policy);
      lookup = (_host, opts, cb) => {
        if ((opts as { all?: boolean }).all) (cb as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [pinned]);
        else cb(null, pinned.address, pinned.family);
      };
    }
    const body = c.body === undefined ? undefined : Buffer.from(c.body);
    const headers: Record<string, string | number> = { ...c.headers };
    if (body) headers['Content-Length'] = body.length;
    const options: https.RequestOptions = {
      method: c.method, headers, signal: controller.signal, agent: proxied ?? false, ...(lookup && !proxied ? { lookup } : {}),
      ...(c.url.protocol === 'https:' ? { ca: c.ca, rejectUnauthorized: true, ...tunnelIdentity(c.url) } : {}),
    };
    return await new Promise<HttpAnswer>((resolve, reject) => {
      const req = (c.url.protocol === 'https:' ? https : http).request(c.url, options, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > max) res.destroy(new HttpCallError('Unknown', `the answer is larger than ${max} bytes`));
          else chunks.push(chunk);
        });
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end(body);
    }).catch((err: unknown) => {
      throw controller.signal.aborted ? controller.signal.reason : err;
    });
  } finally {
    clearTimeout(timer);
    c.signal?.removeEventListener('abort', onCaller);
  }
}

/** ProviderError code for an HTTP status of a store's API. */
export function statusCode(status: number): 'AuthFailed' | 'Forbidden' | 'NotFound' | 'Unreachable' | 'Unknown' {
  if (status === 401) return 'AuthFailed';
  if (status === 403) return 'Forbidden';
  if (status === 404) return 'NotFound';
  if (status === 429 || status >= 500) return 'Unreachable';
  return 'Unknown';
}

/** The classifier of src/providers/errors.ts for HttpCallError. */
export function classifyHttp(err: unknown): { code: ProviderError['code']; message: string } | undefined {
  return err instanceof HttpCallError ? { code: err.code, message: err.message } : undefined;
}

/** The PEM bundle of a store's `caBundle` (base64 of PEM, as ESO; a raw PEM is accepted
 *  too) and `caProvider` (a Secret key read like a credential, or a ConfigMap key). */
export async function storeCa(ctx: ProviderContext, field: string, caBundle?: string, caProvider?: CAProvider): Promise<string | undefined> {
  const parts: string[] = [];
  if (caBundle) parts.push(caBundle.includes(PEM) ? caBundle : Buffer.from(caBundle, 'base64').toString('utf8'));
  if (caProvider) {
    const ref = { name: caProvider.name, key: caProvider.key ?? '', ...(caProvider.namespace ? { namespace: caProvider.namespace } : {}) };
    const what = `${field}.caProvider (${caProvider.type} "${ref.name}", key "${ref.key}")`;
    if (caProvider.type === 'ConfigMap' && !ctx.readConfigMap) throw new ProviderError('InvalidSpec', ctx.storeId, `${what} cannot be read here; use caBundle or a caProvider of type Secret`);
    const raw = caProvider.type === 'ConfigMap' ? await ctx.readConfigMap!(ref) : await ctx.readCredential(ref);
    parts.push(Buffer.from(raw).toString('utf8'));
  }
  if (parts.length === 0) return undefined;
  if (!parts.every((p) => p.includes(PEM))) throw new ProviderError('InvalidSpec', ctx.storeId, `${field}.caBundle / caProvider holds no PEM certificate`);
  return parts.join('\n');
}
