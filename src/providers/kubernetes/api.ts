// A minimal Kubernetes API client over node:https, for the few calls the provider makes
// (Secrets get/list/create/update/delete, SelfSubjectAccessReview).
//
// Why not @kubernetes/client-node (1.4.0): measured on this machine (Node 20.20.2, AMD
// EPYC, 2 vCPUs, loaded), each in a fresh process with pino already imported (RSS 49
// MiB), against the test platform's kube-apiserver, compiled JS, 3 runs each:
//   node:https (this file)  import 13–18 ms, first getSecret done at 33–44 ms,
//                           RSS after 21 GETs +4.6–4.8 MiB
//   client-node             import 713–849 ms, first GET done at 735–890 ms,
//                           RSS after 21 GETs +62–68 MiB
// (a bare `import('@kubernetes/client-node')`: 2.1–2.9 s, +65–70 MiB). The agent's
// budget is 40 MiB RSS and < 150 ms to the first file, so client-node is out.
//
// Every answer is mapped to a ProviderError whose message is built here from the status
// code and what was asked (verb, resource, namespace): API server messages are never
// passed through, so nothing a webhook or the server echoes can reach a log.
import type { Agent, IncomingMessage } from 'node:http';
import { ProviderError } from '../types.js';
import type { Connection } from './connection.js';
import { proxyFor, tunnelIdentity } from '../../egress/proxy.js';
import { EgressError, pooledHttpsAgent, requestOn, resolveChecked } from '../../egress/connect.js';

export type Verb = 'get' | 'list' | 'create' | 'update' | 'delete';

/** What a request does, for messages: `get secrets in namespace "x"`. */
export interface Op {
  verb: Verb | 'create selfsubjectaccessreviews';
  namespace: string;
  /** The Secret name, when the request is about one. */
  name?: string;
}

export interface ApiResponse {
  status: number;
  body: unknown;
}

/** Thrown for 409: the caller re-reads and retries. */
export class ConflictError extends Error {
  override name = 'ConflictError';
}

const MAX_BODY = 32 * 1024 * 1024;

const UNREACHABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ECONNABORTED']);

function isTlsError(code: string): boolean {
  return code.startsWith('ERR_TLS') || code.startsWith('ERR_SSL') || /CERT|SELF_SIGNED|UNABLE_TO_|DEPTH_ZERO/.test(code);
}

function describeOp(op: Op): string {
  if (op.verb === 'create selfsubjectaccessreviews') return 'create selfsubjectaccessreviews';
  return `${op.verb} secrets in namespace "${op.namespace}"`;
}

interface Attempt {
  agent: Agent;
  conn: Connection;
  token: string | undefined;
}

export class KubeApi {
  private conn: Connection;
  private agent: Agent;
  private closed = false;

  constructor(
    private readonly storeId: string,
    conn: Connection,
    private readonly timeoutMs: number,
    /** Re-resolves the connection (rotated credentials) after a 401. */
    private readonly reconnect: () => Promise<Connection>,
  ) {
    this.conn = conn;
    this.agent = KubeApi.agentFor(conn);
  }

  /** What verifies the API server: given to the agent and, for a CONNECT tunnel through the
   *  environment's proxy (src/egress/proxy.ts), with each request. */
  static tlsFor(conn: Connection) {
    return {
      rejectUnauthorized: true,
      ...(conn.ca ? { ca: conn.ca } : {}),
      ...(conn.servername ? { servername: conn.servername } : {}),
      ...(conn.cert && conn.key ? { cert: conn.cert, key: conn.key } : {}),
      ...tunnelIdentity(conn.url),
    };
  }

  /** Through the environment's proxy (the address checked first, in attempt()), or with
   *  sockets the egress policy checks (src/egress/connect.ts) when the spec named the server. */
  static agentFor(conn: Connection): Agent {
    return pooledHttpsAgent(conn.url, conn.policy, { keepAlive: true, maxSockets: 8, ...KubeApi.tlsFor(conn) });
  }

  get identity(): string {
    return this.conn.identity;
  }

  get url(): string {
    return this.conn.url;
  }

  /** Sends one request; 401 once re-reads the credentials and, if they changed, retries. */
  async request(op: Op, method: string, path: string, body?: unknown): Promise<ApiResponse> {
    if (this.closed) throw new ProviderError('Unknown', this.storeId, 'client is closed', op.name);
    const first = await this.attempt();
    const res = await this.send(first, op, { method, path, body });
    if (res.status !== 401) return this.check(op, res);
    const next = await this.refresh(first);
    if (!next) return this.check(op, res);
    return this.check(op, await this.send(next, op, { method, path, body }));
  }

  private async attempt(): Promise<Attempt> {
    const conn = this.conn;
    if (conn.policy && proxyFor(conn.url)) {
      try {
        await resolveChecked(new URL(conn.url).hostname, conn.policy);
      } catch (err) {
        throw new ProviderError((err as EgressError).code ?? 'Unreachable', this.storeId, (err as Error).message);
      }
    }
    const token = await conn.token?.();
    if (conn.token && !token) {
      // Never fall back to an anonymous request: say what is wrong instead.
      throw new ProviderError('AuthFailed', this.storeId, `the token of ${conn.identity} is empty`);
    }
    return { agent: this.agent, conn, token };
  }

  /** New credentials after a 401, or undefined when nothing changed. */
  private async refresh(used: Attempt): Promise<Attempt | undefined> {
    let conn: Connection;
    try {
      conn = await this.reconnect();
    } catch {
      return undefined;
    }
    let token: string | undefined;
    try {
      token = await conn.token?.();
    } catch {
      return undefined;
    }
    if (conn.token && !token) return undefined;
    const tlsChanged = !sameBytes(conn.cert, used.conn.cert) || !sameBytes(conn.key, used.conn.key) ||
      String(conn.ca) !== String(used.conn.ca) || conn.url !== used.conn.url;
    if (!tlsChanged && token === used.token) return undefined;
    if (tlsChanged) {
      this.agent.destroy();
      this.agent = KubeApi.agentFor(conn);
    }
    this.conn = conn;
    return { agent: this.agent, conn, token };
  }

  private send(a: Attempt, op: Op, req: { method: string; path: string; body?: unknown }): Promise<ApiResponse> {
    const { method, path, body } = req;
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'esi' };
    if (a.token) headers.authorization = `Bearer ${a.token}`;
    if (payload) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(payload.length);
    }
    return new Promise<ApiResponse>((resolve, reject) => {
      let settled = false;
      const fail = (err: ProviderError) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(err);
      };
      const req = requestOn(`${a.conn.url}${path}`, { method, agent: a.agent, headers, ...KubeApi.tlsFor(a.conn) }, (res) => {
        readBody(res).then(
          (raw) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            resolve({ status: res.statusCode ?? 0, body: parseJson(raw) });
          },
          () => fail(this.networkError(op, 'ECONNRESET')),
        );
      });
      const timer = setTimeout(() => {
        fail(new ProviderError('Timeout', this.storeId, `no answer from the Kubernetes API at ${a.conn.url} within ${this.timeoutMs} ms (${describeOp(op)})`, op.name));
        req.destroy();
      }, this.timeoutMs);
      req.on('error', (err: NodeJS.ErrnoException) => fail(err instanceof EgressError
        ? new ProviderError(err.code, this.storeId, `${err.message} (to ${describeOp(op)})`, op.name)
        : this.networkError(op, err.code ?? 'error')));
      req.end(payload);
    });
  }

  private networkError(op: Op, code: string): ProviderError {
    const url = this.conn.url;
    if (isTlsError(code)) {
      return new ProviderError('Unreachable', this.storeId,
        `TLS verification of the Kubernetes API at ${url} failed (${code}); check kubernetes.server.caBundle / caProvider`, op.name);
    }
    const what = UNREACHABLE.has(code) ? 'cannot reach' : 'request failed to';
    return new ProviderError('Unreachable', this.storeId, `${what} the Kubernetes API at ${url} (${code}) to ${describeOp(op)}`, op.name);
  }

  /** Maps a non-2xx answer (other than 404 and 409, which callers interpret) to an error. */
  private check(op: Op, res: ApiResponse): ApiResponse {
    const { status } = res;
    if ((status >= 200 && status < 300) || status === 404) return res;
    const who = this.conn.identity;
    if (status === 409) throw new ConflictError(`conflict on ${describeOp(op)}`);
    if (status === 401) {
      throw new ProviderError('AuthFailed', this.storeId,
        `the Kubernetes API at ${this.conn.url} rejected the credentials (401 Unauthorized) of ${who}; ${this.conn.authHint}`, op.name);
    }
    if (status === 403) throw this.forbidden(op, res.body);
    const reason = statusReason(res.body);
    if (status === 422 || status === 400) {
      throw new ProviderError('InvalidSpec', this.storeId, `the Kubernetes API refused to ${describeOp(op)} (${status}${reason ? ` ${reason}` : ''}${invalidFields(res.body)})`, op.name);
    }
    throw new ProviderError('Unknown', this.storeId, `the Kubernetes API answered ${status}${reason ? ` ${reason}` : ''} to ${describeOp(op)}`, op.name);
  }

  private forbidden(op: Op, body: unknown): ProviderError {
    const who = this.conn.identity;
    const user = forbiddenUser(body);
    if (!user) {
      // Not an RBAC denial (those name the user): an admission policy or webhook.
      return new ProviderError('Forbidden', this.storeId, `the Kubernetes API refused to ${describeOp(op)} (403 Forbidden by admission, not RBAC)`, op.name);
    }
    const [verb, resource] = op.verb === 'create selfsubjectaccessreviews' ? ['create', 'selfsubjectaccessreviews'] : [op.verb, 'secrets'];
    const scope = resource === 'secrets' ? ` in namespace "${op.namespace}"` : '';
    return new ProviderError('Forbidden', this.storeId,
      `"${user}" (${who}) may not ${describeOp(op)} (403 Forbidden): RBAC must allow "${verb}" on ${resource}${scope} for ${who}`, op.name);
  }

  close(): void {
    this.closed = true;
    this.agent.destroy();
  }
}

function sameBytes(a?: Buffer, b?: Buffer): boolean {
  if (!a || !b) return a === b;
  return a.equals(b);
}

function readBody(res: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        res.destroy(new Error('response too large'));
        return;
      }
      chunks.push(c);
    });
    res.on('end', () => resolve(Buffer.concat(chunks)));
    res.on('error', reject);
    res.on('aborted', () => reject(new Error('aborted')));
  });
}

function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch {
    return undefined;
  }
}

type Status = { reason?: unknown; message?: unknown; details?: { causes?: { field?: unknown; reason?: unknown }[] } };

/** A Status's machine-readable reason (e.g. `Invalid`), never its message. */
function statusReason(body: unknown): string | undefined {
  const r = (body as Status | undefined)?.reason;
  return typeof r === 'string' && /^[A-Za-z]{1,64}$/.test(r) ? r : undefined;
}

/** The fields named by an Invalid status (`data[bad key]: FieldValueInvalid`). */
function invalidFields(body: unknown): string {
  const causes = (body as Status | undefined)?.details?.causes;
  if (!Array.isArray(causes) || causes.length === 0) return '';
  // Only what has the shape of a field path and a reason: the server is the spec's to choose,
  // and free text from it would reach status.
  const parts = causes.slice(0, 5).map((c) => [String(c.field ?? ''), String(c.reason ?? '')])
    .filter(([f, r]) => /^[A-Za-z0-9_.\-[\]]{1,128}$/.test(f!) && /^[A-Za-z]{1,64}$/.test(r!)).map(([f, r]) => `${f}: ${r}`);
  return parts.length ? `: ${parts.join('; ')}` : '';
}

/** The user a 403 names (`User "system:serviceaccount:ns:sa" cannot ...`). */
function forbiddenUser(body: unknown): string | undefined {
  const msg = (body as Status | undefined)?.message;
  if (typeof msg !== 'string') return undefined;
  // A user name's shape only (system:serviceaccount:<ns>:<name>, an OIDC name): see invalidFields.
  return /User "([A-Za-z0-9:@._-]{1,253})" cannot/.exec(msg)?.[1];
}
