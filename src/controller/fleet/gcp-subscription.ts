// GCP change notifications (docs/fleet.md, "GCP"): Secret Manager publishes its events to the
// topics set on a secret; the operator subscribes one pull subscription to that topic and
// names it (--gcp-change-subscription). The controller pulls it with its own identity (a
// service-account key in a Secret of its namespace, or Application Default Credentials:
// GKE Workload Identity of its ServiceAccount) through the Pub/Sub v1 REST API
// (`:pull`, `:acknowledge`), and counts per secret the changes it was told of in the feed
// (feed.ts), which the fleet turns into the pods' change generations.
//
// Bounded: at most BATCH messages a pull, at most MAX_MESSAGE_BYTES a message
// (gcp-events.ts), at most MAX_PULL_BYTES an answer read (past it the next pulls take one
// message at a time: Pub/Sub's own limit of 10 MB a message always fits). The calls go
// through src/egress/http.ts (deadline, size bound, the operator's proxy). Every message is
// acknowledged once handled, a malformed one too (counted, logged by its message id; its
// content is never quoted).
import type { AuthClient } from 'google-auth-library';
import type { Logger } from 'pino';
import { EgressError } from '../../egress/connect.js';
import { httpCall } from '../../egress/http.js';
import { restartDelay } from '../../kube/informer.js';
import { nameProblem } from '../../kube/names.js';
import type { GCPSMProvider } from '../../api/types.js';
import type { ChangeFeed } from './feed.js';
import { MalformedEvent, parseGcpMessage, type GcpChange, type PubsubMessage } from './gcp-events.js';
import { gcpScope } from './reads.js';

/** Messages one pull asks for. */
export const BATCH = 10;
/** An answer larger than this is not read to its end. */
export const MAX_PULL_BYTES = 32 * 1024 * 1024;
/** A pull waits this long for messages before it is asked again (not a failure). */
const PULL_WAIT_MS = 60_000;
/** The emulator convention of Google's tooling: `host:port`, plain HTTP, no credentials. */
export const PUBSUB_EMULATOR_ENV = 'PUBSUB_EMULATOR_HOST';
export const DEFAULT_ENDPOINT = 'https://pubsub.googleapis.com';
/** The key of the credentials Secret (--gcp-change-credentials-secret). */
export const GCP_SECRET_KEY = 'credentials.json';
const SCOPE = 'https://www.googleapis.com/auth/pubsub';

export const SUBSCRIPTION_NAME = /^projects\/[a-z0-9][a-z0-9.:-]{0,99}\/subscriptions\/[A-Za-z][\w.~+%-]{2,254}$/;


export interface GcpSubscriptionOptions {
  /** projects/<p>/subscriptions/<s> */
  subscription: string;
  /** The API's base URL (https), or the emulator's (http). */
  endpoint: string;
  /** Authorization headers for one call; none for the emulator. */
  headers(): Promise<Record<string, string>>;
  feed: ChangeFeed;
  logger: Logger;
  changed(seenAt: number): void;
  counted(result: 'change' | 'ignored' | 'malformed'): void;
}

export interface GcpSettings {
  subscription: string;
  endpoint: string;
  emulator: boolean;
  credentialsSecret?: string;
}

/** The --gcp-change-* flags, checked; undefined when no subscription is named. */
export function gcpSubscriptionSettings(f: { subscription: string; endpoint: string; credentialsSecret: string }, env = process.env): GcpSettings | undefined {
  const [subscription, endpoint, secret] = [f.subscription.trim(), f.endpoint.trim(), f.credentialsSecret.trim()];
  if (!subscription) {
    if (endpoint || secret) throw new Error('--gcp-change-endpoint and --gcp-change-credentials-secret need --gcp-change-subscription');
    return undefined;
  }
  if (!SUBSCRIPTION_NAME.test(subscription)) throw new Error(`--gcp-change-subscription "${subscription}" must be a subscription name: projects/<project>/subscriptions/<subscription>`);
  const bad = secret ? nameProblem(secret, 'subdomain') : undefined;
  if (bad) throw new Error(`--gcp-change-credentials-secret ${bad}`);
  return { subscription, ...pubsubEndpoint(endpoint, env), ...(secret ? { credentialsSecret: secret } : {}) };
}

/** Where to pull from: the emulator when its variable is set, else the flag or Google's API. */
export function pubsubEndpoint(flag: string | undefined, env = process.env): { endpoint: string; emulator: boolean } {
  const emulator = env[PUBSUB_EMULATOR_ENV]?.trim();
  if (emulator) {
    if (!/^[\w.-]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(emulator)) throw new Error(`${PUBSUB_EMULATOR_ENV} must be host:port, got "${emulator}"`);
    return { endpoint: `http://${emulator}`, emulator: true };
  }
  const url = flag?.trim() || DEFAULT_ENDPOINT;
  // A bearer token never crosses plain HTTP: only the emulator variable allows it.
  if (!/^https:\/\/[^/\s]+$/.test(url.replace(/\/$/, ''))) throw new Error(`--gcp-change-endpoint "${url}" must be an https:// base URL such as ${DEFAULT_ENDPOINT}`);
  return { endpoint: url.replace(/\/$/, ''), emulator: false };
}

/**
 * The controller's own identity for the subscription: a service-account key from a Secret of
 * its namespace when the operator names one (read through the gcpsm provider's key code),
 * else Application Default Credentials.
 */
export async function subscriptionCredentials(o: {
  namespace: string; secret?: string; logger: Logger; readSecretKey(name: string, key: string): Promise<Uint8Array>;
}): Promise<AuthClient> {
  // Loaded at the first pull: the controller without a subscription never loads Google's auth.
  if (o.secret) {
    const { keyFileClient } = await import('../../providers/gcpsm/auth.js');
    const spec: GCPSMProvider = { auth: { secretRef: { secretAccessKeySecretRef: { name: o.secret, key: GCP_SECRET_KEY } } } };
    const { client } = await keyFileClient({
      storeId: 'the GCP change subscription', namespace: o.namespace, spec,
      readCredential: (ref) => o.readSecretKey(ref.name, ref.key ?? ''),
      serviceAccountToken: () => Promise.reject(new Error('the GCP change subscription uses no service-account token of its own')),
      logger: o.logger, timeoutMs: 10_000,
    }, spec);
    return client;
  }
  const { GoogleAuth } = await import('google-auth-library');
  return new GoogleAuth({ scopes: [SCOPE] }).getClient();
}

export class GcpChangeSubscription {
  private stopped = false;
  private readonly abort = new AbortController();
  private batch = BATCH;

  constructor(private readonly o: GcpSubscriptionOptions) {}

  start(): void {
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    this.abort.abort();
  }

  /** One message: its change recorded in the feed, or counted as ignored or malformed. */
  handle(m: PubsubMessage): void {
    let change: GcpChange | undefined;
    try {
      change = parseGcpMessage(m);
    } catch (err) {
      const why = err instanceof MalformedEvent ? err.message : 'unreadable';
      this.o.logger.warn({ messageId: typeof m.messageId === 'string' ? m.messageId.slice(0, 64) : undefined, why }, 'dropped a malformed change notification from the GCP subscription');
      this.o.counted('malformed');
      return;
    }
    if (!change) return this.o.counted('ignored');
    this.o.feed.record(gcpScope(change.location), [change.secret]);
    this.o.counted('change');
    this.o.changed(Date.now());
  }

  private async run(): Promise<void> {
    let failures = 0;
    this.o.logger.info({ subscription: this.o.subscription }, 'reading GCP change notifications');
    while (!this.stopped) {
      try {
        await this.pull();
        failures = 0;
      } catch (err) {
        if (this.stopped) return;
        failures++;
        // Said at the first failure and then at every doubling.
        if ((failures & (failures - 1)) === 0) this.o.logger.warn({ subscription: this.o.subscription, failures, err: (err as Error).message }, 'pulling the GCP change subscription failed; retrying after a delay (notifications wait, polling goes on)');
        await new Promise((r) => setTimeout(r, restartDelay(failures)).unref());
      }
    }
  }

  /** One call through the egress layer: bounded in time and size, proxies honoured. */
  private async call(verb: 'pull' | 'acknowledge', body: object, timeoutMs: number): Promise<string> {
    const answer = await httpCall({
      url: new URL(`${this.o.endpoint}/v1/${this.o.subscription}:${verb}`), method: 'POST',
      headers: { ...(await this.o.headers()), 'content-type': 'application/json' },
      body: JSON.stringify(body), timeoutMs, maxBytes: MAX_PULL_BYTES, signal: this.abort.signal,
    });
    const text = answer.body.toString('utf8');
    if (answer.status < 200 || answer.status > 299) {
      // The status and Google's error status word only: an answer is not quoted.
      const status = /"status"\s*:\s*"([A-Z_]{1,40})"/.exec(text.slice(0, 4096))?.[1];
      throw new Error(`${verb}: HTTP ${answer.status}${status ? ` ${status}` : ''}`);
    }
    return text;
  }

  /** One pull: up to `batch` messages handled, then acknowledged. */
  private async pull(): Promise<void> {
    let text: string;
    try {
      text = await this.call('pull', { maxMessages: this.batch }, PULL_WAIT_MS);
    } catch (err) {
      if (this.stopped) throw err;
      // A pull that waited its time without a message is asked again, not a failure.
      if (err instanceof EgressError && err.code === 'Timeout') return;
      if (err instanceof EgressError && err.reason === 'ERR_RESPONSE_TOO_LARGE') {
        this.o.logger.warn({ limit: MAX_PULL_BYTES }, 'a pull of the GCP change subscription answered more than the limit; pulling one message at a time');
        this.batch = 1;
        return;
      }
      throw err;
    }
    this.batch = BATCH;
    let received: unknown;
    try {
      received = (JSON.parse(text || '{}') as { receivedMessages?: unknown }).receivedMessages ?? [];
    } catch {
      throw new Error('pull: the answer is not JSON');
    }
    if (!Array.isArray(received)) throw new Error('pull: receivedMessages is not a list');
    const ackIds: string[] = [];
    for (const r of received.slice(0, BATCH) as { ackId?: unknown; message?: unknown }[]) {
      if (typeof r?.ackId === 'string') ackIds.push(r.ackId);
      this.handle(typeof r?.message === 'object' && r.message !== null ? (r.message as PubsubMessage) : {});
    }
    if (ackIds.length) await this.call('acknowledge', { ackIds }, 15_000);
  }
}
