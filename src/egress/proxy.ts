// Outbound proxies, as the environment names them: HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and
// NO_PROXY (either case), with the matching rules curl and Go's net/http use (proxy-from-env).
// Every provider transport that opens its own connections asks here (docs/install.md, "Behind
// an egress proxy"); the Azure and gRPC clients read the same variables themselves. The proxy
// agents are loaded only when a proxy applies: a cluster without one pays nothing.
import type { Agent } from 'node:http';
import type { AgentOptions } from 'node:https';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { checkServerIdentity, type PeerCertificate } from 'node:tls';
import { getProxyForUrl } from 'proxy-from-env';
import type * as HttpsProxy from 'https-proxy-agent';
import type * as HttpProxy from 'http-proxy-agent';

const require = createRequire(import.meta.url);

/** The proxy URL for `target`, or undefined to connect directly (none set, or NO_PROXY). */
export function proxyFor(target: URL | string): string | undefined {
  return getProxyForUrl(String(target)) || undefined;
}

/** An agent that reaches `target` through its proxy (CONNECT for https, a forwarding proxy
 *  for http), or undefined when no proxy applies. Through a CONNECT tunnel the TLS session is
 *  still end to end with the target: the caller passes the options that verify the target
 *  (`ca`, `cert`, `key`, `servername`) with each request, as for a direct connection; the
 *  proxy agent uses the request's options for the target and its own only for the proxy. */
export function proxyAgent(target: URL | string, pool: Pick<AgentOptions, 'keepAlive' | 'maxSockets'> = {}): Agent | undefined {
  const proxy = proxyFor(target);
  if (!proxy) return undefined;
  if (new URL(String(target)).protocol === 'https:') {
    const { HttpsProxyAgent } = require('https-proxy-agent') as typeof HttpsProxy;
    return new HttpsProxyAgent(proxy, { keepAlive: pool.keepAlive ?? false, ...(pool.maxSockets ? { maxSockets: pool.maxSockets } : {}) });
  }
  const { HttpProxyAgent } = require('http-proxy-agent') as typeof HttpProxy;
  return new HttpProxyAgent(proxy, { keepAlive: pool.keepAlive ?? false });
}

/** For an https target addressed by IP, through a tunnel: the tunnel's TLS socket has no host
 *  to check the certificate against (the proxy agent drops it and sets a server name only for
 *  names), so the caller passes this with the request to check the target's IP as a direct
 *  connection would. Empty for names and for direct connections. */
export function tunnelIdentity(target: URL | string): { checkServerIdentity?: (host: string, cert: PeerCertificate) => Error | undefined } {
  const url = new URL(String(target));
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (url.protocol !== 'https:' || !isIP(host) || !proxyFor(url)) return {};
  return { checkServerIdentity: (_host, cert) => checkServerIdentity(host, cert) };
}
