// `spec.provider.grpc`: where the plugin listens and which Secret holds the TLS material.
//
//   url: host:port           TLS (the default)
//        https://host[:port] TLS, port 443 by default
//        http://host[:port]  plaintext, only when written so explicitly (port 80 by default)
//   tlsSecretRef: {name, namespace?}   a Secret with ca.crt and/or tls.crt + tls.key
import type { GRPCProvider } from '../../api/types.js';
import { fieldProblems, fieldReferences, type FieldRule } from '../fields.js';
import type { StoreReferences } from '../types.js';
import { isObject } from '../../json-object.js';

/** The plugin's url is not a URL rule of the table: `host:port` is its default form (above). */
export const FIELDS: readonly FieldRule[] = [
  { path: 'tlsSecretRef', kind: 'secret' },
];

export interface Endpoint {
  /** The gRPC target, `host:port` (IPv6 hosts in brackets). */
  target: string;
  tls: boolean;
  /** The url as the store wrote it, for messages. */
  display: string;
}

const HOST = String.raw`(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)`;
const BARE = new RegExp(`^${HOST}:(\\d{1,5})$`);

function port(text: string | undefined, fallback: number): number | undefined {
  if (text === undefined || text === '') return fallback;
  const n = Number(text);
  return Number.isInteger(n) && n >= 1 && n <= 65535 ? n : undefined;
}

/** Parses the url; returns a problem (string) when it is not one of the accepted forms. */
export function parseUrl(url: unknown): Endpoint | string {
  if (typeof url !== 'string' || url.trim() === '') return 'grpc.url must be set: the address of the SecretsServer, e.g. plugin.esi-system.svc:50051';
  const u = url.trim();
  const bare = BARE.exec(u);
  if (bare) {
    const p = port(bare[2], 0);
    return p ? { target: `${bare[1]}:${p}`, tls: true, display: u } : `grpc.url "${u}": port must be 1-65535`;
  }
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(u)?.[1]?.toLowerCase();
  if (scheme !== 'https' && scheme !== 'http') {
    return scheme
      ? `grpc.url "${u}": scheme "${scheme}" is not supported (use host:port, https://host:port, or http://host:port for plaintext)`
      : `grpc.url "${u}" is not host:port, https://host:port or http://host:port`;
  }
  let parsed: URL;
  try {
    parsed = new URL(u);
  } catch {
    return `grpc.url "${u}" is not a valid URL`;
  }
  if (parsed.username || parsed.password || parsed.search || parsed.hash || (parsed.pathname !== '/' && parsed.pathname !== '')) {
    return `grpc.url "${u}": only scheme, host and port are allowed (no path, query or credentials)`;
  }
  const tls = scheme === 'https';
  const p = port(parsed.port, tls ? 443 : 80);
  if (!p || !parsed.hostname) return `grpc.url "${u}": invalid host or port`;
  return { target: `${parsed.hostname}:${p}`, tls, display: u };
}

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['grpc must be an object with url and optionally tlsSecretRef'];
  const s = spec as Partial<GRPCProvider>;
  const problems: string[] = [];
  const endpoint = parseUrl(s.url);
  if (typeof endpoint === 'string') problems.push(endpoint);
  problems.push(...fieldProblems('grpc', FIELDS, spec));
  if (s.tlsSecretRef !== undefined && typeof endpoint !== 'string' && !endpoint.tls) {
    problems.push(`grpc.url "${endpoint.display}" is plaintext (http://) but tlsSecretRef is set: use https:// or host:port, or remove tlsSecretRef`);
  }
  return problems;
}

/** The Secret the agent mounts for the channel's TLS material. */
export function references(spec: unknown): StoreReferences {
  return fieldReferences('grpc', FIELDS, spec);
}
