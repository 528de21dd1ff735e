// AWS change notifications (docs/fleet.md, "Notifications"): the operator's EventBridge rule
// routes Secrets Manager and Parameter Store change events to the operator's SQS queue; the
// controller long-polls it with its own AWS identity and counts, per entry, the changes it was
// told of (AwsFeed). Those counts are the AWS sources' versions in the pods' change generations
// (fleet.ts), so a change reaches exactly the pods whose ExternalSecrets read the entry.
//
// Bounded: at most 10 messages per receive, one event per message, at most MAX_NAMES entries an
// event (aws-events.ts), at most MAX_ENTRIES entries remembered (feed.ts). Every message is deleted once
// handled, a malformed one too (counted, logged by its message id; its body is never quoted).
import type * as SqsModule from '@aws-sdk/client-sqs';
import type { Logger } from 'pino';
import { restartDelay } from '../../kube/informer.js';
import type { AWSProvider } from '../../api/types.js';
import { buildCredentials } from '../../providers/aws/auth.js';
import { callOptions, commonConfig, type AwsCredentialIdentityProvider } from '../../providers/aws/sdk.js';
import { endpointFromEnv, irsaFromEnv, podIdentityFromEnv } from '../../providers/aws/spec.js';
import { MalformedEvent, parseAwsEvent, type AwsChange } from './aws-events.js';
import { ChangeFeed } from './feed.js';
import { awsScope } from './reads.js';

/** Messages one receive asks for: SQS's maximum. */
const BATCH = 10;
/** Long poll: a receive waits up to this for a message (SQS's maximum). */
const WAIT_SECONDS = 20;
/** A message not deleted within this comes back (a controller that died mid-batch). */
const VISIBILITY_SECONDS = 60;

/** The AWS entries' change counts: one event counts once for each entry it names. */
export class AwsFeed extends ChangeFeed {
  apply(change: AwsChange): void {
    this.record(awsScope(change.service, change.region), change.names);
  }
}

export interface AwsQueueOptions {
  /** The operator's queue (--aws-change-queue-url). */
  url: string;
  region: string;
  credentials: AwsCredentialIdentityProvider;
  feed: AwsFeed;
  logger: Logger;
  /** A change was applied to the feed: when it was seen. */
  changed(seenAt: number): void;
  /** One message handled: a change, an event that changes nothing, or a malformed one. */
  counted(result: 'change' | 'ignored' | 'malformed'): void;
}

/** The region of an SQS queue URL (`https://sqs.<region>.amazonaws.com/<account>/<name>`). */
export function queueRegion(url: string): string | undefined {
  try {
    return /^sqs[.-]([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com(?:\.cn)?$/.exec(new URL(url).hostname)?.[1];
  } catch {
    return undefined;
  }
}

/** The keys of the credentials Secret (--aws-change-queue-credentials-secret). */
export const QUEUE_SECRET_KEYS = { accessKeyId: 'access-key-id', secretAccessKey: 'secret-access-key' } as const;

/** Why the controller has no identity to read the queue with, if it has none. */
export function queueIdentityProblem(secret: string | undefined): string | undefined {
  if (secret || podIdentityFromEnv() || irsaFromEnv()) return undefined;
  return '--aws-change-queue-url needs the controller\'s own AWS identity: EKS Pod Identity, IRSA, or --aws-change-queue-credentials-secret';
}

/**
 * The controller's own identity for the queue, never a tenant's nor a pod's: static keys from
 * a Secret of the controller's namespace when the operator names one, else the controller's
 * environment (EKS Pod Identity, IRSA), as the provider's own credential code resolves them.
 */
export async function queueCredentials(o: {
  region: string; namespace: string; secret?: string; logger: Logger;
  readSecretKey(name: string, key: string): Promise<Uint8Array>;
}): Promise<AwsCredentialIdentityProvider> {
  const problem = queueIdentityProblem(o.secret);
  if (problem) throw new Error(problem);
  const spec: AWSProvider = {
    service: 'SecretsManager', region: o.region,
    ...(o.secret ? { auth: { secretRef: {
      accessKeyIDSecretRef: { name: o.secret, key: QUEUE_SECRET_KEYS.accessKeyId },
      secretAccessKeySecretRef: { name: o.secret, key: QUEUE_SECRET_KEYS.secretAccessKey },
    } } } : {}),
  };
  const creds = await buildCredentials({
    storeId: 'the AWS change queue', namespace: o.namespace, spec,
    readCredential: (ref) => o.readSecretKey(ref.name, ref.key ?? ''),
    serviceAccountToken: () => Promise.reject(new Error('the AWS change queue uses no service-account token of its own')),
    environmentIdentity: true, logger: o.logger, timeoutMs: 10_000,
  }, spec);
  return creds.provider;
}

export class AwsChangeQueue {
  private stopped = false;
  private readonly abort = new AbortController();

  constructor(private readonly o: AwsQueueOptions) {}

  start(): void {
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    this.abort.abort();
  }

  /** One message: its change applied to the feed, or counted as ignored or malformed. */
  handle(m: SqsModule.Message): void {
    let change: AwsChange | undefined;
    try {
      change = parseAwsEvent(m.Body ?? '');
    } catch (err) {
      const why = err instanceof MalformedEvent ? err.message : 'unreadable';
      this.o.logger.warn({ messageId: m.MessageId, why }, 'dropped a malformed change notification from the AWS queue');
      this.o.counted('malformed');
      return;
    }
    if (!change) return this.o.counted('ignored');
    this.o.feed.apply(change);
    this.o.counted('change');
    this.o.changed(Date.now());
  }

  private async run(): Promise<void> {
    const sqs = await import('@aws-sdk/client-sqs');
    const endpoint = endpointFromEnv('sqs');
    // The request outlives the long poll; two attempts at most, then this loop's backoff.
    const client = new sqs.SQSClient(commonConfig({ region: this.o.region, service: 'sqs', ...(endpoint ? { endpoint } : {}), credentials: this.o.credentials, timeoutMs: (WAIT_SECONDS + 10) * 1000 }));
    let failures = 0;
    this.o.logger.info({ queue: this.o.url, region: this.o.region }, 'reading AWS change notifications');
    try {
      while (!this.stopped) {
        try {
          await this.receive(sqs, client);
          failures = 0;
        } catch (err) {
          if (this.stopped) return;
          failures++;
          // Said at the first failure and then at every doubling, not every 5 s.
          if ((failures & (failures - 1)) === 0) this.o.logger.warn({ queue: this.o.url, failures, err: (err as Error).message }, 'reading the AWS change queue failed; retrying after a delay (notifications wait, polling goes on)');
          await new Promise((r) => setTimeout(r, restartDelay(failures)).unref());
        }
      }
    } finally {
      client.destroy();
    }
  }

  /** One long poll: up to BATCH messages handled, then deleted. */
  private async receive(sqs: typeof SqsModule, client: SqsModule.SQSClient): Promise<void> {
    const signal = () => AbortSignal.any([this.abort.signal, callOptions((WAIT_SECONDS + 15) * 1000).abortSignal]);
    const out = await client.send(new sqs.ReceiveMessageCommand({
      QueueUrl: this.o.url, MaxNumberOfMessages: BATCH, WaitTimeSeconds: WAIT_SECONDS, VisibilityTimeout: VISIBILITY_SECONDS,
    }), { abortSignal: signal() });
    const messages = (out.Messages ?? []).slice(0, BATCH);
    for (const m of messages) this.handle(m);
    const entries = messages.filter((m) => m.ReceiptHandle).map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! }));
    if (!entries.length) return;
    const del = await client.send(new sqs.DeleteMessageBatchCommand({ QueueUrl: this.o.url, Entries: entries }), { abortSignal: signal() });
    if (del.Failed?.length) this.o.logger.warn({ failed: del.Failed.length }, 'could not delete handled AWS change notifications; they will come back and be handled again');
  }
}
