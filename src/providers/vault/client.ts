// The vault SecretsClient: ESO's KV semantics (v1 and v2) over node-vault, one token per
// client (see auth.ts). Every error is a ProviderError naming the store, the key and the
// cause; no value, token or credential is ever part of a message.
import type { Logger } from 'pino';
import { guard, toProviderError } from '../errors.js';
import { asJsonObject, propertyBytes, propertySegments, selectNode } from '../json-path.js';
import { findNameTest } from '../regexp.js';
import { emptySecretMap, ProviderError, type FindRef, type PushOptions, type PushRemoteRef, type RemoteRef, type SecretMap, type SecretsClient } from '../types.js';
import { classifyVault, type TokenSource } from './auth.js';
import { VaultCallError, type Method, type VaultHttp } from './http.js';
import { VaultLeases } from './leases.js';
import { goJson, metadataMap, MANAGED_BY, valueBytes, type DataMap, type KvLayout } from './kv.js';
import { isObject } from '../../json-object.js';

const FIND_CONCURRENCY = 8;


interface CallSpec {
  body?: unknown;
  query?: Record<string, string>;
  /** The remote key, for error messages. */
  key?: string;
  /** What the call does, for error messages ("read", "list", …). */
  what: string;
  /** Handles in the body (a lease id): redacted from Vault's error text. */
  secrets?: readonly string[];
}

export class VaultClient implements SecretsClient {
  private readonly http: VaultHttp;
  private readonly tokens: TokenSource;
  private readonly kv: KvLayout;
  private readonly logger: Logger;
  /** Dynamic secrets (capability `leases`): src/providers/vault/leases.ts. */
  readonly leases: VaultLeases;

  constructor(
    private readonly storeId: string,
    parts: { http: VaultHttp; tokens: TokenSource; kv: KvLayout; logger: Logger },
  ) {
    ({ http: this.http, tokens: this.tokens, kv: this.kv, logger: this.logger } = parts);
    this.leases = new VaultLeases(storeId, (method, path, spec) => this.callWithToken(method, path, spec), this.tokens);
  }

  /** Logins and renewals of this client's token so far (tests and metrics read it). */
  get tokenStats(): { logins: number; renewals: number } {
    return { logins: this.tokens.logins, renewals: this.tokens.renewals };
  }

  // ------------------------------------------------------------ calls

  /** One authenticated call. A 403 is told apart: a token Vault no longer knows (an
   *  owned one is replaced by a new login and the call retried once) is AuthFailed; a
   *  valid token without the policy for this path is Forbidden. 404 resolves undefined. */
  private async call(method: Method, path: string, spec: CallSpec): Promise<DataMap | undefined> {
    return (await this.callWithToken(method, path, spec)).body;
  }

  /** call(), also saying which token answered (a mint holds it: leases.ts). */
  private async callWithToken(method: Method, path: string, spec: CallSpec, retried = false): Promise<{ body: DataMap | undefined; token: string }> {
    const token = await this.tokens.token();
    try {
      return { body: await this.http.call(method, path, { token, body: spec.body, query: spec.query, secrets: spec.secrets }), token };
    } catch (err) {
      if (!(err instanceof VaultCallError)) throw toProviderError(err, { storeId: this.storeId, op: spec.what, key: spec.key }, classifyVault);
      if (err.status === 404) return { body: undefined, token };
      if (err.status !== 403 && err.status !== 401) throw toProviderError(err, { storeId: this.storeId, op: spec.what, key: spec.key }, classifyVault);
      if (await this.tokenValid(token)) {
        throw new ProviderError('Forbidden', this.storeId, `${spec.what} of ${path} denied by Vault policy (403)`, spec.key);
      }
      this.tokens.invalidate(token);
      if (this.tokens.owned && !retried) return this.callWithToken(method, path, spec, true);
      throw new ProviderError('AuthFailed', this.storeId, `Vault refused the token (invalid, expired or revoked) on ${spec.what}`, spec.key);
    }
  }

  private async tokenValid(token: string): Promise<boolean> {
    try {
      await this.http.call('GET', 'auth/token/lookup-self', { token });
      return true;
    } catch (err) {
      if (err instanceof VaultCallError && (err.status === 403 || err.status === 401)) return false;
      throw toProviderError(err, { storeId: this.storeId, op: 'token lookup' }, classifyVault);
    }
  }

  /** The data map of `key` (a version on KV v2), or undefined when absent or deleted. */
  private async read(key: string, version?: string): Promise<DataMap | undefined> {
    const p = this.kv.paths(key);
    if (this.kv.version === 'v1') {
      const body = await this.call('GET', p.data, { key, what: 'read' });
      return isObject(body?.data) ? body.data : undefined;
    }
    const query = version ? { version } : undefined;
    const body = await this.call('GET', p.data, { key, query, what: 'read' });
    const inner = isObject(body?.data) ? body.data.data : undefined;
    return isObject(inner) ? inner : undefined;
  }

  /** KV v2 metadata of `key` (raw), or undefined when absent. */
  private async metadata(key: string): Promise<DataMap | undefined> {
    const body = await this.call('GET', this.kv.paths(key).metadata, { key, what: 'read metadata' });
    return isObject(body?.data) ? body.data : undefined;
  }

  // ------------------------------------------------------------ read

  private checkRef(ref: RemoteRef): void {
    if (this.kv.version === 'v1' && ref.version) {
      throw new ProviderError('Unsupported', this.storeId, 'KV v1 keeps no versions (remoteRef.version needs KV v2)', ref.key);
    }
    if (ref.version && !/^\d+$/.test(ref.version)) {
      throw new ProviderError('InvalidSpec', this.storeId, `version "${ref.version}" is not a KV v2 version number`, ref.key);
    }
    if (this.kv.version === 'v1' && ref.metadataPolicy === 'Fetch') {
      throw new ProviderError('Unsupported', this.storeId, 'metadataPolicy Fetch needs KV v2 (KV v1 has no metadata)', ref.key);
    }
  }

  /** The map a ref reads: the data (of a version), or with metadataPolicy Fetch the metadata. */
  private async source(ref: RemoteRef): Promise<DataMap> {
    this.checkRef(ref);
    if (ref.metadataPolicy === 'Fetch') {
      const meta = await this.metadata(ref.key);
      if (!meta) throw new ProviderError('NotFound', this.storeId, 'secret not found', ref.key);
      return { ...metadataMap(meta) };
    }
    const data = await this.read(ref.key, ref.version);
    if (!data) throw new ProviderError('NotFound', this.storeId, ref.version ? `version "${ref.version}" not found` : 'secret not found', ref.key);
    return data;
  }

  /** No property: the whole map as JSON (ESO). Property: that field, by name or dotted path. */
  async getSecret(ref: RemoteRef): Promise<Uint8Array> {
    const data = await this.source(ref);
    if (!ref.property) return Buffer.from(goJson(data), 'utf8');
    const v = guard({ storeId: this.storeId, key: ref.key }, () => selectNode(data, ref.property!));
    if (v === undefined) throw new ProviderError('NotFound', this.storeId, `property "${ref.property}" not found`, ref.key);
    // A key of the data map is read as ESO's typed read does (numbers as Vault holds them);
    // a gjson path as gjson's Result.String() (numbers normalised: json-text.ts).
    return Object.prototype.hasOwnProperty.call(data, ref.property) ? valueBytes(v) : propertyBytes(v);
  }

  async getSecretMap(ref: RemoteRef): Promise<SecretMap> {
    const parsed = asJsonObject(await this.getSecret(ref));
    if (!parsed) {
      throw new ProviderError('Unknown', this.storeId, ref.property ? `property "${ref.property}" is not a JSON object` : 'value is not a JSON object', ref.key);
    }
    const out = emptySecretMap();
    for (const [k, v] of Object.entries(parsed)) out[k] = valueBytes(v);
    return out;
  }

  // ------------------------------------------------------------ find

  /** Every key under `folder`, recursively (LIST on KV v2 metadata / the KV v1 mount). */
  private async list(folder: string): Promise<string[]> {
    const body = await this.call('LIST', this.kv.listPath(folder), { key: folder || undefined, what: 'list' });
    const keys = isObject(body?.data) && Array.isArray(body.data.keys) ? (body.data.keys as unknown[]) : [];
    const prefix = folder ? `${folder.replace(/\/+$/, '')}/` : '';
    const out: string[] = [];
    for (const k of keys) {
      if (typeof k !== 'string') continue;
      if (k.endsWith('/')) out.push(...(await this.list(`${prefix}${k.slice(0, -1)}`)));
      else out.push(`${prefix}${k}`);
    }
    return out;
  }

  private async matchesTags(key: string, tags: Record<string, string>): Promise<boolean> {
    const meta = await this.metadata(key);
    if (!meta) return false;
    const m = metadataMap(meta);
    return Object.entries(tags).every(([k, v]) => m[k] === v);
  }

  /** dataFrom.find: keys (relative to the mount) under `path`, filtered by name regexp
   *  and/or KV v2 custom_metadata tags; each value is the whole data map as JSON. */
  async getAllSecrets(find: FindRef): Promise<SecretMap> {
    const hasTags = find.tags && Object.keys(find.tags).length > 0;
    if (hasTags && this.kv.version === 'v1') {
      throw new ProviderError('Unsupported', this.storeId, 'find by tags needs KV v2 (tags are custom_metadata)');
    }
    if (!this.kv.mount) throw new ProviderError('InvalidSpec', this.storeId, 'find needs the store to set vault.path (the KV mount)');
    const re = findNameTest(find, this.storeId);
    const candidates = (await this.list(find.path ? find.path.replace(/\/+$/, '') : '')).filter((k) => re(k));
    const out = emptySecretMap();
    let next = 0;
    const worker = async () => {
      while (next < candidates.length) {
        const key = candidates[next++]!;
        if (hasTags && !(await this.matchesTags(key, find.tags!))) continue;
        const data = await this.read(key);
        if (data) out[key] = Buffer.from(goJson(data), 'utf8');
      }
    };
    await Promise.all(Array.from({ length: Math.min(FIND_CONCURRENCY, candidates.length) }, worker));
    return out;
  }

  // ------------------------------------------------------------ write

  /** Whether the existing secret carries the ownership mark (KV v2 metadata, KV v1 data). */
  private async managed(key: string, data: DataMap): Promise<boolean> {
    if (this.kv.version === 'v1') {
      const cm = data.custom_metadata;
      return isObject(cm) && cm[MANAGED_BY.key] === MANAGED_BY.value;
    }
    const meta = await this.metadata(key);
    return !!meta && metadataMap(meta)[MANAGED_BY.key] === MANAGED_BY.value;
  }

  /** The data map to write: one property merged into the existing map, or the whole
   *  value, which must then be a JSON object (a Vault KV entry is a map). */
  private desired(value: Uint8Array, ref: PushRemoteRef, existing: DataMap | undefined): DataMap {
    if (ref.property) {
      // A pushed property is one flat key of the data map (ESO's vault provider).
      const [k] = guard({ storeId: this.storeId, key: ref.remoteKey }, () => propertySegments(ref.property!, 'key'));
      return { ...(existing ?? {}), [k!]: Buffer.from(value).toString('utf8') };
    }
    const parsed = asJsonObject(value);
    if (!parsed) {
      throw new ProviderError('InvalidSpec', this.storeId, 'a push without property needs a JSON object value (a Vault KV entry is a map); set remoteRef.property to push one field', ref.remoteKey);
    }
    return parsed;
  }

  /** PushSecret as ESO: refuses to overwrite a secret it does not manage, merges a
   *  property into the other fields, writes nothing when nothing changes, marks ownership.
   *  `metadata.customMetadata` becomes the KV v2 custom_metadata (with the mark). */
  async pushSecret(value: Uint8Array, ref: PushRemoteRef, opts: PushOptions = {}): Promise<void> {
    const key = ref.remoteKey;
    const custom = opts.metadata?.customMetadata as Record<string, string> | undefined;
    if (custom && this.kv.version === 'v1') {
      throw new ProviderError('Unsupported', this.storeId, 'metadata.spec.customMetadata needs KV v2 (KV v1 has no metadata); remove it or use a version v2 store', key);
    }
    const existing = await this.read(key);
    if (existing && !(await this.managed(key, existing))) {
      throw new ProviderError('Forbidden', this.storeId, `the secret exists and is not managed by external-secrets (no ${MANAGED_BY.key}=${MANAGED_BY.value} mark); refusing to overwrite it`, key);
    }
    const current = existing ? { ...existing } : undefined;
    if (current && this.kv.version === 'v1') delete current.custom_metadata;
    const next = this.desired(value, ref, current);
    const p = this.kv.paths(key);
    if (this.kv.version === 'v2') {
      // The ownership mark always wins over a customMetadata key of the same name.
      const wanted = { ...(custom ?? {}), [MANAGED_BY.key]: MANAGED_BY.value };
      if (!existing || (custom && !(await this.hasCustomMetadata(key, wanted)))) {
        await this.call('POST', p.metadata, { key, what: 'write metadata', body: { custom_metadata: wanted } });
      }
      if (current && goJson(current) === goJson(next)) return;
      await this.call('POST', p.data, { key, what: 'write', body: { data: next } });
    } else {
      if (current && goJson(current) === goJson(next)) return;
      await this.call('POST', p.data, { key, what: 'write', body: { ...next, custom_metadata: { [MANAGED_BY.key]: MANAGED_BY.value } } });
    }
  }

  /** Whether the KV v2 custom_metadata of `key` is exactly `wanted`. */
  private async hasCustomMetadata(key: string, wanted: Record<string, string>): Promise<boolean> {
    const cm = (await this.metadata(key))?.custom_metadata;
    const have = isObject(cm) ? cm : {};
    const keys = Object.keys(have);
    return keys.length === Object.keys(wanted).length && keys.every((k) => have[k] === wanted[k]);
  }

  /** Deletes what a PushSecret wrote: one property (the rest stays), or the whole secret
   *  (KV v2: its metadata, so every version). Absent or unmanaged secrets are left alone. */
  async deleteSecret(ref: PushRemoteRef): Promise<void> {
    const key = ref.remoteKey;
    const existing = await this.read(key);
    if (!existing) return;
    if (!(await this.managed(key, existing))) {
      this.logger.warn({ key }, 'vault: not deleting a secret that is not managed by external-secrets');
      return;
    }
    const p = this.kv.paths(key);
    if (ref.property) {
      const [k] = guard({ storeId: this.storeId, key }, () => propertySegments(ref.property!, 'key'));
      const rest = { ...existing };
      delete rest[k!];
      const fields = Object.keys(rest).filter((k) => !(this.kv.version === 'v1' && k === 'custom_metadata'));
      if (fields.length > 0) {
        await this.call('POST', p.data, { key, what: 'write', body: this.kv.version === 'v2' ? { data: rest } : rest });
        return;
      }
    }
    await this.call('DELETE', this.kv.version === 'v2' ? p.metadata : p.data, { key, what: 'delete' });
  }

  async secretExists(ref: PushRemoteRef): Promise<boolean> {
    const data = await this.read(ref.remoteKey);
    if (!data) return false;
    return ref.property ? guard({ storeId: this.storeId, key: ref.remoteKey }, () => selectNode(data, ref.property!)) !== undefined : true;
  }

  async validate(): Promise<void> {
    const token = await this.tokens.token();
    try {
      await this.http.call('GET', 'auth/token/lookup-self', { token });
    } catch (err) {
      if (err instanceof VaultCallError && (err.status === 403 || err.status === 401)) {
        throw new ProviderError('AuthFailed', this.storeId, 'Vault refused the token (invalid, expired or revoked)');
      }
      throw toProviderError(err, { storeId: this.storeId, op: 'token lookup' }, classifyVault);
    }
  }

  async close(): Promise<void> {
    await this.tokens.close();
  }
}
