// ESI's reference plugin: a gRPC server implementing the `SecretsServer` contract
// (src/providers/grpc/secrets.proto, docs/providers/grpc.md) over a `SecretBackend` (backend.ts).
// Copy this folder to write your own plugin: keep server.ts, replace MemoryStore.
//
// The contract in short (docs/providers/grpc.md has all of it):
//  - service `SecretsServer` with no proto package: methods are /SecretsServer/GetSecret,
//    /SecretsServer/PushSecret, /SecretsServer/DeleteSecret, /SecretsServer/SecretExists;
//  - GetSecret returns the stored bytes as they are (ESI extracts JSON properties and
//    applies decoding itself; it sends property "" and decodingStrategy NONE);
//  - failures go in the reply's `error` as "<Code>: <message>" (NotFound, AuthFailed,
//    Forbidden, Unsupported); a temporary failure is gRPC status UNAVAILABLE (ESI
//    retries it); never put a secret value in an error or a log line;
//  - serve TLS, and require client certificates (mTLS) to know who is calling.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { packageRoot } from '../../src/package-root.js';
import { secretsProtoPath } from '../../src/providers/grpc/contract.js';
import { MemoryStore, PluginError, type Caller, type SecretBackend } from './backend.js';

export interface PluginServerOptions<B extends SecretBackend = MemoryStore> {
  /** `host:port` to listen on; port 0 picks a free port. Default `127.0.0.1:0`. */
  listen?: string;
  /** Where secrets live. Default: a MemoryStore holding `data`. */
  backend?: B;
  /** Initial contents of the default MemoryStore (key → string or JSON). */
  data?: Record<string, unknown>;
  /** PEM serving certificate and key; `clientCa` makes client certificates mandatory
   *  (mTLS): only clients whose certificate that CA signed can connect. Without `tls`
   *  the server is plaintext (local experiments only). */
  tls?: { cert: string | Buffer; key: string | Buffer; clientCa?: string | Buffer };
  /** The contract. Default: the secrets.proto ESI ships. */
  protoPath?: string;
  logger?: Logger;
}

export interface PluginServer<B extends SecretBackend = MemoryStore> {
  port: number;
  /** `host:port` the server listens on. */
  address: string;
  /** The backend the server reads and writes (seed it directly in tests). */
  store: B;
  stop(): Promise<void>;
}

interface RemoteRefMsg { key: string; metadataPolicy: string; property: string; version: string }
interface PushRemoteRefMsg { remoteKey: string; property: string }
interface GetSecretRequest { store: Buffer; namespace: string; remoteRef?: RemoteRefMsg }
interface PushSecretRequest { store: Buffer; namespace: string; secret: Buffer; remoteRef?: PushRemoteRefMsg }
interface KeyRequest { remoteRef?: PushRemoteRefMsg }

const LOADER_OPTIONS: protoLoader.Options = { keepCase: true, longs: String, enums: String, defaults: true };

/** Who is calling: the verified client certificate, and what the request says. */
function callerOf(call: grpc.ServerUnaryCall<unknown, unknown>, req: { store?: Buffer; namespace?: string }): Caller {
  const caller: Caller = {};
  const cn = call.getAuthContext().sslPeerCertificate?.subject?.CN;
  if (cn) caller.clientCertificate = Array.isArray(cn) ? cn.join(',') : cn;
  if (req.namespace) caller.namespace = req.namespace;
  if (req.store?.length) {
    try {
      const s = JSON.parse(req.store.toString('utf8')) as { kind?: string; metadata?: { name?: string; namespace?: string } };
      if (s.kind && s.metadata?.name) caller.store = { kind: s.kind, name: s.metadata.name, ...(s.metadata.namespace ? { namespace: s.metadata.namespace } : {}) };
    } catch {
      // `store` is informational: ignore what does not parse.
    }
  }
  return caller;
}

/** Runs one handler: a PluginError becomes the reply `error` (or UNAVAILABLE), anything
 *  else an INTERNAL status whose text reveals nothing. Logs method, key and outcome only. */
function handle<Req extends { remoteRef?: { key?: string; remoteKey?: string } }, Rep>(
  method: string,
  logger: Logger,
  fn: (req: Req, caller: Caller) => Promise<Rep>,
): grpc.handleUnaryCall<Req, Rep | { error: string }> {
  return (call, callback) => {
    const req = call.request;
    const key = req.remoteRef?.key ?? req.remoteRef?.remoteKey ?? '';
    const caller = callerOf(call, req as { store?: Buffer; namespace?: string });
    fn(req, caller).then(
      (reply) => {
        logger.info({ method, key, client: caller.clientCertificate }, 'ok');
        callback(null, reply);
      },
      (err: unknown) => {
        if (err instanceof PluginError && err.code === 'Unavailable') {
          logger.warn({ method, key, reason: err.message }, 'unavailable');
          callback({ code: grpc.status.UNAVAILABLE, details: err.message });
        } else if (err instanceof PluginError) {
          logger.info({ method, key, code: err.code }, 'refused');
          callback(null, { error: `${err.code}: ${err.message}` });
        } else {
          logger.error({ method, key, err: (err as Error)?.name }, 'backend failure');
          callback({ code: grpc.status.INTERNAL, details: 'internal error in the plugin backend' });
        }
      },
    );
  };
}

/** A top-level property of a JSON object value (for clients that send `property`;
 *  ESI never does: it extracts properties itself). */
function property(value: Uint8Array, name: string, key: string): Uint8Array {
  let obj: unknown;
  try {
    obj = JSON.parse(Buffer.from(value).toString('utf8'));
  } catch {
    throw new PluginError('NotFound', `secret "${key}" is not JSON: no property "${name}"`);
  }
  if (obj === null || typeof obj !== 'object' || !Object.hasOwn(obj, name)) throw new PluginError('NotFound', `property "${name}" of secret "${key}" not found`);
  const v = (obj as Record<string, unknown>)[name];
  return Buffer.from(typeof v === 'string' ? v : JSON.stringify(v));
}

function implementation(backend: SecretBackend, logger: Logger): grpc.UntypedServiceImplementation {
  return {
    GetSecret: handle('GetSecret', logger, async (req: GetSecretRequest, caller) => {
      const ref = req.remoteRef;
      if (!ref?.key) throw new PluginError('NotFound', 'remoteRef.key is empty');
      if (ref.metadataPolicy === 'Fetch') throw new PluginError('Unsupported', 'metadataPolicy Fetch is not supported by this plugin');
      const value = await backend.get(ref.key, ref.version, caller);
      return { secret: Buffer.from(ref.property ? property(value, ref.property, ref.key) : value), error: '' };
    }),
    PushSecret: handle('PushSecret', logger, async (req: PushSecretRequest, caller) => {
      if (!req.remoteRef?.remoteKey) throw new PluginError('Unsupported', 'remoteRef.remoteKey is empty');
      await backend.put(req.remoteRef.remoteKey, req.secret, req.remoteRef.property, caller);
      return { error: '' };
    }),
    DeleteSecret: handle('DeleteSecret', logger, async (req: KeyRequest, caller) => {
      if (!req.remoteRef?.remoteKey) throw new PluginError('Unsupported', 'remoteRef.remoteKey is empty');
      await backend.delete(req.remoteRef.remoteKey, req.remoteRef.property, caller);
      return { error: '' };
    }),
    SecretExists: handle('SecretExists', logger, async (req: KeyRequest, caller) => {
      if (!req.remoteRef?.remoteKey) throw new PluginError('Unsupported', 'remoteRef.remoteKey is empty');
      return { exists: await backend.exists(req.remoteRef.remoteKey, req.remoteRef.property, caller), error: '' };
    }),
  };
}

function credentials(tls: PluginServerOptions['tls']): grpc.ServerCredentials {
  if (!tls) return grpc.ServerCredentials.createInsecure();
  const ca = tls.clientCa ? Buffer.from(tls.clientCa) : null;
  // checkClientCertificate = true: a client without a certificate signed by `clientCa`
  // fails the TLS handshake before any method runs.
  return grpc.ServerCredentials.createSsl(ca, [{ cert_chain: Buffer.from(tls.cert), private_key: Buffer.from(tls.key) }], ca !== null);
}

/** Starts the plugin; resolves once it listens. */
export async function startPluginServer<B extends SecretBackend = MemoryStore>(opts: PluginServerOptions<B> = {}): Promise<PluginServer<B>> {
  const logger = opts.logger ?? pino({ level: 'silent' });
  const backend = (opts.backend ?? new MemoryStore(opts.data)) as B;
  const contract = grpc.loadPackageDefinition(protoLoader.loadSync(opts.protoPath ?? secretsProtoPath(), LOADER_OPTIONS));
  const health = grpc.loadPackageDefinition(protoLoader.loadSync(join(packageRoot(), 'examples', 'grpc-plugin', 'health.proto'), LOADER_OPTIONS));
  const server = new grpc.Server();
  server.addService((contract.SecretsServer as grpc.ServiceClientConstructor).service, implementation(backend, logger));
  const healthService = ((health.grpc as grpc.GrpcObject).health as grpc.GrpcObject).v1 as grpc.GrpcObject;
  server.addService((healthService.Health as grpc.ServiceClientConstructor).service, {
    Check: (_call: unknown, cb: grpc.sendUnaryData<{ status: string }>) => cb(null, { status: 'SERVING' }),
  });
  const listen = opts.listen ?? '127.0.0.1:0';
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(listen, credentials(opts.tls), (err, p) => (err ? reject(err) : resolve(p)));
  });
  const host = listen.slice(0, listen.lastIndexOf(':'));
  logger.info({ address: `${host}:${port}`, tls: !!opts.tls, mtls: !!opts.tls?.clientCa }, 'SecretsServer listening');
  return {
    port,
    address: `${host}:${port}`,
    store: backend,
    stop: () =>
      new Promise<void>((resolve) => {
        let done = false;
        const finish = () => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          resolve();
        };
        // Finish calls in flight, but do not wait long for clients to hang up.
        const timer = setTimeout(() => {
          server.forceShutdown();
          finish();
        }, 2_000);
        server.tryShutdown(finish);
      }),
  };
}
