// A thin JSON client for the Kubernetes API on top of a KubeConfig's authentication
// (client certificates, bearer tokens, exec plugins: whatever `applyToHTTPSOptions`
// sets). The reconciler writes tens of thousands of objects: this keeps connections
// alive, lets callers pick the patch content type, and counts every write (the
// "0 writes per idle refresh" budget is measured with it). Reads go through informers;
// the few direct ones are counted and paced too (RestOptions).
import type { KubeConfig } from '@kubernetes/client-node';
import { Agent as HttpAgent, request as httpRequest, type ClientRequestArgs, type RequestOptions } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

const MERGE_PATCH = 'application/merge-patch+json';
export const JSON_PATCH = 'application/json-patch+json';

/** An apiserver error: the HTTP code and the Status reason/message (never a request body). */
export class KubeError extends Error {
  constructor(readonly code: number, readonly reason: string, message: string) {
    super(message);
    this.name = 'KubeError';
  }
}

export function isKubeStatus(err: unknown, code: number): boolean {
  return err instanceof KubeError && err.code === code;
}

export interface RestOptions {
  /** Called after every successful write (POST/PUT/PATCH/DELETE), with the verb and path. */
  onWrite?: (method: Method, path: string) => void;
  /** Awaited before every write: a rate limiter toward the apiserver. */
  beforeWrite?: () => Promise<void>;
  /** Awaited before every read (GET): the same limiter, so reads a tenant's objects drive
   *  (generators, credential Secrets, template sources) are paced as writes are. */
  beforeRead?: () => Promise<void>;
  /** Called before every read is sent, with its path (the reads metric: a 404 is a read too). */
  onRead?: (path: string) => void;
  /** Per-request deadline in ms (default 30 000). */
  timeoutMs?: number;
  /** Upper bound of concurrent connections (default 32). */
  maxSockets?: number;
}

export interface CallOptions {
  /** The answer of a successful write is not read (drained, never parsed): the object the
   *  apiserver sends back (a Secret's values included) is not needed, and at 10 000 writes
   *  its parse was a tenth of the controller's CPU. An error's Status is still read. */
  unread?: boolean;
}

/** A write whose answer the caller does not read (CallOptions.unread). */
export const UNREAD = { unread: true } as const;

/** How long one reading of the kubeconfig's credentials serves requests. */
export const AUTH_REUSE_MS = 1_000;

/** What a request takes from applyToHTTPSOptions; never its Agent (ours pools the sockets). */
const TLS_KEYS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername', 'auth'] as const;
/** PEM text, kept as strings (a pfx is binary and stays a Buffer). */
const PEM_KEYS: ReadonlySet<string> = new Set(['ca', 'cert', 'key']);

interface Auth {
  tls: Record<string, unknown>;
  headers: Record<string, string>;
}

/** The request option naming a KubeRest's socket pool (see PoolAgent). */
const POOL = 'esiPool';

/** Node's https.Agent names the socket pool of each request from all its TLS options, the
 *  CA, certificate and key text included: kilobytes joined and hashed per request. A KubeRest
 *  talks to one server with one set of TLS material at a time, so its requests name their pool
 *  themselves: the server and a generation that moves when the material changes (a rotated
 *  client certificate gets new connections, as before). */
class PoolAgent extends HttpsAgent {
  override getName(o?: ClientRequestArgs & { [POOL]?: string }): string {
    return o?.[POOL] ?? super.getName(o);
  }
}

export class KubeRest {
  private readonly server: URL;
  private readonly agent: HttpAgent | HttpsAgent;
  private auth?: { at: number; p: Promise<Auth> };
  /** The TLS material last read, and its generation (the socket pool's name). */
  private tls?: { values: Record<string, unknown>; generation: number };

  constructor(private readonly kc: KubeConfig, private readonly opts: RestOptions = {}) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new Error('kubeconfig has no current cluster');
    this.server = new URL(cluster.server);
    const agentOpts = { keepAlive: true, maxSockets: opts.maxSockets ?? 32 };
    this.agent = this.server.protocol === 'http:' ? new HttpAgent(agentOpts) : new PoolAgent(agentOpts);
  }

  /** The kubeconfig's TLS material and credentials, as applyToHTTPSOptions gives them, reused
   *  for AUTH_REUSE_MS. Per request it decoded (or read from disk) the CA, certificate and key
   *  and built an Agent each time (about 5 % of the controller's profile at 10 000 ExternalSecrets);
   *  its Buffers also made the agent's pool key (which includes ca, cert, key) a conversion
   *  of kilobytes per request. Strings instead: PEM is text. Tokens that rotate (a projected
   *  token file, an exec plugin) are read again after the window, as the kubeconfig's own
   *  authenticators cache them anyway. */
  private authOptions(): Promise<Auth> {
    const now = Date.now();
    if (this.auth && now - this.auth.at < AUTH_REUSE_MS) return this.auth.p;
    const p = (async () => {
      const o: RequestOptions & Record<string, unknown> = { headers: {} };
      await this.kc.applyToHTTPSOptions(o);
      const tls: Record<string, unknown> = {};
      for (const k of TLS_KEYS) if (o[k] !== undefined) tls[k] = PEM_KEYS.has(k) && Buffer.isBuffer(o[k]) ? o[k].toString('utf8') : o[k];
      return { tls: this.pooled(tls), headers: (o.headers ?? {}) as Record<string, string> };
    })();
    this.auth = { at: now, p };
    // A failure (an exec plugin that failed) is not kept: the next request asks again.
    p.catch(() => {
      if (this.auth?.p === p) this.auth = undefined;
    });
    return p;
  }

  /** `tls` with the name of the socket pool its requests share (PoolAgent). */
  private pooled(tls: Record<string, unknown>): Record<string, unknown> {
    const prev = this.tls;
    const same = prev && TLS_KEYS.every((k) => (Buffer.isBuffer(tls[k]) && Buffer.isBuffer(prev.values[k]) ? tls[k].equals(prev.values[k]) : tls[k] === prev.values[k]));
    const generation = same ? prev.generation : (prev?.generation ?? 0) + 1;
    this.tls = { values: tls, generation };
    return { ...tls, [POOL]: `${this.server.host}#${generation}` };
  }

  get<T>(path: string): Promise<T> {
    return this.call<T>('GET', path);
  }
  /** The object at `path`, or undefined when the API (not a cache) has none (404); any
   *  other failure is thrown. */
  async find<T>(path: string): Promise<T | undefined> {
    try {
      return await this.call<T>('GET', path);
    } catch (err) {
      if (isKubeStatus(err, 404)) return undefined;
      throw err;
    }
  }
  /** Whether the API (not a cache) has the object at `path`. */
  async exists(path: string): Promise<boolean> {
    return (await this.find(path)) !== undefined;
  }
  create<T>(path: string, body: unknown): Promise<T>;
  create(path: string, body: unknown, o: typeof UNREAD): Promise<void>;
  create<T>(path: string, body: unknown, o?: CallOptions): Promise<T> {
    return this.call<T>('POST', path, body, o);
  }
  replace<T>(path: string, body: unknown): Promise<T>;
  replace(path: string, body: unknown, o: typeof UNREAD): Promise<void>;
  replace<T>(path: string, body: unknown, o?: CallOptions): Promise<T> {
    return this.call<T>('PUT', path, body, o);
  }
  patch<T>(path: string, body: unknown, contentType?: string): Promise<T>;
  patch(path: string, body: unknown, contentType: string | undefined, o: typeof UNREAD): Promise<void>;
  patch<T>(path: string, body: unknown, contentType = MERGE_PATCH, o?: CallOptions): Promise<T> {
    return this.call<T>('PATCH', path, body, { ...o, contentType });
  }
  delete<T>(path: string, body?: unknown): Promise<T> {
    return this.call<T>('DELETE', path, body);
  }

  async call<T>(method: Method, path: string, body?: unknown, o: CallOptions & { contentType?: string } = {}): Promise<T> {
    const contentType = o.contentType ?? 'application/json';
    await (method === 'GET' ? this.opts.beforeRead?.() : this.opts.beforeWrite?.());
    const url = new URL(path, this.server);
    if (method === 'GET') this.opts.onRead?.(url.pathname);
    const options: RequestOptions & Record<string, unknown> = {
      method, protocol: url.protocol, hostname: url.hostname, port: url.port, path: `${url.pathname}${url.search}`,
      headers: { accept: 'application/json' }, agent: this.agent, timeout: this.opts.timeoutMs ?? 30_000,
    };
    const auth = await this.authOptions();
    Object.assign(options, auth.tls);
    Object.assign(options.headers as object, auth.headers);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    if (payload) Object.assign(options.headers as object, { 'content-type': contentType, 'content-length': payload.length });
    const result = await new Promise<T>((resolve, reject) => {
      const req = (url.protocol === 'http:' ? httpRequest : httpsRequest)(options, (res) => {
        const status = res.statusCode ?? 0;
        if (o.unread && status >= 200 && status < 300) {
          res.on('error', reject);
          res.on('end', () => resolve(undefined as T));
          return void res.resume();
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          if (status >= 200 && status < 300) return resolve(json as T);
          const s = (json ?? {}) as { reason?: string; message?: string };
          reject(new KubeError(status, s.reason ?? 'Unknown', `${method} ${url.pathname}: ${status} ${s.message ?? res.statusMessage ?? ''}`.trim()));
        });
      });
      req.on('timeout', () => req.destroy(new KubeError(504, 'Timeout', `${method} ${url.pathname}: no answer within the deadline`)));
      req.on('error', reject);
      req.end(payload);
    });
    if (method !== 'GET') this.opts.onWrite?.(method, url.pathname);
    return result;
  }

  close(): void {
    this.agent.destroy();
  }
}
