// What every AWS SDK client of this provider shares: explicit region, endpoint and
// credentials (never the SDK's ambient chain or shared config files), short timeouts and
// few attempts derived from the caller's deadline, and a per-call abort signal.
import type { Logger } from 'pino';
import type { Agent } from 'node:http';
import { proxyAgent } from '../../egress/proxy.js';

/** The SDK's credential identity (structurally; the SDK's own type lives in a transitive
 *  package this project does not depend on directly). */
export interface AwsCredentialIdentity {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  expiration?: Date;
}
export type AwsCredentialIdentityProvider = () => Promise<AwsCredentialIdentity>;

/** The SDK warns on every process start on Node < 22 (a future release will need it);
 *  ESI pins a release that supports Node 20, so the warning is noise in the agent's log. */
export function quietNodeVersionWarning(logger: Logger): void {
  if (process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED === undefined) {
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
    logger.debug('AWS SDK Node version warning disabled (ESI pins an SDK release that supports this Node version)');
  }
}

export interface CommonConfig {
  region: string;
  endpoint?: string;
  credentials: AwsCredentialIdentityProvider;
  maxAttempts: number;
  requestHandler: { connectionTimeout: number; requestTimeout: number; httpAgent?: Agent; httpsAgent?: Agent };
  logger: { debug(): void; info(): void; warn(): void; error(): void };
}

const silent = { debug() {}, info() {}, warn() {}, error() {} };

/** SDK client configuration for one store. Two attempts at most: the callers (agent
 *  refresh loop, reconciler) retry with backoff and jitter themselves. */
export function commonConfig(opts: {
  region: string;
  /** The endpoint prefix (`secretsmanager`, `ssm`, `sts`): where the proxy decision looks. */
  service: string;
  endpoint?: string;
  credentials: AwsCredentialIdentityProvider;
  timeoutMs: number;
}): CommonConfig {
  const { timeoutMs } = opts;
  return {
    region: opts.region,
    ...(opts.endpoint ? { endpoint: opts.endpoint } : {}),
    credentials: opts.credentials,
    maxAttempts: 2,
    requestHandler: { connectionTimeout: Math.min(timeoutMs, 5000), requestTimeout: timeoutMs, ...proxied(opts.endpoint ?? `https://${opts.service}.${opts.region}.amazonaws.com`) },
    // SDK log lines may include request parameters (names, values of PutSecretValue).
    logger: silent,
  };
}

/** The SDK's agents for the environment's proxy, when one applies to `endpoint`. */
function proxied(endpoint: string): { httpAgent?: Agent; httpsAgent?: Agent } {
  const agent = proxyAgent(endpoint);
  if (!agent) return {};
  return new URL(endpoint).protocol === 'https:' ? { httpsAgent: agent } : { httpAgent: agent };
}

/** Options of one `client.send`: the whole call, retries included, ends by the deadline. */
export function callOptions(timeoutMs: number): { abortSignal: AbortSignal } {
  return { abortSignal: AbortSignal.timeout(timeoutMs) };
}

/** A credential source that refuses: used where an operation must never sign with
 *  ambient credentials (the unauthenticated STS web-identity call). */
export const noCredentials: AwsCredentialIdentityProvider = async () => {
  throw Object.assign(new Error('no AWS credentials configured for this client'), { name: 'CredentialsProviderError' });
};

/** Cached temporary credentials, refreshed five minutes before they expire. */
export function cachedCredentials(fetch: () => Promise<AwsCredentialIdentity>): AwsCredentialIdentityProvider & { reset(): void } {
  let current: Promise<AwsCredentialIdentity> | undefined;
  const fresh = (c: AwsCredentialIdentity) => !c.expiration || c.expiration.getTime() - Date.now() > 5 * 60_000;
  const provider = async () => {
    if (current) {
      const c = await current.catch(() => undefined);
      if (c && fresh(c)) return c;
    }
    const p = fetch();
    current = p;
    p.catch(() => {
      if (current === p) current = undefined;
    });
    return p;
  };
  return Object.assign(provider, { reset: () => (current = undefined) });
}

// ---------------------------------------------------------------- non-JSON error bodies

interface RawResponse {
  statusCode: number;
  headers: Record<string, string>;
  body?: unknown;
}

const MAX_ERROR_BODY = 64 * 1024;

async function readBody(body: unknown): Promise<Buffer | undefined> {
  if (body instanceof Uint8Array) return Buffer.from(body);
  if (!body || typeof (body as AsyncIterable<unknown>)[Symbol.asyncIterator] !== 'function') return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Uint8Array | string>) {
    const b = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk);
    size += b.length;
    if (size > MAX_ERROR_BODY) break;
    chunks.push(b);
  }
  return Buffer.concat(chunks);
}

const xmlText = (s: string) =>
  s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');

/** Rewrites an XML error (the IAM/STS query-protocol shape, which some AWS-compatible
 *  endpoints and proxies answer JSON-protocol services with) into the JSON error the
 *  Secrets Manager and SSM deserializers expect, so the error keeps its name
 *  (`InvalidClientTokenId`, `AccessDenied`, …) instead of becoming a parse failure. */
async function rewriteXmlError(res: RawResponse): Promise<void> {
  const type = Object.entries(res.headers).find(([k]) => k.toLowerCase() === 'content-type')?.[1] ?? '';
  if (res.statusCode < 400 || /json/i.test(type)) return;
  const body = await readBody(res.body);
  if (!body) return;
  const text = body.toString('utf8');
  const code = /<Code>([A-Za-z0-9_.:-]{1,100})<\/Code>/.exec(text)?.[1];
  if (!code) {
    res.body = new Uint8Array(body);
    return;
  }
  const message = xmlText(/<Message>([^<]{0,1000})<\/Message>/.exec(text)?.[1] ?? '');
  for (const k of Object.keys(res.headers)) if (/^(content-type|content-length|x-amzn-errortype)$/i.test(k)) delete res.headers[k];
  res.headers['content-type'] = 'application/x-amz-json-1.1';
  res.headers['x-amzn-errortype'] = code;
  res.body = new Uint8Array(Buffer.from(JSON.stringify({ __type: code, message })));
}

interface Stack {
  add(mw: unknown, opts: { step: string; name: string; priority: string }): void;
}

/** Installs the XML-error rewrite on a JSON-protocol client (inside the deserializer). */
export function addXmlErrorRewrite(client: { middlewareStack: unknown }): void {
  (client.middlewareStack as Stack).add(
    (next: (args: unknown) => Promise<{ response: RawResponse }>) => async (args: unknown) => {
      const out = await next(args);
      if (out?.response && typeof out.response.statusCode === 'number') await rewriteXmlError(out.response);
      return out;
    },
    { step: 'deserialize', name: 'esiXmlErrorRewrite', priority: 'low' },
  );
}
