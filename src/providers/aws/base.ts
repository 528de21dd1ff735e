// What the Secrets Manager and Parameter Store clients share: the store's key prefix,
// `property` extraction and `dataFrom.extract` maps over the raw remote value, error
// mapping of every SDK call, find scopes, and validate/close.
import type { AWSProvider } from '../../api/types.js';
import { toProviderError } from '../errors.js';
import { selectProperty, valueAsMap } from '../json-path.js';
import { findNameTest } from '../regexp.js';
import { ProviderError, type FindRef, type ProviderContext, type PushOptions, type PushRemoteRef, type RemoteRef, type SecretMap, type SecretsClient } from '../types.js';
import type { Credentials } from './auth.js';
import { classifyAws, isNotFound } from './errors.js';
import { meta } from './meta.js';
import { addXmlErrorRewrite, callOptions, commonConfig } from './sdk.js';
import { endpointFromEnv } from './spec.js';

/** What a pushed `property` means in AWS stores (meta.ts). */
export const PUSH_PROPERTY = meta.capabilities.pushProperty;

export const MANAGED_BY_KEY = 'managed-by';
export const MANAGED_BY_VALUE = 'external-secrets';
/** Description of what PushSecret creates, as ESO writes it. */
export const PUSH_DESCRIPTION = `secret '${MANAGED_BY_KEY}:${MANAGED_BY_VALUE}'`;

export const enc = new TextEncoder();
export const utf8 = (b: Uint8Array) => Buffer.from(b).toString('utf8');

export function isManaged(tags: { Key?: string; Value?: string }[] | undefined): boolean {
  return (tags ?? []).some((t) => t.Key === MANAGED_BY_KEY && t.Value === MANAGED_BY_VALUE);
}

/** The SDK client of one service for a store: its region, the endpoint override of the
 *  environment, the store's credentials and deadline, and the XML error rewrite. */
export function serviceClient<C extends SdkClient & { middlewareStack: unknown }>(
  Client: new (config: ReturnType<typeof commonConfig>) => C,
  service: 'ssm' | 'secretsmanager',
  store: { ctx: ProviderContext; spec: AWSProvider; creds: Credentials },
): C {
  const { ctx, spec, creds } = store;
  const client = new Client(commonConfig({ region: spec.region, service, endpoint: endpointFromEnv(service), credentials: creds.provider, timeoutMs: ctx.timeoutMs }));
  addXmlErrorRewrite(client);
  return client;
}

export interface SdkClient {
  send(command: unknown, options?: { abortSignal?: AbortSignal }): Promise<unknown>;
  destroy(): void;
}

export abstract class AwsClient implements SecretsClient {
  protected closed = false;
  protected readonly prefix: string;

  constructor(
    protected readonly ctx: ProviderContext,
    protected readonly spec: AWSProvider,
    protected readonly creds: Credentials,
    protected readonly sdk: SdkClient,
  ) {
    this.prefix = spec.prefix ?? '';
  }

  get storeId(): string {
    return this.ctx.storeId;
  }

  /** The remote name of a key: the store's prefix + key (ESO's `prefix`). */
  protected remoteName(key: string): string {
    return this.prefix + key;
  }

  /** Sends one SDK command within the deadline; failures become ProviderErrors. */
  protected async send<T>(op: string, key: string | undefined, command: unknown): Promise<T> {
    if (this.closed) throw new ProviderError('Unknown', this.storeId, 'client is closed', key);
    try {
      return (await this.sdk.send(command, callOptions(this.ctx.timeoutMs))) as T;
    } catch (err) {
      if (key !== undefined && (await this.scheduledForDeletion(err, key))) {
        throw new ProviderError('NotFound', this.storeId, `${op}: the secret is scheduled for deletion`, key);
      }
      throw toProviderError(err, { storeId: this.storeId, op, key }, classifyAws);
    }
  }

  /** Whether `err` says the secret `key` is scheduled for deletion (reads treat it as
   *  absent, as ESO does). Only Secrets Manager has such secrets. */
  protected async scheduledForDeletion(_err: unknown, _key: string): Promise<boolean> {
    return false;
  }

  /** Like `send`, but a missing secret/parameter yields undefined. */
  protected async sendOrAbsent<T>(op: string, key: string | undefined, command: unknown): Promise<T | undefined> {
    if (this.closed) throw new ProviderError('Unknown', this.storeId, 'client is closed', key);
    try {
      return (await this.sdk.send(command, callOptions(this.ctx.timeoutMs))) as T;
    } catch (err) {
      if (isNotFound(err) || (key !== undefined && (await this.scheduledForDeletion(err, key)))) return undefined;
      throw toProviderError(err, { storeId: this.storeId, op, key }, classifyAws);
    }
  }

  /** A value-free helper error (property missing, not JSON) as a ProviderError. */
  protected helperError(err: unknown, key: string): never {
    throw toProviderError(err, { storeId: this.storeId, key });
  }

  /** The whole remote value of `ref` (or its tags as JSON with metadataPolicy Fetch). */
  protected abstract fetch(ref: RemoteRef): Promise<Uint8Array>;

  async getSecret(ref: RemoteRef): Promise<Uint8Array> {
    return selectProperty(await this.fetch(ref), ref, this.storeId);
  }

  async getSecretMap(ref: RemoteRef): Promise<SecretMap> {
    return valueAsMap(await this.fetch(ref), ref, this.storeId);
  }

  /** Every item of a paginated list call: `page(token)` returns one page's items and
   *  the next token. */
  protected async paginate<T>(page: (token: { NextToken?: string }) => Promise<{ items?: T[]; next?: string }>): Promise<T[]> {
    const out: T[] = [];
    let NextToken: string | undefined;
    do {
      const p = await page(NextToken ? { NextToken } : {});
      out.push(...(p.items ?? []));
      NextToken = p.next;
    } while (NextToken);
    return out;
  }

  /** A find's checked criteria: its name matcher and the remote prefix of its path. */
  protected findScope(find: FindRef): { matches: (name: string) => boolean; prefix: string } {
    this.checkFind(find);
    return { matches: findNameTest(find, this.storeId), prefix: this.remoteName(find.path ?? '') };
  }

  /** Whether a find names at least one criterion (ESO refuses an empty find). */
  protected checkFind(find: FindRef): void {
    const hasTags = !!find.tags && Object.keys(find.tags).length > 0;
    if (!find.name && !hasTags && !find.path) {
      throw new ProviderError('InvalidSpec', this.storeId, 'find needs a name regexp, tags or a path');
    }
  }

  /** The remote name without the store's prefix (keys of a find are relative to it). */
  protected relative(name: string): string {
    return this.prefix && name.startsWith(this.prefix) ? name.slice(this.prefix.length) : name;
  }

  abstract getAllSecrets(find: FindRef): Promise<SecretMap>;
  abstract pushSecret(value: Uint8Array, ref: PushRemoteRef, opts?: PushOptions): Promise<void>;
  abstract deleteSecret(ref: PushRemoteRef): Promise<void>;
  abstract secretExists(ref: PushRemoteRef): Promise<boolean>;

  async validate(): Promise<void> {
    if (this.closed) throw new ProviderError('Unknown', this.storeId, 'client is closed');
    await this.creds.check();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.creds.close();
    this.sdk.destroy();
  }
}
