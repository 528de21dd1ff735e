// The 1Password Connect server's REST API (the documented subset ESI calls; API spec 1.8.1,
// developer.1password.com/docs/connect/api-reference): vaults by name, items by title,
// full items, file content, item create/replace/delete. Every call carries the Connect
// token as a bearer token, read for each call (a rotated token is used at once), and goes
// through src/providers/http-store.ts. Errors name the call and the status only.
import { statusCode } from '../http-store.js';
import { httpCall } from '../../egress/http.js';
import type { AddressPolicy } from '../../egress/policy.js';
import { ProviderError } from '../types.js';

export interface Vault {
  id: string;
  name: string;
}

export interface ItemSummary {
  id: string;
  title: string;
  category?: string;
  vault: { id: string };
}

export interface Field {
  id?: string;
  label?: string;
  value?: string;
  type?: string;
  purpose?: string;
  section?: { id: string };
}

export interface ItemFile {
  id: string;
  name: string;
  size?: number;
  content_path?: string;
}

export interface Item extends ItemSummary {
  fields?: Field[];
  files?: ItemFile[];
  sections?: unknown[];
}

export interface ConnectOptions {
  host: URL;
  storeId: string;
  token: () => Promise<string>;
  ca?: string;
  timeoutMs: number;
  policy?: AddressPolicy;
}

const seg = (s: string) => encodeURIComponent(s);
/** A SCIM filter value: backslash and double quote escaped. */
const scim = (s: string) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

export class ConnectApi {
  constructor(private readonly o: ConnectOptions) {}

  private async call(op: string, method: string, path: string, opts: { body?: unknown; signal?: AbortSignal; key?: string; raw?: boolean } = {}): Promise<unknown> {
    const base = this.o.host.href.replace(/\/+$/, '');
    const res = await httpCall({
      url: new URL(`${base}${path}`), method,
      headers: { Authorization: `Bearer ${(await this.o.token()).trim()}`, Accept: 'application/json', ...(opts.body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
      ca: this.o.ca, timeoutMs: this.o.timeoutMs, policy: this.o.policy, signal: opts.signal,
    });
    if (res.status < 200 || res.status > 299) {
      throw new ProviderError(statusCode(res.status), this.o.storeId, `1Password Connect ${op} answered HTTP ${res.status}`, opts.key);
    }
    if (opts.raw) return res.body;
    if (res.body.length === 0) return undefined;
    try {
      return JSON.parse(res.body.toString('utf8')) as unknown;
    } catch {
      throw new ProviderError('Unknown', this.o.storeId, `1Password Connect ${op} answered with something that is not JSON`, opts.key);
    }
  }

  private list<T>(v: unknown, op: string): T[] {
    if (!Array.isArray(v)) throw new ProviderError('Unknown', this.o.storeId, `1Password Connect ${op} did not answer a list`);
    return v as T[];
  }

  /** The one vault named `name` (GetVaultByTitle). */
  async vaultByName(name: string, signal?: AbortSignal): Promise<Vault> {
    const vaults = this.list<Vault>(await this.call('list vaults', 'GET', `/v1/vaults?filter=${seg(`name eq ${scim(name)}`)}`, { signal }), 'list vaults');
    if (vaults.length !== 1) {
      const code = vaults.length === 0 ? 'NotFound' : 'Unknown';
      throw new ProviderError(code, this.o.storeId, `found ${vaults.length} 1Password vaults named "${name}" (the token must see exactly one)`);
    }
    return vaults[0]!;
  }

  itemsByTitle(vaultId: string, title: string, signal?: AbortSignal): Promise<ItemSummary[]> {
    return this.call('list items', 'GET', `/v1/vaults/${seg(vaultId)}/items?filter=${seg(`title eq ${scim(title)}`)}`, { signal, key: title })
      .then((v) => this.list<ItemSummary>(v, 'list items'));
  }

  items(vaultId: string, signal?: AbortSignal): Promise<ItemSummary[]> {
    return this.call('list items', 'GET', `/v1/vaults/${seg(vaultId)}/items`, { signal }).then((v) => this.list<ItemSummary>(v, 'list items'));
  }

  async item(vaultId: string, itemId: string, signal?: AbortSignal, key?: string): Promise<Item> {
    return (await this.call('get item', 'GET', `/v1/vaults/${seg(vaultId)}/items/${seg(itemId)}`, { signal, key })) as Item;
  }

  async fileContent(item: Item, file: ItemFile, signal?: AbortSignal): Promise<Uint8Array> {
    const body = (await this.call('get file content', 'GET', `/v1/vaults/${seg(item.vault.id)}/items/${seg(item.id)}/files/${seg(file.id)}/content`, { signal, key: item.title, raw: true })) as Buffer;
    return new Uint8Array(body);
  }

  async createItem(vaultId: string, item: Omit<Item, 'id'>, signal?: AbortSignal): Promise<void> {
    await this.call('create item', 'POST', `/v1/vaults/${seg(vaultId)}/items`, { body: item, signal, key: item.title });
  }

  async replaceItem(item: Item, signal?: AbortSignal): Promise<void> {
    await this.call('replace item', 'PUT', `/v1/vaults/${seg(item.vault.id)}/items/${seg(item.id)}`, { body: item, signal, key: item.title });
  }

  async deleteItem(item: Item, signal?: AbortSignal): Promise<void> {
    await this.call('delete item', 'DELETE', `/v1/vaults/${seg(item.vault.id)}/items/${seg(item.id)}`, { signal, key: item.title });
  }
}
