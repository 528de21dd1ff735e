// The `infisical` provider (ESO's `spec.provider.infisical`): Infisical's documented REST API
// (infisical.com/docs/api-reference), the calls ESO's Infisical store makes through the Go SDK:
// a machine-identity login (POST /v1/auth/<kind>-auth/login → a Bearer access token), one
// secret (GET /v3/secrets/raw/{name}), the scope's secrets (GET /v3/secrets/raw), each with
// workspaceSlug/environment/secretPath as ESO's secretsScope sets them; PushSecret as ESO's
// store does it: the project's id by its slug (GET /v1/projects/slug/{slug}, then the older
// /v1/workspace/slug/{slug}), POST / PATCH / DELETE /v3/secrets/raw/{name} with workspaceId,
// environment, secretPath and type shared. The base is the spec's
// `hostAPI` with `/api` appended unless present (as the SDK does), so the address policy
// applies. Not `@infisical/sdk`: it pins a second copy of the AWS credential chain and ships
// the TypeScript compiler as a runtime dependency. docs/providers/infisical.md.
import type { InfisicalProvider } from '../../api/types.js';
import { defineProvider } from '../define.js';
import { guard, refuseVersionAndMetadata, RemoteRefError, toProviderError } from '../errors.js';
import { classifyHttp, statusCode, storeCa } from '../http-store.js';
import { httpCall, type HttpAnswer } from '../../egress/http.js';
import { deleteProperty, hasProperty, parseJson, selectProperty, setProperty, valueAsMap } from '../json-path.js';
import { isJsonObject } from '../json-text.js';
import { findNameTest } from '../regexp.js';
import { emptySecretMap, ProviderError, type CallOptions, type FindRef, type ProviderContext, type PushRemoteRef, type RemoteRef, type SecretMap, type SecretsClient } from '../types.js';
import { meta } from './meta.js';
import { AUTH_KINDS, authKind, DEFAULT_HOST_API, validateSpec, type AuthKind } from './spec.js';

export { validateSpec };

/** The login route and body of each auth kind that exchanges credentials for a token. */
const LOGIN: Record<Exclude<AuthKind, 'tokenAuthCredentials'>, { path: string; body: (c: Record<string, string>) => object }> = {
  universalAuthCredentials: { path: '/v1/auth/universal-auth/login', body: (c) => ({ clientId: c.clientId, clientSecret: c.clientSecret }) },
  jwtAuthCredentials: { path: '/v1/auth/jwt-auth/login', body: (c) => ({ identityId: c.identityId, jwt: c.jwt }) },
  ldapAuthCredentials: { path: '/v1/auth/ldap-auth/login', body: (c) => ({ identityId: c.identityId, username: c.ldapUsername, password: c.ldapPassword }) },
};

/** A token is renewed this long before Infisical says it expires. */
const EXPIRY_MARGIN_MS = 30_000;
const enc = new TextEncoder();

/** The API base: `hostAPI` ending in `/api` (the SDK's rule: appended when absent). */
export function apiBase(hostAPI: string | undefined): string {
  const host = (hostAPI || DEFAULT_HOST_API).replace(/\/+$/, '');
  return host.endsWith('/api') ? host : `${host}/api`;
}

/** ESO's reading of a key: a name in `secretsPath`, or an absolute `/folder/…/NAME`. */
export function secretAddress(defaultPath: string, key: string): { path: string; name: string } {
  if (!key.includes('/')) return { path: defaultPath, name: key };
  if (!key.startsWith('/')) throw new RemoteRefError('a key naming a folder must be an absolute path (starting with /)', 'InvalidSpec');
  const i = key.lastIndexOf('/');
  if (i === key.length - 1) throw new RemoteRefError('the key names a folder, not a secret', 'InvalidSpec');
  return { path: key.slice(0, i) || '/', name: key.slice(i + 1) };
}

interface Token {
  value: string;
  /** Epoch ms; Infinity for a static access token. */
  expiresAt: number;
  /** Obtained by a login (revoked on close), not the store's own access token. */
  obtained: boolean;
}

/** Where a pushed key lives: its folder and name, and the key as the user wrote it. */
interface Address {
  path: string;
  name: string;
  key: string;
}

interface RawSecret {
  secretKey?: unknown;
  secretValue?: unknown;
}

/** The routes of "get project by slug", newest first (ESO tries them in this order: the
 *  route moved between Infisical versions). */
const PROJECT_BY_SLUG = ['/v1/projects/slug/', '/v1/workspace/slug/'];

class InfisicalClient implements SecretsClient {
  private readonly base: string;
  private token?: Promise<Token>;
  /** The project's id, which the write routes need (the reads take the slug). */
  private projectId?: string;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly spec: InfisicalProvider,
    private readonly ca: string | undefined,
  ) {
    this.base = apiBase(spec.hostAPI);
  }

  private get scope() {
    const s = this.spec.secretsScope;
    return { path: s.secretsPath || '/', recursive: s.recursive ?? false, expand: s.expandSecretReferences ?? true };
  }

  private send(req: { method: string; path: string; query?: Record<string, string>; body?: object; bearer?: string; signal?: AbortSignal }): Promise<HttpAnswer> {
    const qs = req.query ? `?${new URLSearchParams(req.query).toString()}` : '';
    return httpCall({
      url: new URL(`${this.base}${req.path}${qs}`), method: req.method,
      headers: { Accept: 'application/json', ...(req.body ? { 'Content-Type': 'application/json' } : {}), ...(req.bearer ? { Authorization: `Bearer ${req.bearer}` } : {}) },
      ...(req.body ? { body: JSON.stringify(req.body) } : {}),
      ca: this.ca, timeoutMs: this.ctx.timeoutMs, policy: this.ctx.addresses, signal: req.signal,
    });
  }

  private async readCredentials(kind: AuthKind, fields: readonly string[]): Promise<Record<string, string>> {
    const creds = this.spec.auth[kind] as Record<string, { name: string; key?: string; namespace?: string }>;
    const out: Record<string, string> = {};
    for (const f of fields) {
      const r = creds[f]!;
      out[f] = Buffer.from(await this.ctx.readCredential({ name: r.name, key: r.key ?? '', ...(r.namespace ? { namespace: r.namespace } : {}) })).toString('utf8').trim();
      if (!out[f]) throw new ProviderError('AuthFailed', this.ctx.storeId, `infisical.auth.${kind}.${f}: the Secret's value is empty`);
    }
    return out;
  }

  /** The store's token: its own access token, or a machine-identity login (ESO's NewClient). */
  private async obtain(signal?: AbortSignal): Promise<Token> {
    const kind = authKind(this.spec.auth);
    if (kind === 'tokenAuthCredentials') {
      return { value: (await this.readCredentials(kind, AUTH_KINDS[kind])).accessToken!, expiresAt: Infinity, obtained: false };
    }
    const login = LOGIN[kind];
    const res = await this.send({ method: 'POST', path: login.path, body: login.body(await this.readCredentials(kind, AUTH_KINDS[kind])), signal });
    if (res.status !== 200) throw new ProviderError(res.status === 400 ? 'AuthFailed' : statusCode(res.status), this.ctx.storeId, `Infisical login (${kind}) answered HTTP ${res.status}`);
    return guard({ storeId: this.ctx.storeId, op: 'login' }, () => {
      const v = parseJson(res.body);
      if (!isJsonObject(v) || typeof v.accessToken !== 'string' || v.accessToken === '') throw new RemoteRefError('Infisical\'s login answer has no accessToken');
      const ttl = typeof v.expiresIn === 'number' && v.expiresIn > 0 ? v.expiresIn * 1000 : 60_000;
      return { value: v.accessToken, expiresAt: Date.now() + ttl - Math.min(EXPIRY_MARGIN_MS, ttl / 2), obtained: true };
    });
  }

  /** The cached token, renewed near its expiry; concurrent callers share one login. */
  private async currentToken(signal?: AbortSignal, renew = false): Promise<Token> {
    const cached = this.token ? await this.token.catch(() => undefined) : undefined;
    if (!renew && cached && cached.expiresAt > Date.now()) return cached;
    const p = this.obtain(signal);
    this.token = p;
    p.catch(() => {
      if (this.token === p) this.token = undefined;
    });
    return p;
  }

  /** An authenticated GET. */
  private get(op: string, path: string, query: Record<string, string>, opts: { signal?: AbortSignal; key?: string }): Promise<unknown> {
    return this.call({ method: 'GET', op, path, query }, opts);
  }

  /** An authenticated call; a 401 on a token that a login obtained logs in once more. */
  private async call({ op, ...req }: { method: string; op: string; path: string; query?: Record<string, string>; body?: object }, opts: { signal?: AbortSignal; key?: string }): Promise<unknown> {
    let token = await this.currentToken(opts.signal);
    let res = await this.send({ ...req, bearer: token.value, signal: opts.signal });
    if (res.status === 401 && token.obtained) {
      token = await this.currentToken(opts.signal, true);
      res = await this.send({ ...req, bearer: token.value, signal: opts.signal });
    }
    if (res.status !== 200) throw new ProviderError(this.failureCode(res), this.ctx.storeId, `Infisical ${op} answered HTTP ${res.status}`, opts.key);
    return guard({ storeId: this.ctx.storeId, op, key: opts.key }, () => parseJson(res.body));
  }

  /** Infisical answers an unknown secret with 404, and older servers with 400 "Secret not
   *  found" (ESO reads both as absent); only that message is read from an error body. */
  private failureCode(res: HttpAnswer): ProviderError['code'] {
    if (res.status !== 400) return statusCode(res.status);
    try {
      const v = parseJson(res.body);
      return isJsonObject(v) && v.message === 'Secret not found' ? 'NotFound' : 'Unknown';
    } catch {
      return 'Unknown';
    }
  }

  private fail(op: string, key: string | undefined, err: unknown): never {
    throw toProviderError(err, { storeId: this.ctx.storeId, op, key }, classifyHttp);
  }

  private async value(ref: RemoteRef, signal?: AbortSignal): Promise<Uint8Array> {
    refuseVersionAndMetadata('infisical', this.ctx.storeId, ref);
    const s = this.spec.secretsScope;
    try {
      const { path, name } = guard({ storeId: this.ctx.storeId, key: ref.key }, () => secretAddress(this.scope.path, ref.key));
      const v = await this.get('get secret', `/v3/secrets/raw/${encodeURIComponent(name)}`, {
        workspaceSlug: s.projectSlug, environment: s.environmentSlug, secretPath: path,
        expandSecretReferences: String(this.scope.expand), include_imports: 'true', type: 'shared',
      }, { signal, key: ref.key });
      const secret = isJsonObject(v) && isJsonObject(v.secret) ? v.secret : undefined;
      if (typeof secret?.secretValue !== 'string') throw new ProviderError('Unknown', this.ctx.storeId, 'Infisical answered without secret.secretValue', ref.key);
      return enc.encode(secret.secretValue);
    } catch (err) {
      this.fail('get secret', ref.key, err);
    }
  }

  async getSecret(ref: RemoteRef, opts?: CallOptions): Promise<Uint8Array> {
    return selectProperty(await this.value(ref, opts?.signal), ref, this.ctx.storeId);
  }

  /** A secret holding a JSON object, one key per member (ESO's GetSecretMap). */
  async getSecretMap(ref: RemoteRef, opts?: CallOptions): Promise<SecretMap> {
    return valueAsMap(await this.value(ref, opts?.signal), ref, this.ctx.storeId);
  }

  /** The scope's secrets, imported ones first so the folder's own win (ESO's GetSecretsV3). */
  private async list(signal?: AbortSignal): Promise<Map<string, string>> {
    const s = this.spec.secretsScope;
    const v = await this.get('list secrets', '/v3/secrets/raw', {
      workspaceSlug: s.projectSlug, environment: s.environmentSlug, secretPath: this.scope.path,
      recursive: String(this.scope.recursive), expandSecretReferences: String(this.scope.expand), include_imports: 'true',
    }, { signal });
    const out = new Map<string, string>();
    const add = (list: unknown) => {
      if (!Array.isArray(list)) return;
      for (const e of list as RawSecret[]) if (typeof e?.secretKey === 'string' && typeof e.secretValue === 'string') out.set(e.secretKey, e.secretValue);
    };
    if (isJsonObject(v)) {
      if (Array.isArray(v.imports)) for (const i of v.imports as unknown[]) add(isJsonObject(i) ? i.secrets : undefined);
      add(v.secrets);
    }
    return out;
  }

  /** ESO's GetAllSecrets: the scope's secrets by name regexp and name prefix (`path`). */
  async getAllSecrets(find: FindRef, opts?: CallOptions): Promise<SecretMap> {
    if (find.tags && Object.keys(find.tags).length > 0) throw new ProviderError('Unsupported', this.ctx.storeId, 'find.tags is not supported by the infisical provider');
    const matches = findNameTest(find, this.ctx.storeId);
    let all: Map<string, string>;
    try {
      all = await this.list(opts?.signal);
    } catch (err) {
      this.fail('list secrets', undefined, err);
    }
    const out = emptySecretMap();
    for (const [k, v] of all) if (matches(k) && (find.path === undefined || k.startsWith(find.path))) out[k] = enc.encode(v);
    return out;
  }

  /** The stored value of the secret a push writes (references not expanded, imports not
   *  included: the push writes this folder's own secret), or undefined when absent. */
  private async stored({ path, name, key }: Address, signal?: AbortSignal): Promise<string | undefined> {
    const s = this.spec.secretsScope;
    try {
      const v = await this.get('get secret', `/v3/secrets/raw/${encodeURIComponent(name)}`, {
        workspaceSlug: s.projectSlug, environment: s.environmentSlug, secretPath: path, expandSecretReferences: 'false', include_imports: 'false', type: 'shared',
      }, { signal, key });
      const secret = isJsonObject(v) && isJsonObject(v.secret) ? v.secret : undefined;
      if (typeof secret?.secretValue !== 'string') throw new ProviderError('Unknown', this.ctx.storeId, 'Infisical answered without secret.secretValue', key);
      return secret.secretValue;
    } catch (err) {
      if (err instanceof ProviderError && err.code === 'NotFound') return undefined;
      throw err;
    }
  }

  /** The project's id by its slug (one lookup per client; a 404 tries the older route). */
  private async project(signal?: AbortSignal): Promise<string> {
    if (this.projectId) return this.projectId;
    const slug = encodeURIComponent(this.spec.secretsScope.projectSlug);
    for (const [i, route] of PROJECT_BY_SLUG.entries()) {
      try {
        const v = await this.get('get project by slug', `${route}${slug}`, {}, { signal });
        const id = isJsonObject(v) ? (v.id ?? (isJsonObject(v.project) ? v.project.id : undefined)) : undefined;
        if (typeof id !== 'string' || id === '') throw new ProviderError('Unknown', this.ctx.storeId, 'Infisical\'s project answer has no id');
        return (this.projectId = id);
      } catch (err) {
        if (!(err instanceof ProviderError && err.code === 'NotFound') || i === PROJECT_BY_SLUG.length - 1) throw err;
      }
    }
    throw new ProviderError('NotFound', this.ctx.storeId, 'no Infisical project has the scope\'s projectSlug');
  }

  private async write(method: 'POST' | 'PATCH' | 'DELETE', { path, name, key }: Address, value: string | undefined, signal?: AbortSignal): Promise<void> {
    const op = { POST: 'create secret', PATCH: 'update secret', DELETE: 'delete secret' }[method];
    const body = {
      workspaceId: await this.project(signal), environment: this.spec.secretsScope.environmentSlug, secretPath: path, type: 'shared',
      ...(value === undefined ? {} : { secretValue: value, skipMultilineEncoding: true }),
    };
    await this.call({ method, op, path: `/v3/secrets/raw/${encodeURIComponent(name)}`, body }, { signal, key });
  }

  private address(key: string): Address {
    return { ...guard({ storeId: this.ctx.storeId, key }, () => secretAddress(this.scope.path, key)), key };
  }

  /** ESO's PushSecret: the value, or with `property` a dotted path into the secret's JSON
   *  object; created when absent, updated only when it differs (no new version). */
  async pushSecret(value: Uint8Array, ref: PushRemoteRef, opts?: CallOptions): Promise<void> {
    try {
      const at = this.address(ref.remoteKey);
      const current = await this.stored(at, opts?.signal);
      const text = Buffer.from(value).toString('utf8');
      const next = ref.property ? guard({ storeId: this.ctx.storeId, key: ref.remoteKey }, () => setProperty(current, ref.property!, text, 'path')) : text;
      if (current === next) return;
      await this.write(current === undefined ? 'POST' : 'PATCH', at, next, opts?.signal);
    } catch (err) {
      this.fail('push secret', ref.remoteKey, err);
    }
  }

  /** ESO's DeleteSecret: the secret, or with `property` that path (the secret goes when
   *  nothing is left); absent is already deleted. */
  async deleteSecret(ref: PushRemoteRef, opts?: CallOptions): Promise<void> {
    try {
      const at = this.address(ref.remoteKey);
      const current = await this.stored(at, opts?.signal);
      if (current === undefined) return;
      if (ref.property) {
        const left = guard({ storeId: this.ctx.storeId, key: ref.remoteKey }, () => deleteProperty(current, ref.property!, 'path'));
        if (!left.changed) return;
        if (left.value !== undefined) return await this.write('PATCH', at, left.value, opts?.signal);
      }
      // It existed a moment ago: a 404 now is a concurrent delete (ESO reads it so too).
      await this.write('DELETE', at, undefined, opts?.signal).catch((err: unknown) => {
        if (!(err instanceof ProviderError && err.code === 'NotFound' && err.key === at.key)) throw err;
      });
    } catch (err) {
      this.fail('delete secret', ref.remoteKey, err);
    }
  }

  async secretExists(ref: PushRemoteRef, opts?: CallOptions): Promise<boolean> {
    try {
      const current = await this.stored(this.address(ref.remoteKey), opts?.signal);
      return current !== undefined && (!ref.property || hasProperty(current, ref.property, 'path'));
    } catch (err) {
      this.fail('find secret', ref.remoteKey, err);
    }
  }

  /** ESO's Validate: the identity logs in and can list the scope. */
  async validate(opts?: CallOptions): Promise<void> {
    try {
      await this.list(opts?.signal);
    } catch (err) {
      this.fail('validate', undefined, err);
    }
  }

  /** Revokes a token a login obtained (ESO's Close); the store's own access token is kept. */
  async close(): Promise<void> {
    const token = this.token ? await this.token.catch(() => undefined) : undefined;
    this.token = undefined;
    if (!token?.obtained) return;
    await this.send({ method: 'POST', path: '/v1/auth/token/revoke', body: { accessToken: token.value }, bearer: token.value }).catch(() => undefined);
  }

}

export const provider = defineProvider<InfisicalProvider>(meta, async (ctx, spec) => {
  const ca = await storeCa(ctx, 'infisical', spec.caBundle, spec.caProvider);
  return new InfisicalClient(ctx, spec, ca);
});

export default provider;
