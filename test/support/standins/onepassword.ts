// A stand-in for a 1Password Connect server on 127.0.0.1: the subset of the documented
// Connect REST API ESI calls (API spec 1.8.1, developer.1password.com/docs/connect/api-reference):
// GET /v1/vaults?filter=name eq "…", GET /v1/vaults/{v}/items[?filter=title eq "…"],
// GET/PUT/DELETE /v1/vaults/{v}/items/{i}, POST /v1/vaults/{v}/items,
// GET /v1/vaults/{v}/items/{i}/files/{f}/content. Bearer token auth (401 otherwise);
// errors as Connect answers them ({status, message}). In-memory, consistent.
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { json, serve, type StandIn } from './http.js';

export interface StandInItem {
  id?: string;
  title: string;
  category?: string;
  fields?: { id?: string; label?: string; value?: string; type?: string }[];
  files?: { id?: string; name: string; content: string }[];
  sections?: unknown[];
}

interface Stored {
  id: string;
  title: string;
  category: string;
  vault: { id: string };
  fields: NonNullable<StandInItem['fields']>;
  files: { id: string; name: string; size: number; content_path: string }[];
  sections?: unknown[];
}

export interface OnePasswordStandIn extends StandIn {
  /** The vaults by name: their items, as the API returns them. */
  items(vault: string): Stored[];
  /** Replaces the token the server accepts. */
  setToken(token: string): void;
}

const id = () => randomBytes(13).toString('hex').slice(0, 26);

/** `name eq "x"` / `title eq "x"` (SCIM, the only filters Connect accepts on these lists). */
function filterValue(filter: string | null, attr: string): string | undefined {
  if (filter === null) return undefined;
  const m = new RegExp(`^${attr} eq "((?:[^"\\\\]|\\\\.)*)"$`).exec(filter);
  if (!m) throw new Error('bad filter');
  return m[1]!.replace(/\\(.)/g, '$1');
}

export async function startOnePasswordStandIn(t: { teardown(fn: () => unknown): void }, token: string, vaults: Record<string, StandInItem[]>): Promise<OnePasswordStandIn> {
  let accepted = token;
  const byName = new Map<string, { id: string; name: string; items: Map<string, Stored> }>();
  const contents = new Map<string, string>();
  const store = (vaultId: string, it: StandInItem): Stored => {
    const itemId = it.id ?? id();
    const files = (it.files ?? []).map((f) => {
      const fid = f.id ?? id();
      contents.set(fid, f.content);
      return { id: fid, name: f.name, size: Buffer.byteLength(f.content), content_path: `/v1/vaults/${vaultId}/items/${itemId}/files/${fid}/content` };
    });
    return { id: itemId, title: it.title, category: it.category ?? 'LOGIN', vault: { id: vaultId }, fields: (it.fields ?? []).map((f) => ({ id: f.id ?? id(), ...f })), files, ...(it.sections ? { sections: it.sections } : {}) };
  };
  for (const [name, items] of Object.entries(vaults)) {
    const vid = id();
    byName.set(name, { id: vid, name, items: new Map(items.map((it) => { const s = store(vid, it); return [s.id, s]; })) });
  }
  const vaultById = (vid: string) => [...byName.values()].find((v) => v.id === vid);
  const error = (res: ServerResponse, status: number, message: string) => json(res, status, { status, message });

  const srv = await serve(t, (req, res, body) => {
    if (req.headers.authorization !== `Bearer ${accepted}`) return error(res, 401, 'Invalid token signature');
    const u = new URL(req.url!, 'http://x');
    const parts = u.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    if (parts[0] !== 'v1' || parts[1] !== 'vaults') return error(res, 404, 'Not found');
    if (parts.length === 2) {
      const name = filterValue(u.searchParams.get('filter'), 'name');
      return json(res, 200, [...byName.values()].filter((v) => name === undefined || v.name === name).map((v) => ({ id: v.id, name: v.name })));
    }
    const vault = vaultById(parts[2]!);
    if (!vault) return error(res, 404, 'Vault not found');
    if (parts.length === 4 && parts[3] === 'items') {
      if (req.method === 'POST') {
        const created = store(vault.id, JSON.parse(body) as StandInItem);
        vault.items.set(created.id, created);
        return json(res, 200, created);
      }
      const title = filterValue(u.searchParams.get('filter'), 'title');
      return json(res, 200, [...vault.items.values()].filter((i) => title === undefined || i.title === title).map(({ id: iid, title: tt, category, vault: v }) => ({ id: iid, title: tt, category, vault: v })));
    }
    itemCall(vault, parts, req.method!, body, res);
  });
  const itemCall = (vault: { id: string; items: Map<string, Stored> }, parts: string[], method: string, body: string, res: ServerResponse): void => {
    const item = vault.items.get(parts[4] ?? '');
    if (parts[3] !== 'items' || !item) return error(res, 404, 'Item not found');
    if (parts.length === 5 && method === 'GET') return json(res, 200, item);
    if (parts.length === 5 && method === 'PUT') {
      const next = JSON.parse(body) as Stored;
      vault.items.set(item.id, { ...next, id: item.id, vault: { id: vault.id } });
      return json(res, 200, vault.items.get(item.id));
    }
    if (parts.length === 5 && method === 'DELETE') {
      vault.items.delete(item.id);
      return void res.writeHead(204).end();
    }
    if (parts.length === 8 && parts[5] === 'files' && parts[7] === 'content') {
      const file = item.files.find((f) => f.id === parts[6]);
      if (!file) return error(res, 404, 'File not found');
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      return void res.end(contents.get(file.id));
    }
    error(res, 404, 'Not found');
  };
  return { ...srv, items: (vault) => [...(byName.get(vault)?.items.values() ?? [])], setToken: (tok) => (accepted = tok) };
}
