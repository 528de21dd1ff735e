// The `conjur` provider (ESO's `spec.provider.conjur`): CyberArk Conjur's documented REST API
// (docs.cyberark.com, Conjur Open Source / Secrets Manager REST API), the calls ESO's store
// makes through conjur-api-go: authenticate (POST /authn/{account}/{login}/authenticate with
// the API key, or POST /authn-jwt/{service}/{account}[/{host}]/authenticate with `jwt=`) → a
// short-lived access token, sent as `Authorization: Token token="<base64>"`; one variable
// (GET /secrets/{account}/variable/{id}); find over the variables the identity can see (GET
// /resources/{account}?kind=variable, 100 a page) read in batches (GET
// /secrets?variable_ids=…). The URL is the spec's, so the address policy applies (SECURITY.md,
// "The controller's network boundary"). CyberArk publishes no maintained Node SDK for Conjur;
// the REST API is small and documented. docs/providers/conjur.md.
import type { ConjurProvider } from '../../api/types.js';
import { defineProvider, ReadOnlyClient } from '../define.js';
import { guard, refuseVersionAndMetadata, RemoteRefError, toProviderError } from '../errors.js';
import { classifyHttp, statusCode, storeCa } from '../http-store.js';
import { httpCall } from '../../egress/http.js';
import { parseJson, selectProperty, valueAsMap } from '../json-path.js';
import { isJsonObject } from '../json-text.js';
import { findNameTest } from '../regexp.js';
import { emptySecretMap, ProviderError, type CallOptions, type FindRef, type ProviderContext, type RemoteRef, type SecretKeySelector, type SecretMap, type SecretsClient } from '../types.js';
import { meta } from './meta.js';
import { jwtRef, validateSpec } from './spec.js';

export { validateSpec };

/** Conjur access tokens live 8 minutes; one is reused this long (a 401 authenticates again). */
export const TOKEN_REUSE_MS = 5 * 60_000;
/** Variables listed per page (ESO's page size). */
export const PAGE_SIZE = 100;
/** At most this many pages (10 000 variables) are listed for one find: bounded work. */
const MAX_PAGES = 100;
/** Variables read per batch request, so the URL stays short. */
export const BATCH_SIZE = 50;

/** A variable's name from its resource id `account:variable:name` (ESO's trim). */
export function variableName(id: string): string {
  const parts = id.split(':');
  return parts.length >= 3 ? parts.slice(2).join(':') : parts[parts.length - 1]!;
}

class ConjurClient extends ReadOnlyClient implements SecretsClient {
  private readonly base: string;
  private readonly account: string;
  private token?: Promise<{ value: string; until: number }>;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly spec: ConjurProvider,
    private readonly ca: string | undefined,
  ) {
    super({ storeId: ctx.storeId, provider: 'conjur' });
    this.base = spec.url.replace(/\/+$/, '');
    this.account = (spec.auth.apikey ?? spec.auth.jwt)!.account;
  }

  private send(method: string, path: string, opts: { body?: string; headers?: Record<string, string>; signal?: AbortSignal }) {
    return httpCall({
      url: new URL(`${this.base}${path}`), method, headers: opts.headers, ...(opts.body === undefined ? {} : { body: opts.body }),
      ca: this.ca, timeoutMs: this.ctx.timeoutMs, policy: this.ctx.addresses, signal: opts.signal,
    });
  }

  private async credential(r: { name: string; key?: string; namespace?: string }, what: string): Promise<string> {
    const ref: SecretKeySelector = { name: r.name, key: r.key ?? '', ...(r.namespace ? { namespace: r.namespace } : {}) };
    const v = Buffer.from(await this.ctx.readCredential(ref)).toString('utf8').trim();
    if (!v) throw new ProviderError('AuthFailed', this.ctx.storeId, `${what}: the Secret's value is empty`);
    return v;
  }

  /** The authenticate request of the store's auth kind (path and body). */
  private async authRequest(): Promise<{ path: string; body: string; type: string }> {
    const e = encodeURIComponent;
    const { apikey, jwt } = this.spec.auth;
    if (apikey) {
      const login = await this.credential(apikey.userRef, 'conjur.auth.apikey.userRef');
      const key = await this.credential(apikey.apiKeyRef, 'conjur.auth.apikey.apiKeyRef');
      return { path: `/authn/${e(apikey.account)}/${e(login)}/authenticate`, body: key, type: 'text/plain' };
    }
    const j = jwt!;
    const token = j.secretRef
      ? await this.credential(jwtRef(j.secretRef), 'conjur.auth.jwt.secretRef')
      : await this.ctx.serviceAccountToken(j.serviceAccountRef?.audiences?.[0]);
    const host = j.hostId ? `/${e(j.hostId)}` : '';
    return { path: `/authn-jwt/${e(j.serviceID)}/${e(j.account)}${host}/authenticate`, body: `jwt=${e(token)}`, type: 'application/x-www-form-urlencoded' };
  }

  private async login(signal?: AbortSignal): Promise<{ value: string; until: number }> {
    const req = await this.authRequest();
    const res = await this.send('POST', req.path, { body: req.body, headers: { 'Content-Type': req.type, 'Accept-Encoding': 'base64' }, signal });
    if (res.status !== 200) throw new ProviderError(res.status === 401 ? 'AuthFailed' : statusCode(res.status), this.ctx.storeId, `Conjur authenticate answered HTTP ${res.status}`);
    const text = res.body.toString('utf8').trim();
    if (!text) throw new ProviderError('AuthFailed', this.ctx.storeId, 'Conjur\'s authenticate answer has no token');
    // Asked for base64; a server that sends the JSON token instead gets it encoded here.
    const value = text.startsWith('{') ? Buffer.from(text).toString('base64') : text;
    return { value, until: Date.now() + TOKEN_REUSE_MS };
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

  /** An authenticated GET; one new authentication after a 401. */
  private async get(op: string, path: string, opts: { signal?: AbortSignal; key?: string }): Promise<Buffer> {
    const call = async (renew: boolean) => this.send('GET', path, { headers: { Authorization: `Token token="${await this.currentToken(opts.signal, renew)}"` }, signal: opts.signal });
    let res = await call(false);
    if (res.status === 401) res = await call(true);
    if (res.status !== 200) throw new ProviderError(statusCode(res.status), this.ctx.storeId, `Conjur ${op} answered HTTP ${res.status}`, opts.key);
    return res.body;
  }

  private fail(op: string, key: string | undefined, err: unknown): never {
    throw toProviderError(err, { storeId: this.ctx.storeId, op, key }, classifyHttp);
  }

  private async value(ref: RemoteRef, signal?: AbortSignal): Promise<Uint8Array> {
    refuseVersionAndMetadata('conjur', this.ctx.storeId, ref);
    try {
      return await this.get('retrieve secret', `/secrets/${encodeURIComponent(this.account)}/variable/${encodeURIComponent(ref.key)}`, { signal, key: ref.key });
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

  /** The names of the variables the identity can see that `keep` accepts, page by page. */
  private async variables(keep: (name: string, annotations: Map<string, string>) => boolean, signal?: AbortSignal): Promise<string[]> {
    const out: string[] = [];
    for (let page = 0; ; page++) {
      if (page === MAX_PAGES) throw new ProviderError('Unsupported', this.ctx.storeId, `find lists at most ${MAX_PAGES * PAGE_SIZE} variables; narrow the identity's permissions`);
      const body = await this.get('list resources', `/resources/${encodeURIComponent(this.account)}?kind=variable&limit=${PAGE_SIZE}&offset=${page * PAGE_SIZE}`, { signal });
      const list = guard({ storeId: this.ctx.storeId, op: 'list resources' }, () => {
        const v = parseJson(body);
        if (!Array.isArray(v)) throw new RemoteRefError('Conjur\'s resource list is not a JSON array');
        return v as unknown[];
      });
      for (const r of list) {
        if (!isJsonObject(r) || typeof r.id !== 'string') continue;
        const annotations = new Map<string, string>();
        for (const a of Array.isArray(r.annotations) ? (r.annotations as unknown[]) : []) {
          if (isJsonObject(a) && typeof a.name === 'string' && typeof a.value === 'string') annotations.set(a.name, a.value);
        }
        const name = variableName(r.id);
        if (keep(name, annotations)) out.push(name);
      }
      if (list.length < PAGE_SIZE) return out;
    }
  }

  /** Values by variable name, read in batches (GET /secrets?variable_ids=…). */
  private async batch(names: string[], signal?: AbortSignal): Promise<SecretMap> {
    const out = emptySecretMap();
    for (let i = 0; i < names.length; i += BATCH_SIZE) {
      const ids = names.slice(i, i + BATCH_SIZE).map((n) => encodeURIComponent(`${this.account}:variable:${n}`)).join(',');
      const body = await this.get('batch retrieve', `/secrets?variable_ids=${ids}`, { signal });
      const values = guard({ storeId: this.ctx.storeId, op: 'batch retrieve' }, () => {
        const v = parseJson(body);
        if (!isJsonObject(v)) throw new RemoteRefError('Conjur\'s batch answer is not a JSON object');
        return v;
      });
      for (const [id, value] of Object.entries(values)) if (typeof value === 'string') out[variableName(id)] = new TextEncoder().encode(value);
    }
    return out;
  }

  /** ESO's GetAllSecrets: variables whose name matches the regexp and whose annotations
   *  carry every tag, keyed by their name without `account:variable:`. */
  async getAllSecrets(find: FindRef, opts?: CallOptions): Promise<SecretMap> {
    if (find.path) throw new ProviderError('Unsupported', this.ctx.storeId, 'find.path is not supported by the conjur provider (use find.name)');
    const matches = findNameTest(find, this.ctx.storeId);
    const tags = Object.entries(find.tags ?? {});
    try {
      const names = await this.variables((name, ann) => matches(name) && tags.every(([k, v]) => ann.get(k) === v), opts?.signal);
      return await this.batch(names, opts?.signal);
    } catch (err) {
      this.fail('find', undefined, err);
    }
  }

  /** The store authenticates (ESO's Validate checks nothing; a token proves the credentials). */
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

export const provider = defineProvider<ConjurProvider>(meta, async (ctx, spec) => {
  const ca = await storeCa(ctx, 'conjur', spec.caBundle, spec.caProvider);
  return new ConjurClient(ctx, spec, ca);
});

export default provider;
