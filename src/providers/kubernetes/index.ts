// The `kubernetes` provider (ESO's `spec.provider.kubernetes`): reads and writes
// Kubernetes Secrets of `remoteNamespace` (default: the namespace the store is used
// from) through the API, authenticated as the pod itself (its projected token), with a
// static token, a client certificate, or a kubeconfig (authRef). Talks to the API with
// node:https directly (see api.ts for why not @kubernetes/client-node).
import type { KubernetesProvider } from '../../api/types.js';
import { isDnsSubdomain } from '../../kube/names.js';
import { resourcePath, SECRETS, SELF_SUBJECT_ACCESS_REVIEWS } from '../../kube/paths.js';
import { defineProvider } from '../define.js';
import { guard } from '../errors.js';
import { propertySegments } from '../json-path.js';
import { findNameTest } from '../regexp.js';
import { emptySecretMap, ProviderError, type FindRef, type PushOptions, type PushRemoteRef, type RemoteRef, type SecretMap, type SecretsClient } from '../types.js';
import { ConflictError, KubeApi, type Op } from './api.js';
import { resolveConnection } from './connection.js';
import { dataOf, labelSelector, mapOf, mapToJson, valueOf, withPushMetadata, type KubePushMetadata, type KubeSecret } from './secret.js';
import { meta } from './meta.js';
import { validateSpec } from './spec.js';
import { convertFoundKeys } from '../key-conversion.js';

export { validateSpec };

/** Attempts of a read-modify-write before giving up on concurrent writers; between
 *  attempts a short random pause spreads the writers out. */
const WRITE_ATTEMPTS = 10;
const pause = (attempt: number) => new Promise((r) => setTimeout(r, Math.random() * 20 * (attempt + 1)));
const PAGE = 250;

const b64 = (v: Uint8Array): string => Buffer.from(v).toString('base64');

class KubernetesClient implements SecretsClient {
  constructor(
    private readonly storeId: string,
    private readonly api: KubeApi,
    /** The namespace the Secrets are in. */
    readonly namespace: string,
  ) {}

  private path(name?: string): string {
    return resourcePath(SECRETS, { namespace: this.namespace, name });
  }

  private op(verb: Op['verb'], name?: string): Op {
    return { verb, namespace: this.namespace, ...(name !== undefined ? { name } : {}) };
  }

  private checkName(name: string): void {
    // Secret names are DNS subdomains; anything else would only ever be a 404 (or a
    // different URL path): say so instead.
    if (!isDnsSubdomain(name)) {
      throw new ProviderError('InvalidSpec', this.storeId, 'is not a valid Secret name (lowercase RFC 1123 subdomain)', name);
    }
  }

  /** The Secret, or undefined when it does not exist. */
  private async fetch(name: string): Promise<KubeSecret | undefined> {
    this.checkName(name);
    const res = await this.api.request(this.op('get', name), 'GET', this.path(name));
    if (res.status === 404) return undefined;
    return res.body as KubeSecret;
  }

  private async mustFetch(ref: RemoteRef): Promise<KubeSecret> {
    if (ref.version) {
      throw new ProviderError('Unsupported', this.storeId, 'Kubernetes Secrets have no versions (remove remoteRef.version)', ref.key);
    }
    const secret = await this.fetch(ref.key);
    if (!secret) throw new ProviderError('NotFound', this.storeId, `Secret not found in namespace "${this.namespace}"`, ref.key);
    return secret;
  }

  /** Runs a pure helper, turning its value-free RemoteRefError into a ProviderError. */
  private semantic<T>(key: string, f: () => T): T {
    return guard({ storeId: this.storeId, ...(key ? { key } : {}) }, f);
  }

  async getSecret(ref: RemoteRef): Promise<Uint8Array> {
    const secret = await this.mustFetch(ref);
    return this.semantic(ref.key, () => valueOf(secret, ref));
  }

  async getSecretMap(ref: RemoteRef): Promise<SecretMap> {
    const secret = await this.mustFetch(ref);
    return this.semantic(ref.key, () => mapOf(secret, ref));
  }

  async getAllSecrets(find: FindRef): Promise<SecretMap> {
    if (find.path) {
      throw new ProviderError('Unsupported', this.storeId, 'find.path: Kubernetes Secret names have no paths; use find.name or find.tags');
    }
    const hasTags = !!find.tags && Object.keys(find.tags).length > 0;
    if (!find.name && !hasTags) throw new ProviderError('InvalidSpec', this.storeId, 'find needs name.regexp or tags');
    const { re, selector } = this.semantic('', () => ({
      re: findNameTest(find, this.storeId),
      selector: hasTags ? labelSelector(find.tags!) : '',
    }));
    const out = emptySecretMap();
    for await (const secret of this.list(selector)) {
      const name = secret.metadata?.name ?? '';
      if (!re(name)) continue;
      out[name] = mapToJson(dataOf(secret));
    }
    // ESO's kubernetes provider converts found keys itself: a rewrite sees converted keys.
    return convertFoundKeys(find.conversionStrategy, out);
  }

  /** Every Secret of the namespace matching the label selector, page by page. */
  private async *list(selector: string): AsyncGenerator<KubeSecret> {
    let cont = '';
    do {
      const q = new URLSearchParams({ limit: String(PAGE) });
      if (selector) q.set('labelSelector', selector);
      if (cont) q.set('continue', cont);
      const res = await this.api.request(this.op('list'), 'GET', `${this.path()}?${q}`);
      if (res.status === 404) return;
      const body = res.body as { items?: KubeSecret[]; metadata?: { continue?: string } };
      yield* body.items ?? [];
      cont = body.metadata?.continue ?? '';
    } while (cont);
  }

  private requireProperty(ref: PushRemoteRef, what: string): string {
    if (!ref.property) {
      throw new ProviderError('InvalidSpec', this.storeId, `${what} needs remoteRef.property: the data key of the Secret`, ref.remoteKey);
    }
    const property = ref.property;
    return this.semantic(ref.remoteKey, () => propertySegments(property, 'key')[0]!);
  }

  /** Creates the Secret with one key, or sets that key of the existing Secret; push
   *  metadata sets its labels and annotations. */
  async pushSecret(value: Uint8Array, ref: PushRemoteRef, opts: PushOptions = {}): Promise<void> {
    const key = this.requireProperty(ref, 'push');
    const md = opts.metadata as KubePushMetadata | undefined;
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      try {
        const current = await this.fetch(ref.remoteKey);
        if (!current) return await this.create(ref.remoteKey, key, value, withPushMetadata(undefined, md));
        const meta = withPushMetadata(current.metadata, md);
        if (current.data?.[key] === b64(value) && !meta) return;
        if (current.immutable) {
          throw new ProviderError('Unknown', this.storeId, `the Secret in namespace "${this.namespace}" is immutable`, ref.remoteKey);
        }
        return await this.update({ ...current, metadata: { ...current.metadata, ...meta }, data: { ...current.data, [key]: b64(value) } });
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
        await pause(attempt);
      }
    }
    throw new ProviderError('Unknown', this.storeId, `the Secret kept changing during ${WRITE_ATTEMPTS} attempts to push`, ref.remoteKey);
  }

  private async create(name: string, key: string, value: Uint8Array, meta: KubeSecret['metadata'] = {}): Promise<void> {
    const body = { apiVersion: 'v1', kind: 'Secret', metadata: { ...meta, name, namespace: this.namespace }, type: 'Opaque', data: { [key]: b64(value) } };
    const res = await this.api.request(this.op('create', name), 'POST', this.path(), body);
    if (res.status === 404) throw new ProviderError('NotFound', this.storeId, `namespace "${this.namespace}" not found`, name);
  }

  /** PUT with the resourceVersion read: a concurrent change is a 409, then a retry. */
  private async update(secret: KubeSecret): Promise<void> {
    const name = secret.metadata!.name!;
    const res = await this.api.request(this.op('update', name), 'PUT', this.path(name), secret);
    if (res.status === 404) throw new ConflictError('deleted meanwhile');
  }

  /** Removes one key; the Secret itself when it was the last one (as ESO). */
  async deleteSecret(ref: PushRemoteRef): Promise<void> {
    const key = this.requireProperty(ref, 'delete');
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      try {
        const current = await this.fetch(ref.remoteKey);
        if (!current?.data || !Object.prototype.hasOwnProperty.call(current.data, key)) return;
        const rest = { ...current.data };
        delete rest[key];
        if (Object.keys(rest).length > 0) return await this.update({ ...current, data: rest });
        return await this.remove(current);
      } catch (err) {
        if (!(err instanceof ConflictError)) throw err;
        await pause(attempt);
      }
    }
    throw new ProviderError('Unknown', this.storeId, `the Secret kept changing during ${WRITE_ATTEMPTS} attempts to delete`, ref.remoteKey);
  }

  /** Deletes the Secret only if unchanged since read (a key added meanwhile survives). */
  private async remove(secret: KubeSecret): Promise<void> {
    const name = secret.metadata!.name!;
    const body = { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { resourceVersion: secret.metadata!.resourceVersion } };
    await this.api.request(this.op('delete', name), 'DELETE', this.path(name), body);
  }

  async secretExists(ref: PushRemoteRef): Promise<boolean> {
    const current = await this.fetch(ref.remoteKey);
    if (!current) return false;
    return !ref.property || Object.prototype.hasOwnProperty.call(current.data ?? {}, this.requireProperty(ref, 'exists'));
  }

  /** Asks the API server whether this identity may get Secrets in the namespace. */
  async validate(): Promise<void> {
    const body = {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SelfSubjectAccessReview',
      spec: { resourceAttributes: { namespace: this.namespace, verb: 'get', resource: 'secrets' } },
    };
    const op: Op = { verb: 'create selfsubjectaccessreviews', namespace: this.namespace };
    const res = await this.api.request(op, 'POST', resourcePath(SELF_SUBJECT_ACCESS_REVIEWS), body);
    const allowed = (res.body as { status?: { allowed?: boolean } } | undefined)?.status?.allowed;
    if (!allowed) {
      throw new ProviderError('Forbidden', this.storeId,
        `${this.api.identity} may not get secrets in namespace "${this.namespace}": RBAC must allow "get" on secrets in namespace "${this.namespace}" for ${this.api.identity}`);
    }
  }

  async close(): Promise<void> {
    this.api.close();
  }
}

export const provider = defineProvider<KubernetesProvider>(meta, async (ctx, spec) => {
  if (spec.authRef && spec.server) ctx.logger.warn('kubernetes.server is ignored: the kubeconfig in authRef names the server');
  const conn = await resolveConnection(ctx, spec);
  const api = new KubeApi(ctx.storeId, conn, ctx.timeoutMs, () => resolveConnection(ctx, spec));
  return new KubernetesClient(ctx.storeId, api, spec.remoteNamespace ?? ctx.namespace);
});

export default provider;
