// A stand-in for CyberArk Conjur's REST API on 127.0.0.1 (a stand-in, not Conjur): the subset of
// the documented API (Conjur Open Source REST API, v1.x) that ESO's Conjur store calls and ESI
// follows. POST /authn/{account}/{login}/authenticate (body: the API key) and POST
// /authn-jwt/{service-id}/{account}[/{host-id}]/authenticate (body `jwt=<token>`) → an access
// token, base64 when asked with `Accept-Encoding: base64` (else the JSON token); GET
// /secrets/{account}/variable/{id} → the raw value; GET /secrets?variable_ids=a:variable:x,…
// → {id: value}; GET /resources/{account}?kind=variable&limit&offset → [{id, annotations}].
// Reads need `Authorization: Token token="<base64 token>"` (401 otherwise); an unknown
// variable is 404 (in a batch, the whole batch), one the identity may not read 403.
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { json, serve, type StandIn } from './http.js';

export interface ConjurVariable {
  value: string;
  annotations?: Record<string, string>;
}

export interface ConjurIdentities {
  apiKey?: { login: string; key: string };
  jwt?: { serviceId: string; hostId?: string; token: string };
}

export interface ConjurStandIn extends StandIn {
  authentications: number;
  /** Forgets every token issued (as if they expired). */
  expireTokens(): void;
}

export async function startConjurStandIn(t: { teardown(fn: () => unknown): void }, account: string, ids: ConjurIdentities, variables: Record<string, ConjurVariable>, hidden: string[] = []): Promise<ConjurStandIn> {
  const tokens = new Set<string>();
  const state = { authentications: 0 };
  const text = (res: ServerResponse, status: number, body: string) => void res.writeHead(status, { 'Content-Type': 'text/plain' }).end(body);
  const fail = (res: ServerResponse, status: number, message: string) => json(res, status, { error: { code: status === 401 ? 'unauthorized' : 'not_found', message } });
  const issue = (res: ServerResponse, base64: boolean) => {
    state.authentications++;
    const token = JSON.stringify({ protected: 'eyJhbGciOiJjb25qdXIub3JnL3Nsb3NpbG8vdjIifQ==', payload: randomBytes(24).toString('base64'), signature: randomBytes(16).toString('hex') });
    const b64 = Buffer.from(token).toString('base64');
    tokens.add(b64);
    if (base64) return void res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Encoding': 'base64' }).end(b64);
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(token);
  };
  const authenticate = (parts: string[], body: string, res: ServerResponse, base64: boolean) => {
    const [kind, ...rest] = parts;
    if (kind === 'authn' && rest.length === 3 && rest[0] === account && ids.apiKey && rest[1] === ids.apiKey.login && body === ids.apiKey.key) return issue(res, base64);
    if (kind === 'authn-jwt' && ids.jwt && rest[0] === ids.jwt.serviceId && rest[1] === account && rest.length === (ids.jwt.hostId ? 4 : 3) && (!ids.jwt.hostId || rest[2] === ids.jwt.hostId)) {
      if (new URLSearchParams(body).get('jwt') === ids.jwt.token) return issue(res, base64);
    }
    text(res, 401, 'Unauthorized');
  };
  const read = (name: string) => (hidden.includes(name) ? 403 : variables[name] ? 200 : 404);
  const one = (name: string, res: ServerResponse) => {
    const status = read(name);
    if (status !== 200) return fail(res, status, `variable ${name} not available`);
    res.writeHead(200, { 'Content-Type': 'application/octet-stream' }).end(variables[name]!.value);
  };
  const batch = (u: URL, res: ServerResponse) => {
    const out: Record<string, string> = {};
    for (const id of (u.searchParams.get('variable_ids') ?? '').split(',').filter(Boolean)) {
      const [acc, kind, ...name] = id.split(':');
      const status = acc === account && kind === 'variable' ? read(name.join(':')) : 404;
      if (status !== 200) return fail(res, status, `variable ${id} not available`);
      out[id] = variables[name.join(':')]!.value;
    }
    json(res, 200, out);
  };
  const list = (u: URL, res: ServerResponse) => {
    const limit = Number(u.searchParams.get('limit') ?? 1000);
    const offset = Number(u.searchParams.get('offset') ?? 0);
    const all = Object.keys(variables).filter((n) => !hidden.includes(n)).sort();
    json(res, 200, all.slice(offset, offset + limit).map((n) => ({
      id: `${account}:variable:${n}`, owner: `${account}:policy:root`,
      annotations: Object.entries(variables[n]!.annotations ?? {}).map(([name, value]) => ({ name, value, policy: `${account}:policy:root` })),
    })));
  };
  const srv = await serve(t, (req, res, body) => {
    const u = new URL(req.url!, 'http://x');
    const parts = u.pathname.split('/').slice(1).map(decodeURIComponent);
    if (req.method === 'POST' && parts.at(-1) === 'authenticate') return authenticate(parts, body, res, req.headers['accept-encoding'] === 'base64');
    const auth = /^Token token="([^"]+)"$/.exec(req.headers.authorization ?? '')?.[1];
    if (!auth || !tokens.has(auth)) return text(res, 401, 'Unauthorized');
    if (req.method !== 'GET') return fail(res, 404, 'no such route');
    if (parts[0] === 'secrets' && parts.length === 4 && parts[1] === account && parts[2] === 'variable') return one(parts[3]!, res);
    if (u.pathname === '/secrets') return batch(u, res);
    if (parts[0] === 'resources' && parts[1] === account && parts.length === 2 && u.searchParams.get('kind') === 'variable') return list(u, res);
    fail(res, 404, 'no such route');
  });
  return Object.defineProperties(srv, { authentications: { get: () => state.authentications }, expireTokens: { value: () => tokens.clear() } }) as ConjurStandIn;
}
