// The fleet's parts put together for the controller: the Fleet decisions (fleet.ts), the
// Kubernetes sources' watch (kube/metadata-watch.ts), the AWS change queue (aws-queue.ts), the
// GCP change subscription (gcp-subscription.ts), the reconciler's read rate (rate.ts) and their metrics
// (docs/metrics.md, "Fleet"). The controller calls observePod / changed from its event handler.
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { AnySecretStore, ExternalSecret } from '../../api/types.js';
import type { KubeRest } from '../../kube/rest.js';
import { PODS, resourcePath, SECRETS } from '../../kube/paths.js';
import { AwsChangeQueue, AwsFeed, queueCredentials, queueIdentityProblem } from './aws-queue.js';
import type { AwsCredentialIdentityProvider } from '../../providers/aws/sdk.js';
import { Fleet } from './fleet.js';
import { GcpChangeSubscription, subscriptionCredentials, type GcpSettings } from './gcp-subscription.js';
import type { ChangeFeed } from './feed.js';
import { RateMeter } from './rate.js';
import { SourceWatch } from '../../kube/metadata-watch.js';

export interface FleetSettings {
  /** Reads per second of stores without esi.dev/read-budget (--default-read-budget). */
  defaultBudget?: number;
  /** Pod annotation patches per second (--pod-patch-qps). */
  patchQps: number;
  /** Watch the source Secrets of stores annotated esi.dev/change-notifications (--change-notifications). */
  notifications: boolean;
  /** The operator's SQS queue of AWS change events (--aws-change-queue-url and the rest). */
  aws?: { queueUrl: string; region: string; credentialsSecret?: string };
  /** The operator's Pub/Sub subscription of Secret Manager events (--gcp-change-subscription and the rest). */
  gcp?: GcpSettings;
}

export interface FleetParts {
  observePod(pod: V1Pod, verb: 'add' | 'update' | 'delete'): void;
  changed(): void;
  reconcilerRead(store: string): void;
  stop(): void;
}

export function fleetParts(o: {
  kc: KubeConfig; rest: KubeRest; logger: Logger; registry: Registry; settings: FleetSettings;
  /** The controller's own namespace (the AWS queue's credentials Secret). */
  namespace: string;
  externalSecret(ns: string, name: string): ExternalSecret | undefined;
  store(kind: 'SecretStore' | 'ClusterSecretStore', ns: string, name: string): AnySecretStore | undefined;
}): FleetParts {
  const registers = [o.registry];
  const budget = new Gauge({ name: 'esi_fleet_store_read_budget', help: 'Reads per second the store\'s read budget allows the fleet and the reconciler.', labelNames: ['store'] as const, registers });
  const planned = new Gauge({ name: 'esi_fleet_store_planned_reads', help: 'Reads per second the injected pods (at their refresh floors) and the reconciler make of the store: the budget in use.', labelNames: ['store'] as const, registers });
  const floor = new Gauge({ name: 'esi_fleet_store_refresh_floor_seconds', help: 'The refresh floor the store\'s budget sets its pods (0: none needed).', labelNames: ['store'] as const, registers });
  const pods = new Gauge({ name: 'esi_fleet_store_pods', help: 'Refreshing injected pods reading the store.', labelNames: ['store'] as const, registers });
  const notifications = new Counter({ name: 'esi_fleet_notifications_total', help: 'Change generations written to pods (each one value-free).', registers });
  const delay = new Histogram({ name: 'esi_fleet_notification_delay_seconds', help: 'From a source change seen by the controller to the pod annotation written.', buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60], registers });
  const patches = new Counter({ name: 'esi_fleet_pod_patches_total', help: 'Pod annotation patches (refresh floor, change generation), by result.', labelNames: ['result'] as const, registers });
  const awsMessages = new Counter({ name: 'esi_fleet_aws_notifications_total', help: 'Messages read from the AWS change queue, by result: change, ignored (changes nothing), malformed (dropped).', labelNames: ['result'] as const, registers });
  const gcpMessages = new Counter({ name: 'esi_fleet_gcp_notifications_total', help: 'Messages pulled from the GCP change subscription, by result: change, ignored (changes nothing), malformed (dropped).', labelNames: ['result'] as const, registers });
  const rates = new RateMeter();
  const onSource = { changed: (): void => undefined };
  const sources = o.settings.notifications ? new SourceWatch(o.kc, onSource, o.logger) : undefined;
  // The cloud entries' change counts, AWS and GCP alike (their scopes differ).
  const feed = new AwsFeed();
  const fleet = new Fleet({
    logger: o.logger, externalSecret: o.externalSecret, store: o.store,
    reconcilerRate: (s) => rates.rate(s),
    patchPod: async (ns, name, annotations) => {
      await o.rest.patch(resourcePath(PODS, { namespace: ns, name }), { metadata: { annotations } });
    },
    // A deleted Secret is a version too ('-'); a cloud entry no event named yet counts for nothing.
    sourceVersion: (s) => (s.kind === 'kubernetes' ? (sources ? sources.version(s.scope, s.name) ?? '-' : undefined) : feed.version(s.scope, s.name)),
    ...(sources ? { watchSources: (ns: ReadonlySet<string>) => sources.watchNamespaces(ns) } : {}),
    ...(o.settings.defaultBudget !== undefined ? { defaultBudget: o.settings.defaultBudget } : {}),
    patchQps: o.settings.patchQps,
    metrics: {
      planned: (store, p) => {
        budget.set({ store }, p.budget);
        planned.set({ store }, p.rate);
        floor.set({ store }, p.floor);
        pods.set({ store }, p.pods);
      },
      notified: (seconds) => {
        notifications.inc();
        delay.observe(seconds);
      },
      patched: (ok) => patches.inc({ result: ok ? 'success' : 'failure' }),
    },
  });
  onSource.changed = () => fleet.changed(Date.now());
  const queue = o.settings.aws ? awsQueue(o, o.settings.aws, feed, { fleet, messages: awsMessages }) : undefined;
  queue?.start();
  const subscription = o.settings.gcp ? gcpSubscription(o, o.settings.gcp, feed, { fleet, messages: gcpMessages }) : undefined;
  subscription?.start();
  // The reconciler's recent reads change what the budget leaves the pods: decide again now and then.
  const tick = setInterval(() => fleet.changed(), 30_000);
  tick.unref();
  return {
    observePod: (pod, verb) => fleet.observePod(pod, verb),
    changed: () => fleet.changed(),
    reconcilerRead: (s) => rates.add(s),
    stop: () => {
      clearInterval(tick);
      fleet.stop();
      sources?.stop();
      queue?.stop();
      subscription?.stop();
    },
  };
}

/** A key of a Secret in the controller's namespace (a change source's credentials). */
function readOwnSecretKey(o: { rest: KubeRest; namespace: string }, what: string) {
  return async (name: string, key: string): Promise<Uint8Array> => {
    const secret = await o.rest.get<{ data?: Record<string, string> }>(resourcePath(SECRETS, { namespace: o.namespace, name }));
    const v = secret.data?.[key];
    if (v === undefined) throw new Error(`${what}'s credentials Secret "${o.namespace}/${name}" has no key "${key}"`);
    return Buffer.from(v, 'base64');
  };
}

/** The GCP change subscription, pulled with the controller's identity (none for the
 *  emulator); the credentials are built at the first pull and again after a failure. */
function gcpSubscription(
  o: { rest: KubeRest; logger: Logger; namespace: string }, gcp: GcpSettings, feed: ChangeFeed,
  to: { fleet: Fleet; messages: Counter<'result'> },
): GcpChangeSubscription {
  let built: ReturnType<typeof subscriptionCredentials> | undefined;
  const build = () => subscriptionCredentials({
    namespace: o.namespace, logger: o.logger, ...(gcp.credentialsSecret ? { secret: gcp.credentialsSecret } : {}),
    readSecretKey: readOwnSecretKey(o, 'the GCP change subscription'),
  });
  if (gcp.emulator) o.logger.warn({ endpoint: gcp.endpoint }, 'reading the GCP change subscription from an emulator (PUBSUB_EMULATOR_HOST): plain HTTP, no credentials');
  return new GcpChangeSubscription({
    subscription: gcp.subscription, endpoint: gcp.endpoint, feed, logger: o.logger,
    headers: async () => {
      if (gcp.emulator) return {};
      const current = (built ??= build());
      try {
        const headers = await (await current).getRequestHeaders();
        return Object.fromEntries(headers.entries());
      } catch (err) {
        if (built === current) built = undefined;
        throw err;
      }
    },
    changed: (at) => to.fleet.changed(at),
    counted: (result) => to.messages.inc({ result }),
  });
}

/** The AWS change queue, reading with the controller's identity; its credentials are built at
 *  the first receive and again after a failure (a credentials Secret created late, rotated). */
function awsQueue(
  o: { rest: KubeRest; logger: Logger; namespace: string }, aws: NonNullable<FleetSettings['aws']>, feed: AwsFeed,
  to: { fleet: Fleet; messages: Counter<'result'> },
): AwsChangeQueue {
  const problem = queueIdentityProblem(aws.credentialsSecret);
  if (problem) throw new Error(problem);
  let built: Promise<AwsCredentialIdentityProvider> | undefined;
  const build = () => queueCredentials({
    region: aws.region, namespace: o.namespace, logger: o.logger, ...(aws.credentialsSecret ? { secret: aws.credentialsSecret } : {}),
    readSecretKey: readOwnSecretKey(o, 'the AWS change queue'),
  });
  return new AwsChangeQueue({
    url: aws.queueUrl, region: aws.region, feed, logger: o.logger,
    credentials: async () => {
      const current = (built ??= build());
      try {
        return await (await current)();
      } catch (err) {
        if (built === current) built = undefined;
        throw err;
      }
    },
    changed: (at) => to.fleet.changed(at),
    counted: (result) => to.messages.inc({ result }),
  });
}
