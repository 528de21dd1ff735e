// The `doppler` provider (ESO's `spec.provider.doppler`): Doppler's documented REST API (v3,
// docs.doppler.com/reference): GET /v3/configs/config/secret for one secret (its computed
// value), GET /v3/configs/config/secrets/download for the whole config (json, or the
// store's `format` as one file), GET /v3/me to validate. A service token (Bearer) from the
// store's Secret, read for every call. The API host is Doppler's, or the operator's
// DOPPLER_BASE_URL (ESO's variable; the process environment, never the store spec), so no
// address policy applies: a tenant cannot choose it. docs/providers/doppler.md.
import type { DopplerProvider } from '../../api/types.js';
import { defineProvider, ReadOnlyClient } from '../define.js';
import { guard, refuseVersionAndMetadata, RemoteRefError, toProviderError, unsupportedBy } from '../errors.js';
import { classifyHttp, statusCode } from '../http-store.js';
import { httpCall } from '../../egress/http.js';
import { objectToSecretMap, parseJson } from '../json-path.js';
import { isJsonObject } from '../json-text.js';
import { findNameTest } from '../regexp.js';
import { emptySecretMap, ProviderError, type CallOptions, type FindRef, type ProviderContext, type RemoteRef, type SecretMap, type SecretsClient } from '../types.js';
import { meta } from './meta.js';
import { tokenRef, validateSpec } from './spec.js';

export { validateSpec };

const DEFAULT_BASE_URL = 'https://api.doppler.com';
/** ESO's variable for another API host (a proxy, a test server). */
export const BASE_URL_ENV = 'DOPPLER_BASE_URL';
/** The key a downloaded file lands under when the store sets `format` (ESO). */
const FILE_KEY = 'DOPPLER_SECRETS_FILE';

const unsupported = (storeId: string, what: string, key?: string) => unsupportedBy('doppler', storeId, what, key);

class DopplerClient extends ReadOnlyClient implements SecretsClient {
  private readonly base: string;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly spec: DopplerProvider,
  ) {
    super({ storeId: ctx.storeId, provider: 'doppler' });
    this.base = (process.env[BASE_URL_ENV] || DEFAULT_BASE_URL).replace(/\/+$/, '');
  }

  private async call(op: string, path: string, query: Record<string, string | undefined>, opts: { signal?: AbortSignal; key?: string }): Promise<Buffer> {
    const token = Buffer.from(await this.ctx.readCredential(tokenRef(this.spec))).toString('utf8').trim();
    if (!token) throw new ProviderError('AuthFailed', this.ctx.storeId, 'the Doppler token in the store\'s Secret is empty');
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v) params.set(k, v);
    const qs = params.size > 0 ? `?${params.toString()}` : '';
    const res = await httpCall({
      url: new URL(`${this.base}${path}${qs}`), method: 'GET',
      headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
      timeoutMs: this.ctx.timeoutMs, signal: opts.signal,
    });
    if (res.status < 200 || res.status > 299) throw new ProviderError(statusCode(res.status), this.ctx.storeId, `Doppler ${op} answered HTTP ${res.status}`, opts.key);
    return res.body;
  }

  private scope(op: string, key?: string) {
    return { storeId: this.ctx.storeId, op, key };
  }

  /** The computed value of one secret (ESO's GetSecret). */
  private async secret(name: string, signal?: AbortSignal): Promise<string> {
    const body = await this.call('get secret', '/v3/configs/config/secret', { project: this.spec.project, config: this.spec.config, name }, { signal, key: name });
    return guard(this.scope('get secret', name), () => {
      const parsed = parseJson(body) as { value?: { computed?: unknown } };
      const computed = isJsonObject(parsed) && isJsonObject(parsed.value) ? parsed.value.computed : undefined;
      if (typeof computed !== 'string') throw new RemoteRefError('Doppler answered without value.computed');
      return computed;
    });
  }

  async getSecret(ref: RemoteRef, opts?: CallOptions): Promise<Uint8Array> {
    refuseVersionAndMetadata('doppler', this.ctx.storeId, ref);
    try {
      return new TextEncoder().encode(await this.secret(ref.key, opts?.signal));
    } catch (err) {
      throw toProviderError(err, this.scope('get secret', ref.key), classifyHttp);
    }
  }

  /** A secret holding a JSON object, as a map (strings raw, other values as JSON). */
  async getSecretMap(ref: RemoteRef, opts?: CallOptions): Promise<SecretMap> {
    refuseVersionAndMetadata('doppler', this.ctx.storeId, ref);
    try {
      const value = await this.secret(ref.key, opts?.signal);
      return guard(this.scope('get secret', ref.key), () => objectToSecretMap(parseJson(value), `secret "${ref.key}"`));
    } catch (err) {
      throw toProviderError(err, this.scope('get secret', ref.key), classifyHttp);
    }
  }

  /** The whole config (ESO's GetSecrets), then narrowed by `find`. */
  async getAllSecrets(find: FindRef, opts?: CallOptions): Promise<SecretMap> {
    if (find.tags && Object.keys(find.tags).length > 0) throw unsupported(this.ctx.storeId, 'find.tags');
    const matches = findNameTest(find, this.ctx.storeId);
    let all: SecretMap;
    try {
      const body = await this.call('download secrets', '/v3/configs/config/secrets/download', {
        project: this.spec.project, config: this.spec.config, format: this.spec.format ?? 'json', name_transformer: this.spec.nameTransformer,
      }, { signal: opts?.signal });
      all = this.spec.format ? Object.assign(emptySecretMap(), { [FILE_KEY]: new Uint8Array(body) }) : guard(this.scope('download secrets'), () => {
        const parsed = parseJson(body);
        if (!isJsonObject(parsed)) throw new RemoteRefError('Doppler\'s download is not a JSON object');
        return objectToSecretMap(parsed, 'the download');
      });
    } catch (err) {
      throw toProviderError(err, this.scope('download secrets'), classifyHttp);
    }
    const out = emptySecretMap();
    for (const [k, v] of Object.entries(all)) if (matches(k) && (find.path === undefined || k.startsWith(find.path))) out[k] = v;
    return out;
  }

  /** The token authenticates (GET /v3/me, ESO's Authenticate). */
  async validate(opts?: CallOptions): Promise<void> {
    try {
      await this.call('authenticate', '/v3/me', {}, { signal: opts?.signal });
    } catch (err) {
      throw toProviderError(err, this.scope('validate'), classifyHttp);
    }
  }

  async close(): Promise<void> {}

}

export const provider = defineProvider<DopplerProvider>(meta, async (ctx, spec) => new DopplerClient(ctx, spec));

export default provider;
