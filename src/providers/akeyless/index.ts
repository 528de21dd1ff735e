// The `akeyless` provider (ESO's `spec.provider.akeyless`): Akeyless's documented V2 REST API
// (docs.akeyless.io/reference), the calls ESO's Akeyless store makes through akeyless-go, each a
// JSON POST to the spec's `akeylessGWApiURL`: /auth (an access ID with its access key, or
// Kubernetes auth with a service-account JWT) → a token; /describe-item (the item's type),
// then /get-secret-value, /get-rotated-secret-value, /get-dynamic-secret-value or
// /get-certificate-value by type; /list-items for find; PushSecret as ESO's store does it:
// /create-secret (tagged `k8s-external-secrets`), /update-secret-val, /delete-item (only an
// item carrying that tag). The URL is the spec's, so the address policy applies. Not the `akeyless` npm SDK: it brings
// its own HTTP stack (superagent) and @babel/cli as runtime dependencies. docs/providers/akeyless.md.
import type { AkeylessProvider } from '../../api/types.js';
import { defineProvider } from '../define.js';
import { guard, RemoteRefError, toProviderError } from '../errors.js';
import { classifyHttp, statusCode, storeCa } from '../http-store.js';
import { httpCall } from '../../egress/http.js';
import { deleteProperty, hasProperty, parseJson, selectProperty, setProperty, valueAsMap } from '../json-path.js';
import { isJsonObject, stringifyJson } from '../json-text.js';
import type { Json } from '../../json-object.js';
import { findNameTest } from '../regexp.js';
import { emptySecretMap, ProviderError, type CallOptions, type FindRef, type ProviderContext, type PushRemoteRef, type RemoteRef, type SecretKeySelector, type SecretMap, type SecretsClient } from '../types.js';
import { meta } from './meta.js';
import { jwtRef, validateSpec } from './spec.js';

export { validateSpec };

/** How long a token from /auth is reused before the next call authenticates again (Akeyless
 *  tokens live 60 minutes by default; a 401 also authenticates again). */
export const TOKEN_REUSE_MS = 10 * 60_000;
/** The item types ESO lists for find. */
const LISTED_TYPES = ['static-secret', 'dynamic-secret', 'rotated-secret'];
/** The tag ESO's store gives the items it creates; only a tagged item is deleted. */
const MANAGED_TAG = 'k8s-external-secrets';
const enc = new TextEncoder();

/** What /describe-item says of an item a push touches. */
interface Described {
  type: string;
  tags: string[];
}

class AkeylessClient implements SecretsClient {
  private readonly base: string;
  private token?: Promise<{ value: string; until: number }>;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly spec: AkeylessProvider,
    private readonly ca: string | undefined,
  ) {
    this.base = spec.akeylessGWApiURL.replace(/\/+$/, '');
  }

  private unsupported(what: string, key?: string): ProviderError {
    return new ProviderError('Unsupported', this.ctx.storeId, `${what} is not supported by the akeyless provider`, key);
  }

  /** One POST; the answer's JSON, or a ProviderError with the status (never the body). */
  private async post(op: string, path: string, body: Json, opts: { signal?: AbortSignal; key?: string }): Promise<{ status: number; json?: unknown }> {
    const res = await httpCall({
      url: new URL(`${this.base}${path}`), method: 'POST', body: JSON.stringify(body),
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      ca: this.ca, timeoutMs: this.ctx.timeoutMs, policy: this.ctx.addresses, signal: opts.signal,
    });
    if (res.status !== 200) return { status: res.status };
    return { status: 200, json: guard({ storeId: this.ctx.storeId, op, key: opts.key }, () => parseJson(res.body)) };
  }

  private async credential(ref: SecretKeySelector, what: string): Promise<string> {
    const v = Buffer.from(await this.ctx.readCredential(ref)).toString('utf8').trim();
    if (!v) throw new ProviderError('AuthFailed', this.ctx.storeId, `${what}: the Secret's value is empty`);
    return v;
  }

  /** The /auth body (ESO's GetToken): an access key, or Kubernetes auth with a base64 JWT. */
  private async authBody(): Promise<Json> {
    const a = this.spec.authSecretRef;
    const k = a.kubernetesAuth;
    if (k) {
      const jwt = k.secretRef
        ? await this.credential(jwtRef(k.secretRef), 'akeyless.authSecretRef.kubernetesAuth.secretRef')
        : await this.ctx.serviceAccountToken(k.serviceAccountRef?.audiences?.[0]);
      return { 'access-id': k.accessID, 'access-type': 'k8s', 'k8s-auth-config-name': k.k8sConfName, 'k8s-service-account-token': Buffer.from(jwt).toString('base64') };
    }
    const s = a.secretRef!;
    const sel = (r: { name: string; key?: string; namespace?: string }) => ({ name: r.name, key: r.key ?? '', ...(r.namespace ? { namespace: r.namespace } : {}) });
    const accessId = await this.credential(sel(s.accessID), 'akeyless.authSecretRef.secretRef.accessID');
    const accessType = await this.credential(sel(s.accessType), 'akeyless.authSecretRef.secretRef.accessType');
    if (accessType === 'api_key' || accessType === 'access_key') {
      if (!s.accessTypeParam) throw new ProviderError('InvalidSpec', this.ctx.storeId, 'akeyless.authSecretRef.secretRef.accessTypeParam (the access key) is needed for access type api_key');
      return { 'access-id': accessId, 'access-type': 'access_key', 'access-key': await this.credential(sel(s.accessTypeParam), 'akeyless.authSecretRef.secretRef.accessTypeParam') };
    }
    // The other types authenticate as the process that reads (its cloud identity, or its own
    // service-account token file): ESI does not lend that to a store.
    throw this.unsupported(`access type "${accessType.slice(0, 32)}" (it authenticates as the process that reads; use api_key, or kubernetesAuth)`);
  }

  private async login(signal?: AbortSignal): Promise<{ value: string; until: number }> {
    const res = await this.post('authenticate', '/auth', await this.authBody(), { signal });
    if (res.status !== 200) throw new ProviderError(res.status === 400 ? 'AuthFailed' : statusCode(res.status), this.ctx.storeId, `Akeyless authenticate answered HTTP ${res.status}`);
    const token = isJsonObject(res.json) ? res.json.token : undefined;
    if (typeof token !== 'string' || token === '') throw new ProviderError('AuthFailed', this.ctx.storeId, 'Akeyless\'s /auth answer has no token');
    return { value: token, until: Date.now() + TOKEN_REUSE_MS };
  }

  private async currentToken(signal?: AbortSignal, renew = false): Promise<string> {
    const cached = this.token ? await this.token.catch(() => undefined) : undefined;
    if (!renew && cached && cached.until > Date.now()) return cached.value;
    const p = this.login(signal);
    this.token = p;
    p.catch(() => {
      if (this.token === p) this.token = undefined;
    });
    return (await p).value;
  }

  /** An authenticated call: the token in the body (`uid-token` for a `u-` token, as ESO);
   *  one new authentication after a 401. */
  private async call(op: string, path: string, body: Json, opts: { signal?: AbortSignal; key?: string }): Promise<unknown> {
    const withToken = (t: string) => ({ ...body, [t.startsWith('u-') ? 'uid-token' : 'token']: t });
    let res = await this.post(op, path, withToken(await this.currentToken(opts.signal)), opts);
    if (res.status === 401) res = await this.post(op, path, withToken(await this.currentToken(opts.signal, true)), opts);
    if (res.status !== 200) throw new ProviderError(statusCode(res.status), this.ctx.storeId, `Akeyless ${op} answered HTTP ${res.status}`, opts.key);
    return res.json;
  }

  /** An item's value by its type (ESO's GetSecretByType); version 0 is the latest. */
  private async byType(name: string, version: number, signal?: AbortSignal): Promise<string> {
    const opts = { signal, key: name };
    const item = await this.call('describe item', '/describe-item', { name }, opts);
    if (!isJsonObject(item) || typeof item.item_name !== 'string') throw new ProviderError('NotFound', this.ctx.storeId, 'the item does not exist', name);
    switch (item.item_type) {
      case 'STATIC_SECRET': {
        const v = await this.call('get secret value', '/get-secret-value', { names: [name], version }, opts);
        const value = isJsonObject(v) ? v[name] : undefined;
        if (typeof value !== 'string') throw new ProviderError('Unknown', this.ctx.storeId, 'Akeyless answered without the item\'s value', name);
        return value;
      }
      case 'DYNAMIC_SECRET':
        return stringifyJson(await this.call('get dynamic secret value', '/get-dynamic-secret-value', { name }, opts));
      case 'ROTATED_SECRET':
        return rotatedValue(await this.call('get rotated secret value', '/get-rotated-secret-value', { names: name, version }, opts));
      case 'CERTIFICATE':
        return stringifyJson(await this.call('get certificate value', '/get-certificate-value', { name, version }, opts));
      default:
        throw new ProviderError('Unsupported', this.ctx.storeId, `items of type ${String(item.item_type).slice(0, 32)} are not supported`, name);
    }
  }

  private fail(op: string, key: string | undefined, err: unknown): never {
    throw toProviderError(err, { storeId: this.ctx.storeId, op, key }, classifyHttp);
  }

  private async value(ref: RemoteRef, signal?: AbortSignal): Promise<Uint8Array> {
    if (ref.metadataPolicy === 'Fetch') throw this.unsupported('metadataPolicy Fetch', ref.key);
    const version = ref.version ? Number(ref.version) : 0;
    if (!Number.isInteger(version) || version < 0 || version > 2 ** 31 - 1) throw new ProviderError('InvalidSpec', this.ctx.storeId, 'remoteRef.version must be an item version number', ref.key);
    try {
      return enc.encode(await this.byType(ref.key, version, signal));
    } catch (err) {
      this.fail('get secret', ref.key, err);
    }
  }

  async getSecret(ref: RemoteRef, opts?: CallOptions): Promise<Uint8Array> {
    return selectProperty(await this.value(ref, opts?.signal), ref, this.ctx.storeId);
  }

  async getSecretMap(ref: RemoteRef, opts?: CallOptions): Promise<SecretMap> {
    return valueAsMap(await this.value(ref, opts?.signal), ref, this.ctx.storeId);
  }

  /** Item names under `path` (ESO's ListSecrets), with `tag` when set. */
  private async list(path: string, tag: string, signal?: AbortSignal): Promise<string[]> {
    const v = await this.call('list items', '/list-items', { filter: path, type: LISTED_TYPES, 'minimal-view': tag === '', tag }, { signal });
    const items = isJsonObject(v) && Array.isArray(v.items) ? (v.items as unknown[]) : [];
    return items.map((i) => (isJsonObject(i) ? i.item_name : undefined)).filter((n): n is string => typeof n === 'string' && (path === '' || n.startsWith(path)));
  }

  /** ESO's GetAllSecrets: items under `path` matching the name regexp, or carrying one of the
   *  tags' values; keyed by the full item name. */
  async getAllSecrets(find: FindRef, opts?: CallOptions): Promise<SecretMap> {
    const tags = Object.values(find.tags ?? {});
    if (!find.name && tags.length === 0) throw new ProviderError('InvalidSpec', this.ctx.storeId, 'find needs name or tags for the akeyless provider');
    const matches = findNameTest(find, this.ctx.storeId);
    const path = find.path ? `${find.path.startsWith('/') ? '' : '/'}${find.path}${find.path.endsWith('/') ? '' : '/'}` : '';
    try {
      const names = find.name ? (await this.list(path, '', opts?.signal)).filter(matches) : (await Promise.all(tags.map((tag) => this.list(path, tag, opts?.signal)))).flat();
      const out = emptySecretMap();
      for (const name of new Set(names)) {
        const v = await this.byType(name, 0, opts?.signal);
        if (v !== '') out[name] = enc.encode(v);
      }
      return out;
    } catch (err) {
      this.fail('find', undefined, err);
    }
  }

  /** The item's type and tags, or undefined when it does not exist (a 404, or an answer
   *  without item_name, which ESO reads as absent). */
  private async describe(name: string, signal?: AbortSignal): Promise<Described | undefined> {
    try {
      const item = await this.call('describe item', '/describe-item', { name }, { signal, key: name });
      if (!isJsonObject(item) || typeof item.item_name !== 'string') return undefined;
      const tags = Array.isArray(item.item_tags) ? (item.item_tags as unknown[]).filter((x): x is string => typeof x === 'string') : [];
      return { type: String(item.item_type), tags };
    } catch (err) {
      if (err instanceof ProviderError && err.code === 'NotFound') return undefined;
      throw err;
    }
  }

  /** The current value of a static secret a push may write; other item types are refused. */
  private async pushable(name: string, signal?: AbortSignal): Promise<{ item: Described; value: string } | undefined> {
    const item = await this.describe(name, signal);
    if (!item) return undefined;
    if (item.type !== 'STATIC_SECRET') throw new ProviderError('Unsupported', this.ctx.storeId, `only static secrets can be pushed to (the item is a ${item.type.slice(0, 32)})`, name);
    return { item, value: await this.byType(name, 0, signal) };
  }

  /** ESO's PushSecret: the value, or with `property` that key of the item's JSON object; a
   *  new item is created tagged; an unchanged value writes nothing (no new version). */
  async pushSecret(value: Uint8Array, ref: PushRemoteRef, opts?: CallOptions): Promise<void> {
    const name = ref.remoteKey;
    const o = { signal: opts?.signal, key: name };
    try {
      const current = await this.pushable(name, opts?.signal);
      const text = Buffer.from(value).toString('utf8');
      const next = ref.property ? guard({ storeId: this.ctx.storeId, key: name }, () => setProperty(current?.value, ref.property!, text, 'key')) : text;
      if (current?.value === next) return;
      if (current) await this.call('update secret value', '/update-secret-val', { name, value: next }, o);
      else await this.call('create secret', '/create-secret', { name, value: next, tags: [MANAGED_TAG] }, o);
    } catch (err) {
      this.fail('push secret', name, err);
    }
  }

  /** ESO's DeleteSecret: only an item carrying MANAGED_TAG; with `property`, that key (the
   *  item goes when no key is left). Absent: nothing to do. */
  async deleteSecret(ref: PushRemoteRef, opts?: CallOptions): Promise<void> {
    const name = ref.remoteKey;
    const o = { signal: opts?.signal, key: name };
    try {
      const item = await this.describe(name, opts?.signal);
      if (!item?.tags.includes(MANAGED_TAG)) return;
      if (ref.property) {
        const current = await this.pushable(name, opts?.signal);
        if (!current) return;
        const left = guard({ storeId: this.ctx.storeId, key: name }, () => deleteProperty(current.value, ref.property!, 'key'));
        if (!left.changed) return;
        if (left.value !== undefined) return void (await this.call('update secret value', '/update-secret-val', { name, value: left.value }, o));
      }
      await this.call('delete item', '/delete-item', { name }, o);
    } catch (err) {
      this.fail('delete secret', name, err);
    }
  }

  async secretExists(ref: PushRemoteRef, opts?: CallOptions): Promise<boolean> {
    try {
      const current = await this.pushable(ref.remoteKey, opts?.signal);
      return current !== undefined && (!ref.property || hasProperty(current.value, ref.property, 'key'));
    } catch (err) {
      this.fail('find secret', ref.remoteKey, err);
    }
  }

  /** The store authenticates (ESO only checks the URL is reachable; a token proves more). */
  async validate(opts?: CallOptions): Promise<void> {
    try {
      await this.currentToken(opts?.signal, true);
    } catch (err) {
      this.fail('validate', undefined, err);
    }
  }

  async close(): Promise<void> {
    this.token = undefined;
  }
}

/** A rotated secret's value as ESO reads it: `value.payload` raw, else `value.target_value`
 *  or `value` as JSON, else the whole answer as JSON. */
export function rotatedValue(v: unknown): string {
  if (!isJsonObject(v) || !Object.hasOwn(v, 'value')) return stringifyJson(v);
  const inner = v.value;
  if (!isJsonObject(inner)) throw new RemoteRefError('Akeyless\'s rotated secret value is not an object');
  if (Object.hasOwn(inner, 'payload')) return typeof inner.payload === 'string' ? inner.payload : stringifyJson(inner.payload);
  return stringifyJson(Object.hasOwn(inner, 'target_value') ? inner.target_value : inner);
}

export const provider = defineProvider<AkeylessProvider>(meta, async (ctx, spec) => {
  const ca = await storeCa(ctx, 'akeyless', spec.caBundle, spec.caProvider);
  return new AkeylessClient(ctx, spec, ca);
});

export default provider;
