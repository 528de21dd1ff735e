// A SecretsClient over one gRPC channel to a plugin implementing `SecretsServer`.
//
// Every call has a deadline of ctx.timeoutMs. UNAVAILABLE and DEADLINE_EXCEEDED are
// retried with exponential backoff and full jitter, at most MAX_ATTEMPTS attempts in all
// (TLS and certificate failures are not retried: they do not heal by themselves).
// Values travel as bytes; they never reach a log line or an error message.
import { Metadata, type ChannelCredentials, type Client, type ServiceError } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { guard, toProviderError } from '../errors.js';
import { propertySegments, selectProperty, valueAsMap } from '../json-path.js';
import { ProviderError, type FindRef, type PushRemoteRef, type RemoteRef, type SecretMap, type SecretsClient } from '../types.js';
import {
  DecodingStrategy,
  ConversionStrategy,
  HEALTH_CHECK,
  HEALTH_SERVING,
  METHOD_SCHEMAS,
  METHODS,
  type MethodName,
} from './contract.js';
import { classifyGrpc, isRetryable, isServiceError, ReplyError, type CallInfo } from './errors.js';
import { decode, encode, WireError, type Message, type Schema } from './wire.js';

export const MAX_ATTEMPTS = 3;

/** The channel options of every plugin client. */
export const CHANNEL_OPTIONS = {
  // This client's own connections: close() really closes them.
  'grpc.use_local_subchannel_pool': 1,
  // A restarted plugin is dialled again quickly (the default starts at 1 s).
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 10_000,
  'grpc.primary_user_agent': 'esi-grpc-provider',
} as const;
const BACKOFF_BASE_MS = 100;
const BACKOFF_CAP_MS = 2_000;

/** Delay before attempt `attempt + 1`: exponential, capped, with full jitter. */
export function backoffMs(attempt: number, random: () => number = Math.random): number {
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}

const HealthRequest: Schema = { name: 'HealthCheckRequest', fields: [{ no: 1, name: 'service', kind: 'string' }] };
const HealthReply: Schema = { name: 'HealthCheckResponse', fields: [{ no: 1, name: 'status', kind: 'enum' }] };

export interface GrpcClientOptions {
  /** The channel, opened by src/egress/grpc.ts (the one place gRPC channels are created). */
  client: Client;
  storeId: string;
  namespace: string;
  /** The gRPC target `host:port`. */
  target: string;
  /** The url as configured (messages). */
  url: string;
  channel: { credentials: ChannelCredentials; clientCert: boolean };
  /** TLS (false only for an explicit http:// url). */
  tls: boolean;
  tlsSecret?: string;
  /** UTF-8 JSON of the store description sent as `store`. */
  store: Uint8Array;
  timeoutMs: number;
  logger: Logger;
  /** Quote the plugin's error text in errors (ProviderContext.quoteStoreErrors). */
  quoteErrors?: boolean;
  /** Tests shorten the backoff. */
  sleep?: (ms: number) => Promise<void>;
}

const wait = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class GrpcSecretsClient implements SecretsClient {
  private readonly client: Client;
  private closed = false;

  constructor(private readonly o: GrpcClientOptions) {
    this.client = o.client;
  }

  private info(method: string, key: string | undefined, attempts: number, value?: Uint8Array): CallInfo {
    const { storeId, url, timeoutMs, channel, tlsSecret, tls } = this.o;
    return {
      storeId, url, method, key, timeoutMs, attempts, tls, clientCert: channel.clientCert, quote: this.o.quoteErrors ?? true,
      ...(tlsSecret ? { tlsSecret } : {}), ...(value ? { value } : {}),
    };
  }

  /** One unary call with its deadline; resolves the raw reply bytes. */
  private unary(path: string, body: Uint8Array): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest<Buffer, Buffer>(
        path,
        (b) => b,
        (b) => b,
        Buffer.from(body.buffer, body.byteOffset, body.byteLength),
        new Metadata(),
        { deadline: Date.now() + this.o.timeoutMs },
        (err: ServiceError | null, reply?: Buffer) => (err ? reject(err) : resolve(new Uint8Array(reply ?? []))),
      );
    });
  }

  /** A call with retries; throws ProviderError. */
  private async invoke(method: string, path: string, body: Uint8Array, about: { key?: string; value?: Uint8Array } = {}): Promise<Uint8Array> {
    const { key, value } = about;
    for (let attempt = 1; ; attempt++) {
      if (this.closed) throw new ProviderError('Unknown', this.o.storeId, 'client is closed', key);
      try {
        return await this.unary(path, body);
      } catch (err) {
        const info = this.info(method, key, attempt, value);
        const error = toProviderError(err, { storeId: this.o.storeId, key, ...(isServiceError(err) ? {} : { op: method }) }, classifyGrpc(info));
        if (!isRetryable(err, info) || attempt >= MAX_ATTEMPTS || this.closed) throw error;
        const delay = backoffMs(attempt);
        this.o.logger.debug({ method, key, attempt, code: error.code, delayMs: delay }, 'grpc plugin call failed, retrying');
        await (this.o.sleep ?? wait)(delay);
      }
    }
  }

  /** A SecretsServer method: encode, call, decode, and turn a reply `error` into a ProviderError. */
  private async call(method: MethodName, request: Message, key?: string, value?: Uint8Array): Promise<Message> {
    const { request: reqSchema, reply: replySchema } = METHOD_SCHEMAS[method];
    const raw = await this.invoke(method, METHODS[method], encode(reqSchema, request), { key, value });
    let reply: Message;
    try {
      reply = decode(replySchema, raw);
    } catch (err) {
      const why = err instanceof WireError ? err.message : 'undecodable';
      throw new ProviderError('Unknown', this.o.storeId, `plugin at ${this.o.url} sent a ${method} reply that is not a ${replySchema.name} (${why})`, key);
    }
    const error = reply.error as string;
    if (error && error.trim() !== '') throw toProviderError(new ReplyError(error), { storeId: this.o.storeId, key }, classifyGrpc(this.info(method, key, 1, value)));
    return reply;
  }

  /** The remoteRef of a write: the plugin applies `property` as it documents, after the
   *  same prototype-safety check every provider makes. */
  private pushRef(ref: PushRemoteRef): Message {
    if (ref.property) guard({ storeId: this.o.storeId, key: ref.remoteKey }, () => propertySegments(ref.property!, 'key'));
    return { remoteKey: ref.remoteKey, property: ref.property ?? '' };
  }

  private base(): Message {
    return { store: this.o.store, namespace: this.o.namespace };
  }

  private async fetch(ref: RemoteRef): Promise<Uint8Array> {
    if (ref.metadataPolicy !== undefined && ref.metadataPolicy !== 'None' && ref.metadataPolicy !== 'Fetch') {
      throw new ProviderError('InvalidSpec', this.o.storeId, `unknown metadataPolicy "${String(ref.metadataPolicy)}"`, ref.key);
    }
    const reply = await this.call('GetSecret', {
      ...this.base(),
      remoteRef: {
        key: ref.key,
        metadataPolicy: ref.metadataPolicy ?? 'None',
        version: ref.version ?? '',
        // ESI extracts properties and applies the ExternalSecret's strategies itself, to
        // the stored bytes: the plugin is asked for exactly those (see secrets.proto).
        property: '',
        conversionStrategy: ConversionStrategy.DEFAULT,
        decodingStrategy: DecodingStrategy.NONE,
      },
    }, ref.key);
    return reply.secret as Uint8Array;
  }


  async getSecret(ref: RemoteRef): Promise<Uint8Array> {
    return selectProperty(await this.fetch(ref), ref, this.o.storeId);
  }

  /** The plugin returns one value; `dataFrom.extract` reads it as a JSON object. */
  async getSecretMap(ref: RemoteRef): Promise<SecretMap> {
    return valueAsMap(await this.fetch(ref), ref, this.o.storeId);
  }

  async getAllSecrets(_find: FindRef): Promise<SecretMap> {
    throw new ProviderError(
      'Unsupported',
      this.o.storeId,
      'dataFrom.find is not supported by grpc stores: the SecretsServer contract (docs/providers/grpc.md: GetSecret, PushSecret, DeleteSecret, SecretExists) has no list call; name the keys with data[] or dataFrom[].extract',
    );
  }

  async pushSecret(value: Uint8Array, ref: PushRemoteRef): Promise<void> {
    await this.call('PushSecret', {
      ...this.base(),
      secret: value,
      remoteRef: this.pushRef(ref),
    }, ref.remoteKey, value);
  }

  async deleteSecret(ref: PushRemoteRef): Promise<void> {
    const remoteRef = this.pushRef(ref);
    try {
      await this.call('DeleteSecret', { remoteRef }, ref.remoteKey);
    } catch (err) {
      // Deleting what is already gone is not an error.
      if (err instanceof ProviderError && err.code === 'NotFound') return;
      throw err;
    }
  }

  async secretExists(ref: PushRemoteRef): Promise<boolean> {
    const remoteRef = this.pushRef(ref);
    try {
      const reply = await this.call('SecretExists', { remoteRef }, ref.remoteKey);
      return reply.exists === true;
    } catch (err) {
      if (err instanceof ProviderError && err.code === 'NotFound') return false;
      throw err;
    }
  }

  /** Connects (TLS, client certificate) and asks the standard gRPC health service; a
   *  plugin without it answers UNIMPLEMENTED, which still proves it is reachable and
   *  accepted ESI. No secret is read. */
  async validate(): Promise<void> {
    let raw: Uint8Array;
    try {
      raw = await this.invoke('Health/Check', HEALTH_CHECK, encode(HealthRequest, {}));
    } catch (err) {
      if (err instanceof ProviderError && err.code === 'Unsupported') return;
      throw err;
    }
    let status: number | undefined;
    try {
      status = decode(HealthReply, raw).status as number;
    } catch {
      status = undefined;
    }
    if (status !== HEALTH_SERVING) {
      throw new ProviderError('Unreachable', this.o.storeId, `plugin at ${this.o.url} reports that it is not serving (health status ${status ?? 'undecodable'})`);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.client.close();
  }
}
