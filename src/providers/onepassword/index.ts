// The `onepassword` provider (ESO's `spec.provider.onepassword`): 1Password Connect, with
// ESO's meaning of every reference. remoteRef.key = an item's title, looked up in the
// store's vaults in their order (the first vault holding it wins; two items of that title
// in one vault is an error); property = a field label (default `password`), or a file
// name for a DOCUMENT item (default its first file). find: path = an item title, name = a
// regexp on field labels / file names. PushSecret writes one field (a CONCEALED field
// labelled `property`, default `password`) of the item, created in the first vault.
// docs/providers/onepassword.md.
import type { OnePasswordProvider } from '../../api/types.js';
import { defineProvider } from '../define.js';
import { refuseVersionAndMetadata, toProviderError } from '../errors.js';
import { classifyHttp } from '../http-store.js';
import { findNameTest } from '../regexp.js';
import { emptySecretMap, ProviderError, type CallOptions, type FindRef, type ProviderContext, type PushRemoteRef, type RemoteRef, type SecretMap, type SecretsClient } from '../types.js';
import { ConnectApi, type Item } from './connect.js';
import { meta } from './meta.js';
import { validateSpec } from './spec.js';

export { validateSpec };

const DOCUMENT = 'DOCUMENT';
const PASSWORD = 'password';
const enc = new TextEncoder();

class OnePasswordClient implements SecretsClient {
  /** Vault names by their order. */
  private readonly vaults: string[];

  constructor(
    private readonly ctx: ProviderContext,
    private readonly api: ConnectApi,
    spec: OnePasswordProvider,
  ) {
    this.vaults = Object.entries(spec.vaults).sort((a, b) => a[1] - b[1]).map(([name]) => name);
  }

  private fail(op: string, key: string | undefined, err: unknown): never {
    throw toProviderError(err, { storeId: this.ctx.storeId, op, key }, classifyHttp);
  }

  private err(code: ProviderError['code'], message: string, key?: string): ProviderError {
    return new ProviderError(code, this.ctx.storeId, message, key);
  }

  /** The item titled `title` in the first vault that has one (ESO's findItem). */
  private async findItem(title: string, signal?: AbortSignal): Promise<Item | undefined> {
    for (const name of this.vaults) {
      const vault = await this.api.vaultByName(name, signal);
      const items = await this.api.itemsByTitle(vault.id, title, signal);
      if (items.length > 1) throw this.err('Unknown', `expected one 1Password item titled "${title}" in vault "${name}", found ${items.length}`, title);
      if (items.length === 1) return this.api.item(items[0]!.vault.id, items[0]!.id, signal, title);
    }
    return undefined;
  }

  private async mustFind(title: string, signal?: AbortSignal): Promise<Item> {
    const item = await this.findItem(title, signal);
    if (!item) throw this.err('NotFound', `no 1Password item titled "${title}" in vaults ${this.vaults.join(', ')}`, title);
    return item;
  }

  private oneField(item: Item, label: string): string {
    const found = (item.fields ?? []).filter((f) => f.label === label);
    if (found.length !== 1) throw this.err(found.length === 0 ? 'NotFound' : 'Unknown', `expected one field labelled "${label}" in item "${item.title}", found ${found.length}`, item.title);
    return found[0]!.value ?? '';
  }

  async getSecret(ref: RemoteRef, opts?: CallOptions): Promise<Uint8Array> {
    refuseVersionAndMetadata('onepassword', this.ctx.storeId, ref);
    try {
      const item = await this.mustFind(ref.key, opts?.signal);
      if (item.category === DOCUMENT) {
        const file = (item.files ?? []).find((f) => !ref.property || f.name === ref.property);
        if (!file) throw this.err('NotFound', `item "${item.title}" has no file${ref.property ? ` named "${ref.property}"` : ''}`, ref.key);
        return await this.api.fileContent(item, file, opts?.signal);
      }
      return enc.encode(this.oneField(item, ref.property || PASSWORD));
    } catch (err) {
      this.fail('get item', ref.key, err);
    }
  }

  async getSecretMap(ref: RemoteRef, opts?: CallOptions): Promise<SecretMap> {
    refuseVersionAndMetadata('onepassword', this.ctx.storeId, ref);
    try {
      const item = await this.mustFind(ref.key, opts?.signal);
      const out = emptySecretMap();
      if (item.category === DOCUMENT) {
        for (const f of item.files ?? []) if (!ref.property || f.name === ref.property) out[f.name] = await this.api.fileContent(item, f, opts?.signal);
        return out;
      }
      for (const f of item.fields ?? []) {
        if (!f.label || (ref.property && f.label !== ref.property)) continue;
        out[f.label] = enc.encode(this.oneField(item, f.label));
      }
      return out;
    } catch (err) {
      this.fail('get item', ref.key, err);
    }
  }

  async getAllSecrets(find: FindRef, opts?: CallOptions): Promise<SecretMap> {
    if (find.tags && Object.keys(find.tags).length > 0) throw this.err('Unsupported', 'find.tags is not supported by the onepassword provider');
    const matches = findNameTest(find, this.ctx.storeId);
    const out = emptySecretMap();
    try {
      for (const name of this.vaults) {
        const vault = await this.api.vaultByName(name, opts?.signal);
        for (const summary of await this.api.items(vault.id, opts?.signal)) {
          if (find.path !== undefined && find.path !== summary.title) continue;
          await this.collect(await this.api.item(summary.vault.id, summary.id, opts?.signal, summary.title), matches, out, opts?.signal);
        }
      }
      return out;
    } catch (err) {
      this.fail('find items', undefined, err);
    }
  }

  /** ESO's getAllFields / getAllFiles: the item's matching fields (or files) not yet in `out`. */
  private async collect(item: Item, matches: (name: string) => boolean, out: SecretMap, signal?: AbortSignal): Promise<void> {
    if (item.category === DOCUMENT) {
      for (const f of item.files ?? []) if (matches(f.name) && !(f.name in out)) out[f.name] = await this.api.fileContent(item, f, signal);
      return;
    }
    for (const f of item.fields ?? []) {
      if (f.label && matches(f.label) && !(f.label in out)) out[f.label] = enc.encode(this.oneField(item, f.label));
    }
  }

  async pushSecret(value: Uint8Array, ref: PushRemoteRef, opts?: CallOptions): Promise<void> {
    const label = ref.property || PASSWORD;
    const text = Buffer.from(value).toString('utf8');
    try {
      const item = await this.findItem(ref.remoteKey, opts?.signal);
      if (!item) {
        const vault = await this.api.vaultByName(this.vaults[0]!, opts?.signal);
        await this.api.createItem(vault.id, { title: ref.remoteKey, category: 'SERVER', vault: { id: vault.id }, fields: [{ label, value: text, type: 'CONCEALED' }] }, opts?.signal);
        return;
      }
      const fields = item.fields ?? [];
      const same = fields.filter((f) => f.label === label);
      if (same.length > 1) throw this.err('Unknown', `expected one field labelled "${label}" in item "${item.title}", found ${same.length}`, ref.remoteKey);
      if (same[0]?.value === text) return;
      if (same[0]) same[0].value = text;
      else fields.push({ label, value: text, type: 'CONCEALED' });
      await this.api.replaceItem({ ...item, fields }, opts?.signal);
    } catch (err) {
      this.fail('push item', ref.remoteKey, err);
    }
  }

  async deleteSecret(ref: PushRemoteRef, opts?: CallOptions): Promise<void> {
    const label = ref.property || PASSWORD;
    try {
      const item = await this.findItem(ref.remoteKey, opts?.signal);
      if (!item) return;
      const fields = (item.fields ?? []).filter((f) => f.label !== label);
      if ((item.fields ?? []).length - fields.length > 1) throw this.err('Unknown', `expected one field labelled "${label}" in item "${item.title}"`, ref.remoteKey);
      if (fields.length === 0 && (item.files ?? []).length === 0 && (item.sections ?? []).length === 0) await this.api.deleteItem(item, opts?.signal);
      else if (fields.length !== (item.fields ?? []).length) await this.api.replaceItem({ ...item, fields }, opts?.signal);
    } catch (err) {
      this.fail('delete item field', ref.remoteKey, err);
    }
  }

  async secretExists(ref: PushRemoteRef, opts?: CallOptions): Promise<boolean> {
    try {
      const item = await this.findItem(ref.remoteKey, opts?.signal);
      return !!item && (item.fields ?? []).some((f) => f.label === (ref.property || PASSWORD));
    } catch (err) {
      this.fail('find item', ref.remoteKey, err);
    }
  }

  /** Every vault of the store is visible to the token (ESO's Validate). */
  async validate(opts?: CallOptions): Promise<void> {
    try {
      for (const name of this.vaults) await this.api.vaultByName(name, opts?.signal);
    } catch (err) {
      this.fail('validate', undefined, err);
    }
  }

  async close(): Promise<void> {}

}

export const provider = defineProvider<OnePasswordProvider>(meta, async (ctx, spec) => {
  const tokenRef = spec.auth.secretRef.connectTokenSecretRef;
  const sel = { name: tokenRef.name, key: tokenRef.key ?? '', ...(tokenRef.namespace ? { namespace: tokenRef.namespace } : {}) };
  const api = new ConnectApi({
    host: new URL(spec.connectHost),
    storeId: ctx.storeId,
    token: async () => {
      const t = Buffer.from(await ctx.readCredential(sel)).toString('utf8').trim();
      if (!t) throw new ProviderError('AuthFailed', ctx.storeId, `the Connect token in Secret "${sel.name}" key "${sel.key}" is empty`);
      return t;
    },
    timeoutMs: ctx.timeoutMs,
    policy: ctx.addresses,
  });
  return new OnePasswordClient(ctx, api, spec);
});

export default provider;
