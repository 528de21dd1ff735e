// A stand-in for Akeyless's API on 127.0.0.1 (a stand-in, not Akeyless): the subset of the
// documented V2 REST API (docs.akeyless.io/reference) that ESO's Akeyless store calls and ESI
// follows, every call a JSON POST: /auth ({access-id, access-type: access_key, access-key}, or
// {access-id, access-type: k8s, k8s-auth-config-name, k8s-service-account-token: base64 JWT})
// → {token}; /describe-item {name, token} → {item_name, item_type, item_tags, last_version};
// /get-secret-value {names, version, token} → {<name>: value}; /get-rotated-secret-value →
// {value: {…}}; /get-dynamic-secret-value → the credentials object; /list-items {filter, type,
// tag, token} → {items: [{item_name, item_type}]}; the writes of ESO's PushSecret:
// /create-secret {name, value, tags} (409 when it exists), /update-secret-val {name, value} (a
// new version), /delete-item {name}. An unknown token is 401, an unknown item 404, errors as
// {error} bodies. `items` is the live store: a test reads the pushed values from it.
import type { ServerResponse } from 'node:http';
import { json, serve, type StandIn } from './http.js';

export type AkeylessItem =
  | { type: 'STATIC_SECRET'; versions: string[]; tags?: string[] }
  | { type: 'ROTATED_SECRET' | 'DYNAMIC_SECRET'; value: Record<string, unknown>; tags?: string[] };

export interface AkeylessAccess {
  accessKey?: { accessId: string; accessKey: string };
  k8s?: { accessId: string; confName: string; jwt: string };
}

export async function startAkeylessStandIn(t: { teardown(fn: () => unknown): void }, access: AkeylessAccess, items: Record<string, AkeylessItem>): Promise<StandIn & { auths: number }> {
  const tokens = new Set<string>();
  const state = { auths: 0 };
  const fail = (res: ServerResponse, status: number, error: string) => json(res, status, { error });
  const authenticate = (b: Record<string, unknown>, res: ServerResponse) => {
    const k = access.accessKey;
    const s = access.k8s;
    const byKey = k && b['access-type'] === 'access_key' && b['access-id'] === k.accessId && b['access-key'] === k.accessKey;
    const byK8s = s && b['access-type'] === 'k8s' && b['access-id'] === s.accessId && b['k8s-auth-config-name'] === s.confName &&
      b['k8s-service-account-token'] === Buffer.from(s.jwt).toString('base64');
    if (!byKey && !byK8s) return fail(res, 401, 'failed to authenticate: access denied');
    state.auths++;
    const token = `t-${state.auths}`;
    tokens.add(token);
    json(res, 200, { token, expiration: 'in 60 minutes' });
  };
  const value = (p: string, b: Record<string, unknown>, res: ServerResponse) => {
    const name = String(p === '/get-secret-value' ? (b.names as string[])[0] : (b.names ?? b.name));
    const item = items[name];
    if (!item) return fail(res, 404, `item ${name} not found`);
    if (p === '/describe-item') return json(res, 200, { item_name: name, item_type: item.type, item_tags: item.tags ?? [], last_version: item.type === 'STATIC_SECRET' ? item.versions.length : 0 });
    if (p === '/get-secret-value' && item.type === 'STATIC_SECRET') {
      const v = Number(b.version ?? 0);
      const text = v === 0 ? item.versions.at(-1) : item.versions[v - 1];
      return text === undefined ? fail(res, 404, `version ${v} not found`) : json(res, 200, { [name]: text });
    }
    if (p === '/get-rotated-secret-value' && item.type === 'ROTATED_SECRET') return json(res, 200, { value: item.value });
    if (p === '/get-dynamic-secret-value' && item.type === 'DYNAMIC_SECRET') return json(res, 200, item.value);
    fail(res, 400, `wrong item type for ${p}`);
  };
  const srv = await serve(t, (req, res, body) => {
    const p = new URL(req.url!, 'http://x').pathname;
    let b: Record<string, unknown> = {};
    try {
      b = JSON.parse(body || '{}') as Record<string, unknown>;
    } catch { /* an empty body */ }
    if (req.method !== 'POST') return fail(res, 405, 'unknown command');
    if (p === '/auth') return authenticate(b, res);
    if (!tokens.has(String(b.token))) return fail(res, 401, 'authentication token is invalid or expired');
    if (p === '/create-secret') {
      const name = String(b.name);
      if (items[name]) return fail(res, 409, `item ${name} already exists`);
      items[name] = { type: 'STATIC_SECRET', versions: [String(b.value)], tags: (b.tags as string[] | undefined) ?? [] };
      return json(res, 200, { name });
    }
    if (p === '/update-secret-val' || p === '/delete-item') {
      const name = String(b.name);
      const item = items[name];
      if (!item) return fail(res, 404, `item ${name} not found`);
      if (p === '/delete-item') {
        delete items[name];
        return json(res, 200, { item_name: name });
      }
      if (item.type !== 'STATIC_SECRET') return fail(res, 400, `wrong item type for ${p}`);
      item.versions.push(String(b.value));
      return json(res, 200, { name });
    }
    if (p === '/list-items') {
      const filter = String(b.filter ?? '');
      const types = (b.type as string[] | undefined)?.map((x) => x.toUpperCase().replace('-', '_'));
      const found = Object.entries(items).filter(([n, i]) => n.startsWith(filter) && (!types || types.includes(i.type)) && (!b.tag || i.tags?.includes(String(b.tag))));
      return json(res, 200, { items: found.map(([n, i]) => ({ item_name: n, item_type: i.type })) });
    }
    value(p, b, res);
  });
  return Object.defineProperties(srv, { auths: { get: () => state.auths } }) as StandIn & { auths: number };
}
