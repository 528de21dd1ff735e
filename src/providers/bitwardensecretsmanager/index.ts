// The `bitwardensecretsmanager` provider (ESO's `spec.provider.bitwardensecretsmanager`):
// Bitwarden Secrets Manager through the Bitwarden SDK server ESO deploys beside it
// (bitwarden-sdk-server's REST API: /rest/api/1/secret and /rest/api/1/secrets, JSON bodies,
// the machine account token and the Bitwarden API/identity URLs in Warden-* headers).
// ESO's meaning: a UUID key is a secret id; another key is a secret's name, which must be
// unique in the store's project. PushSecret creates or updates (value only) that secret.
// The SDK server's URL is the spec's, so the address policy applies (SECURITY.md, "The controller's network boundary").
// docs/providers/bitwardensecretsmanager.md.
import type { BitwardenSecretsManagerProvider } from '../../api/types.js';
import { defineProvider } from '../define.js';
import { guard, refuseVersionAndMetadata, RemoteRefError, toProviderError } from '../errors.js';
import { classifyHttp, statusCode, storeCa } from '../http-store.js';
import { httpCall } from '../../egress/http.js';
import { objectToSecretMap, parseJson } from '../json-path.js';
import { isJsonObject } from '../json-text.js';
import { findNameTest } from '../regexp.js';
import { emptySecretMap, ProviderError, type CallOptions, type FindRef, type ProviderContext, type PushRemoteRef, type RemoteRef, type SecretMap, type SecretsClient } from '../types.js';
import { meta } from './meta.js';
import { DEFAULTS, validateSpec } from './spec.js';

export { validateSpec };

interface Secret {
  id: string;
  key: string;
  value: string;
  note?: string;
  organizationId?: string;
  projectId?: string | null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const enc = new TextEncoder();

class BitwardenClient implements SecretsClient {
  constructor(
    private readonly ctx: ProviderContext,
    private readonly spec: BitwardenSecretsManagerProvider,
    private readonly ca: string | undefined,
  ) {}

  private async call(op: string, req: { method: string; path: string; body: unknown }, opts: { signal?: AbortSignal; key?: string }): Promise<unknown> {
    const { method, path, body } = req;
    const c = this.spec.auth.secretRef.credentials;
    const token = Buffer.from(await this.ctx.readCredential({ name: c.name, key: c.key ?? '', ...(c.namespace ? { namespace: c.namespace } : {}) })).toString('utf8').trim();
    if (!token) throw new ProviderError('AuthFailed', this.ctx.storeId, 'the machine account access token in the store\'s Secret is empty');
    const base = (this.spec.bitwardenServerSDKURL ?? DEFAULTS.bitwardenServerSDKURL).replace(/\/+$/, '');
    const res = await httpCall({
      url: new URL(`${base}${path}`), method, body: JSON.stringify(body),
      headers: {
        'Content-Type': 'application/json', Accept: 'application/json', 'Warden-Access-Token': token,
        'Warden-Api-Url': this.spec.apiURL ?? DEFAULTS.apiURL, 'Warden-Identity-Url': this.spec.identityURL ?? DEFAULTS.identityURL,
      },
      ca: this.ca, timeoutMs: this.ctx.timeoutMs, policy: this.ctx.addresses, signal: opts.signal,
    });
    // The SDK server answers 400 for every failed SDK call (an unknown id, a refused token):
    // not NotFound, which would tell PushSecret an entry is gone. Its error text is not passed on.
    if (res.status !== 200) {
      const hint = res.status === 400 ? ' (the SDK call failed: check the access token, organizationID and the secret id)' : '';
      throw new ProviderError(statusCode(res.status), this.ctx.storeId, `Bitwarden SDK server ${op} answered HTTP ${res.status}${hint}`, opts.key);
    }
    return guard({ storeId: this.ctx.storeId, op, key: opts.key }, () => parseJson(res.body));
  }

  private secretById(id: string, signal?: AbortSignal, key?: string): Promise<Secret> {
    return this.call('get secret', { method: 'GET', path: '/rest/api/1/secret', body: { id } }, { signal, key }).then((v) => {
      if (!isJsonObject(v) || typeof v.value !== 'string') throw new ProviderError('Unknown', this.ctx.storeId, 'the Bitwarden SDK server answered without a value', key);
      return v as unknown as Secret;
    });
  }

  private async list(signal?: AbortSignal): Promise<{ id: string; key: string }[]> {
    const v = await this.call('list secrets', { method: 'GET', path: '/rest/api/1/secrets', body: { organizationID: this.spec.organizationID } }, { signal });
    const data = isJsonObject(v) ? v.data : undefined;
    return Array.isArray(data) ? (data as { id: string; key: string }[]) : [];
  }

  /** The one secret named `key` in the store's project (ESO's findSecretByRef). */
  private async byName(key: string, signal?: AbortSignal): Promise<Secret | undefined> {
    let found: Secret | undefined;
    for (const d of (await this.list(signal)).filter((x) => x.key === key)) {
      const s = await this.secretById(d.id, signal, key);
      if (s.projectId !== this.spec.projectID) continue;
      if (found) throw new ProviderError('Unknown', this.ctx.storeId, `more than one secret named "${key}" in project ${this.spec.projectID}`, key);
      found = s;
    }
    return found;
  }

  private async find(key: string, signal?: AbortSignal): Promise<Secret> {
    const s = UUID.test(key) ? await this.secretById(key, signal, key) : await this.byName(key, signal);
    if (!s) throw new ProviderError('NotFound', this.ctx.storeId, `no secret named "${key}" in project ${this.spec.projectID}`, key);
    return s;
  }

  private fail(op: string, key: string | undefined, err: unknown): never {
    throw toProviderError(err, { storeId: this.ctx.storeId, op, key }, classifyHttp);
  }

  async getSecret(ref: RemoteRef, opts?: CallOptions): Promise<Uint8Array> {
    refuseVersionAndMetadata('bitwardensecretsmanager', this.ctx.storeId, ref);
    try {
      return enc.encode((await this.find(ref.key, opts?.signal)).value);
    } catch (err) {
      this.fail('get secret', ref.key, err);
    }
  }

  async getSecretMap(ref: RemoteRef, opts?: CallOptions): Promise<SecretMap> {
    const value = await this.getSecret(ref, opts);
    return guard({ storeId: this.ctx.storeId, key: ref.key }, () => {
      const parsed = parseJson(value);
      if (!isJsonObject(parsed)) throw new RemoteRefError('the secret is not a JSON object');
      return objectToSecretMap(parsed, 'the secret');
    });
  }

  /** Every secret of the organization, keyed by id (ESO), narrowed by find.name on the id. */
  async getAllSecrets(find: FindRef, opts?: CallOptions): Promise<SecretMap> {
    if ((find.tags && Object.keys(find.tags).length > 0) || find.path) throw new ProviderError('Unsupported', this.ctx.storeId, 'find by tags or path is not supported by the bitwardensecretsmanager provider');
    const matches = findNameTest(find, this.ctx.storeId);
    try {
      const out = emptySecretMap();
      for (const d of await this.list(opts?.signal)) if (matches(d.id)) out[d.id] = enc.encode((await this.secretById(d.id, opts?.signal, d.key)).value);
      return out;
    } catch (err) {
      this.fail('list secrets', undefined, err);
    }
  }

  async pushSecret(value: Uint8Array, ref: PushRemoteRef, opts?: CallOptions): Promise<void> {
    if (ref.property) throw new ProviderError('Unsupported', this.ctx.storeId, 'remoteRef.property is not supported by the bitwardensecretsmanager provider', ref.remoteKey);
    const text = Buffer.from(value).toString('utf8');
    const { organizationID, projectID } = this.spec;
    try {
      const current = await this.byName(ref.remoteKey, opts?.signal);
      if (current?.value === text) return;
      const body = { key: ref.remoteKey, note: current?.note ?? '', organizationId: organizationID, projectIds: [projectID], value: text };
      if (current) await this.call('update secret', { method: 'PUT', path: '/rest/api/1/secret', body: { id: current.id, ...body } }, { signal: opts?.signal, key: ref.remoteKey });
      else await this.call('create secret', { method: 'POST', path: '/rest/api/1/secret', body }, { signal: opts?.signal, key: ref.remoteKey });
    } catch (err) {
      this.fail('push secret', ref.remoteKey, err);
    }
  }

  async deleteSecret(ref: PushRemoteRef, opts?: CallOptions): Promise<void> {
    try {
      const s = UUID.test(ref.remoteKey) ? { id: ref.remoteKey } : await this.byName(ref.remoteKey, opts?.signal);
      if (!s) return;
      const v = await this.call('delete secret', { method: 'DELETE', path: '/rest/api/1/secret', body: { ids: [s.id] } }, { signal: opts?.signal, key: ref.remoteKey });
      const failed = isJsonObject(v) && Array.isArray(v.data) && (v.data as { error?: unknown }[]).some((d) => d.error);
      if (failed) throw new ProviderError('Unknown', this.ctx.storeId, 'the Bitwarden SDK server could not delete the secret', ref.remoteKey);
    } catch (err) {
      this.fail('delete secret', ref.remoteKey, err);
    }
  }

  async secretExists(ref: PushRemoteRef, opts?: CallOptions): Promise<boolean> {
    try {
      return (UUID.test(ref.remoteKey) ? await this.secretById(ref.remoteKey, opts?.signal, ref.remoteKey) : await this.byName(ref.remoteKey, opts?.signal)) !== undefined;
    } catch (err) {
      if (err instanceof ProviderError && err.code === 'NotFound' && !UUID.test(ref.remoteKey)) return false;
      this.fail('find secret', ref.remoteKey, err);
    }
  }

  /** The token reaches the SDK server and the organization's list is readable. */
  async validate(opts?: CallOptions): Promise<void> {
    try {
      await this.list(opts?.signal);
    } catch (err) {
      this.fail('validate', undefined, err);
    }
  }

  async close(): Promise<void> {}

}

export const provider = defineProvider<BitwardenSecretsManagerProvider>(meta, async (ctx, spec) => {
  const ca = await storeCa(ctx, 'bitwardensecretsmanager', spec.caBundle, spec.caProvider);
  return new BitwardenClient(ctx, spec, ca);
});

export default provider;
