// The gcpsm SecretsClient: ESO v1 semantics over the official Secret Manager client.
//  read:   key = secret id (or full resource name), version = version id (default
//          `latest`), property = JSON path; dataFrom.extract = the JSON object;
//          find by name regexp, by tags (= labels, a server-side `filter`) and by path
//          (id prefix); metadataPolicy Fetch returns labels/annotations.
//  write:  push creates the secret when missing (label managed-by=external-secrets, as
//          ESO; push metadata: push-metadata.ts) and adds a version unless the value is
//          unchanged; a property is merged
//          into the JSON of the latest version; delete removes only secrets carrying that
//          label (a property delete adds a version without it).
import type { protos, SecretManagerServiceClient } from '@google-cloud/secret-manager';
import type { AuthClient } from 'google-auth-library';
import { toProviderError } from '../errors.js';
import { deleteProperty, extractProperty, hasProperty, jsonToSecretMap, setProperty } from '../json-path.js';
import { findNameTest } from '../regexp.js';
import { emptySecretMap, ProviderError, type FindRef, type ProviderContext, type PushOptions, type PushRemoteRef, type RemoteRef, type SecretMap, type SecretsClient } from '../types.js';
import { classifyGcpsm, Code, CredentialFailure, grpcCode, withRetries, type CallPolicy } from './errors.js';
import { isFullName, parentName, secretIdOf, secretName, versionName, type Scope } from './names.js';
import { sameMap, wantedMap, type GcpsmPushMetadata } from './push-metadata.js';
import { convertFoundKeys } from '../key-conversion.js';

type ISecret = protos.google.cloud.secretmanager.v1.ISecret;

export const MANAGED_BY = { key: 'managed-by', value: 'external-secrets' } as const;

const FIND_CONCURRENCY = 8;

function bytesOf(data: Uint8Array | string | null | undefined): Uint8Array {
  if (data == null) return new Uint8Array();
  return typeof data === 'string' ? new Uint8Array(Buffer.from(data, 'base64')) : new Uint8Array(data);
}

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b));

export interface ClientParts {
  sm: SecretManagerServiceClient;
  scope: Scope;
  policy: CallPolicy;
  /** The credential to check in validate(); undefined in emulator mode. */
  auth?: AuthClient | { getAccessToken(): Promise<unknown> };
}

export class GcpsmClient implements SecretsClient {
  private readonly storeId: string;

  constructor(
    private readonly ctx: ProviderContext,
    private readonly parts: ClientParts,
  ) {
    this.storeId = ctx.storeId;
  }

  /** One API call under the store's deadline and retry policy, errors mapped. */
  private async call<T>(what: string, key: string | undefined, idempotent: boolean, fn: (opts: { timeout: number; retry: null }) => Promise<T>): Promise<T> {
    try {
      return await withRetries(this.parts.policy, idempotent, (timeout) => fn({ timeout, retry: null }));
    } catch (err) {
      throw toProviderError(err, { storeId: this.storeId, op: what, key }, classifyGcpsm);
    }
  }

  private helperError(err: unknown, key: string): never {
    throw toProviderError(err, { storeId: this.storeId, key });
  }

  /** The payload of a version (default: latest). */
  private async access(key: string, version?: string): Promise<Uint8Array> {
    const name = versionName(this.parts.scope, key, version);
    const [resp] = await this.call('access', key, true, (o) => this.parts.sm.accessSecretVersion({ name }, o));
    return bytesOf(resp.payload?.data);
  }

  /** The latest value, or undefined when the secret or its versions are absent. */
  private async latest(key: string): Promise<Uint8Array | undefined> {
    try {
      return await this.access(key);
    } catch (err) {
      if (err instanceof ProviderError && err.code === 'NotFound') return undefined;
      throw err;
    }
  }

  private async secret(key: string): Promise<ISecret | undefined> {
    const name = secretName(this.parts.scope, key);
    try {
      const [s] = await this.call('get secret', key, true, (o) => this.parts.sm.getSecret({ name }, o));
      return s;
    } catch (err) {
      if (err instanceof ProviderError && grpcCode(err.cause) === Code.NOT_FOUND) return undefined;
      throw err;
    }
  }

  async getSecret(ref: RemoteRef): Promise<Uint8Array> {
    if (ref.metadataPolicy === 'Fetch') return this.metadata(ref);
    const value = await this.access(ref.key, ref.version);
    if (!ref.property) return value;
    try {
      return extractProperty(value, ref.property);
    } catch (err) {
      return this.helperError(err, ref.key);
    }
  }

  /** metadataPolicy Fetch: `labels`/`annotations` (or one of them, or one key) as ESO. */
  private async metadata(ref: RemoteRef): Promise<Uint8Array> {
    const s = await this.secret(ref.key);
    if (!s) throw new ProviderError('NotFound', this.storeId, 'secret not found', ref.key);
    const meta = { annotations: { ...(s.annotations ?? {}) }, labels: { ...(s.labels ?? {}) } };
    const p = ref.property ?? '';
    if (p === '') return Buffer.from(JSON.stringify(meta));
    if (p === 'labels' || p === 'annotations') return Buffer.from(JSON.stringify(meta[p]));
    const m = /^(labels|annotations)\.(.+)$/.exec(p);
    if (!m) throw new ProviderError('Unknown', this.storeId, `metadata property "${p}" must start with labels or annotations`, ref.key);
    const v = meta[m[1] as 'labels' | 'annotations'][m[2]!];
    if (v === undefined) throw new ProviderError('NotFound', this.storeId, `${m[1]!.slice(0, -1)} "${m[2]}" not found`, ref.key);
    return Buffer.from(v);
  }

  async getSecretMap(ref: RemoteRef): Promise<SecretMap> {
    if (ref.metadataPolicy === 'Fetch') return this.toMap(await this.metadata(ref), ref.key);
    return this.toMap(await this.access(ref.key, ref.version), ref.key, ref.property);
  }

  private toMap(value: Uint8Array, key: string, property?: string): SecretMap {
    try {
      return jsonToSecretMap(value, property);
    } catch (err) {
      return this.helperError(err, key);
    }
  }

  /** ListSecrets with the server-side filter of `find` (labels, name substring). */
  private async list(find: FindRef): Promise<string[]> {
    const terms = Object.entries(find.tags ?? {}).map(([k, v]) => `labels.${k}=${v}`);
    if (find.path) terms.push(`name:${find.path}`);
    const request: protos.google.cloud.secretmanager.v1.IListSecretsRequest = { parent: parentName(this.parts.scope) };
    if (terms.length > 0) request.filter = terms.join(' ');
    return this.call('list secrets', undefined, true, async (o) => {
      const ids: string[] = [];
      for await (const s of this.parts.sm.listSecretsAsync(request, o)) ids.push(secretIdOf(s.name ?? ''));
      return ids;
    });
  }

  async getAllSecrets(find: FindRef): Promise<SecretMap> {
    const hasTags = !!find.tags && Object.keys(find.tags).length > 0;
    if (!find.name && !hasTags && !find.path) {
      throw new ProviderError('InvalidSpec', this.storeId, 'dataFrom.find needs name, tags or path');
    }
    const re = findNameTest(find, this.storeId);
    const ids = (await this.list(find)).filter((id) => (!find.path || id.startsWith(find.path)) && re(id));
    const out = emptySecretMap();
    for (let i = 0; i < ids.length; i += FIND_CONCURRENCY) {
      const batch = ids.slice(i, i + FIND_CONCURRENCY);
      const values = await Promise.all(batch.map((id) => this.latest(id)));
      batch.forEach((id, j) => {
        // A secret without an enabled version (e.g. being created) is left out.
        if (values[j] !== undefined) out[id] = values[j]!;
        else this.ctx.logger.debug({ key: id }, 'gcpsm find: secret has no accessible version, skipped');
      });
    }
    // ESO's gcpsm provider converts found keys itself: a rewrite sees converted keys.
    return convertFoundKeys(find.conversionStrategy, out);
  }

  /** Creates the secret, labelled as managed, with the push metadata. */
  private async createSecret(remoteKey: string, md: GcpsmPushMetadata): Promise<void> {
    const full = secretName(this.parts.scope, remoteKey);
    const parent = isFullName(remoteKey) ? full.replace(/\/secrets\/[^/]+$/, '') : parentName(this.parts.scope);
    const secret: ISecret = { labels: { ...(md.labels ?? {}), [MANAGED_BY.key]: MANAGED_BY.value }, ...(md.annotations ? { annotations: { ...md.annotations } } : {}) };
    const cmek = md.cmekKeyName ? { customerManagedEncryption: { kmsKeyName: md.cmekKeyName } } : {};
    // Regional secrets take no replication policy; global ones need one.
    if (!/\/locations\//.test(parent)) {
      secret.replication = md.replicationLocation ? { userManaged: { replicas: [{ location: md.replicationLocation, ...cmek }] } } : { automatic: { ...cmek } };
    } else if (md.replicationLocation || md.cmekKeyName) {
      throw new ProviderError('Unsupported', this.storeId, 'metadata.spec.replicationLocation and cmekKeyName apply to global secrets; a regional secret has its location already', remoteKey);
    }
    try {
      await this.call('create secret', remoteKey, false, (o) => this.parts.sm.createSecret({ parent, secretId: secretIdOf(full), secret }, o));
    } catch (err) {
      // Created concurrently by another writer: fine.
      if (!(err instanceof ProviderError && grpcCode(err.cause) === Code.ALREADY_EXISTS)) throw err;
    }
  }

  /** As ESO: a whole value is pushed only into secrets ESI/ESO manage (label
   *  managed-by=external-secrets); pushing a property adopts the secret (adds the label).
   *  Push metadata sets labels and annotations (mergePolicy Replace or Merge). */
  private async prepareSecret(ref: PushRemoteRef, md: GcpsmPushMetadata): Promise<void> {
    const s = await this.secret(ref.remoteKey);
    if (!s) return this.createSecret(ref.remoteKey, md);
    const managed = s.labels?.[MANAGED_BY.key] === MANAGED_BY.value;
    if (!managed && !ref.property) {
      throw new ProviderError('Forbidden', this.storeId, `the secret exists and is not managed by external-secrets (no label ${MANAGED_BY.key}=${MANAGED_BY.value}); refusing to overwrite it`, ref.remoteKey);
    }
    const merge = md.mergePolicy === 'Merge';
    const mark = { [MANAGED_BY.key]: MANAGED_BY.value };
    const labels = wantedMap(s.labels, md.labels, merge, mark) ?? (managed ? undefined : { ...(s.labels ?? {}), ...mark });
    const annotations = wantedMap(s.annotations, md.annotations, merge);
    const paths = [...(labels && !sameMap(s.labels, labels) ? ['labels'] : []), ...(annotations && !sameMap(s.annotations, annotations) ? ['annotations'] : [])];
    if (!paths.length) return;
    const secret: ISecret = { name: s.name, etag: s.etag, ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) };
    await this.call('label secret', ref.remoteKey, false, (o) => this.parts.sm.updateSecret({ secret, updateMask: { paths } }, o));
  }

  private async addVersion(remoteKey: string, data: Uint8Array): Promise<void> {
    const parent = secretName(this.parts.scope, remoteKey);
    await this.call('add version', remoteKey, false, (o) => this.parts.sm.addSecretVersion({ parent, payload: { data } }, o));
  }

  async pushSecret(value: Uint8Array, ref: PushRemoteRef, opts: PushOptions = {}): Promise<void> {
    await this.prepareSecret(ref, (opts.metadata ?? {}) as GcpsmPushMetadata);
    const current = await this.latest(ref.remoteKey);
    let data = value;
    if (ref.property) {
      try {
        data = Buffer.from(setProperty(current, ref.property, Buffer.from(value).toString('utf8'), 'path'));
      } catch (err) {
        this.helperError(err, ref.remoteKey);
      }
    }
    if (current && sameBytes(current, data)) return;
    await this.addVersion(ref.remoteKey, data);
  }

  async deleteSecret(ref: PushRemoteRef): Promise<void> {
    const s = await this.secret(ref.remoteKey);
    if (!s) return;
    if (ref.property) {
      // Removing a property only edits what was pushed: allowed on any secret.
      const current = await this.latest(ref.remoteKey);
      if (!current) return;
      let rest: { value: string | undefined; changed: boolean } = { value: undefined, changed: false };
      try {
        rest = deleteProperty(current, ref.property, 'path');
      } catch (err) {
        this.helperError(err, ref.remoteKey);
      }
      if (!rest.changed) return;
      if (rest.value !== undefined || !this.managed(s, ref.remoteKey)) {
        return this.addVersion(ref.remoteKey, Buffer.from(rest.value ?? '{}'));
      }
    } else if (!this.managed(s, ref.remoteKey)) {
      return;
    }
    const name = s.name ?? secretName(this.parts.scope, ref.remoteKey);
    try {
      await this.call('delete secret', ref.remoteKey, true, (o) => this.parts.sm.deleteSecret({ name, etag: s.etag ?? '' }, o));
    } catch (err) {
      if (!(err instanceof ProviderError && err.code === 'NotFound')) throw err;
    }
  }

  /** Whole secrets are deleted only when ESI/ESO created them (label managed-by). */
  private managed(s: ISecret, key: string): boolean {
    if (s.labels?.[MANAGED_BY.key] === MANAGED_BY.value) return true;
    this.ctx.logger.info({ key }, `gcpsm: secret lacks label ${MANAGED_BY.key}=${MANAGED_BY.value}, not deleted`);
    return false;
  }

  async secretExists(ref: PushRemoteRef): Promise<boolean> {
    const current = await this.latest(ref.remoteKey);
    if (!current) return false;
    if (!ref.property) return true;
    try {
      return hasProperty(current, ref.property, 'path');
    } catch (err) {
      return this.helperError(err, ref.remoteKey);
    }
  }

  /** Credentials work (a token can be obtained); in emulator mode the endpoint answers. */
  async validate(): Promise<void> {
    const auth = this.parts.auth;
    if (auth) {
      try {
        await auth.getAccessToken();
      } catch (err) {
        throw toProviderError(new CredentialFailure('credentials', { cause: err }), { storeId: this.storeId, op: 'validate' }, classifyGcpsm);
      }
      return;
    }
    await this.call('list secrets', undefined, true, (o) => this.parts.sm.listSecrets({ parent: parentName(this.parts.scope), pageSize: 1 }, { ...o, autoPaginate: false }));
  }

  async close(): Promise<void> {
    await this.parts.sm.close();
  }
}
