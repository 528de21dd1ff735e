// The fleet's flags of `esi controller` (docs/fleet.md): the default read budget, the pod
// patch rate, change notifications and the operator's AWS queue and GCP subscription. Checked
// before anything starts, like every other flag of the command.
import { bool, positive } from '../../flags.js';
import { nameProblem } from '../../kube/names.js';
import { queueIdentityProblem, queueRegion } from './aws-queue.js';
import { parseReadBudget } from './budget.js';
import { gcpSubscriptionSettings } from './gcp-subscription.js';
import type { FleetSettings } from './wire.js';

type Values = Record<string, string | boolean | undefined>;

export function fleetFlags(v: Values): FleetSettings {
  return {
    ...(v['default-read-budget'] ? { defaultBudget: readBudgetFlag(String(v['default-read-budget'])) } : {}),
    patchQps: positive('pod-patch-qps', String(v['pod-patch-qps'])),
    notifications: bool('change-notifications', String(v['change-notifications'])),
    ...awsQueueFlags(v),
    ...gcpFlags(v),
  };
}

function awsQueueFlags(v: Record<string, string | boolean | undefined>): Pick<FleetSettings, 'aws'> {
  const flag = (name: string) => String(v[name] ?? '').trim();
  const url = flag('aws-change-queue-url');
  const secret = flag('aws-change-queue-credentials-secret');
  if (!url) {
    if (flag('aws-change-queue-region') || secret) throw new Error('--aws-change-queue-region and --aws-change-queue-credentials-secret need --aws-change-queue-url');
    return {};
  }
  if (!/^https?:\/\/[^/]+\/\d{12}\/[\w-]{1,75}(?:\.fifo|[\w-]{0,5})$/.test(url)) throw new Error(`--aws-change-queue-url "${url}" must be an SQS queue URL: https://sqs.<region>.amazonaws.com/<account>/<queue>`);
  const region = flag('aws-change-queue-region') || queueRegion(url) || process.env.AWS_REGION?.trim() || '';
  if (!region) throw new Error('--aws-change-queue-region is required: the queue URL names no region and AWS_REGION is not set');
  const bad = secret ? nameProblem(secret, 'subdomain') : undefined;
  if (bad) throw new Error(`--aws-change-queue-credentials-secret ${bad}`);
  const identity = queueIdentityProblem(secret || undefined);
  if (identity) throw new Error(identity);
  return { aws: { queueUrl: url, region, ...(secret ? { credentialsSecret: secret } : {}) } };
}

function gcpFlags(v: Record<string, string | boolean | undefined>): Pick<FleetSettings, 'gcp'> {
  const gcp = gcpSubscriptionSettings({ subscription: String(v['gcp-change-subscription'] ?? ''), endpoint: String(v['gcp-change-endpoint'] ?? ''), credentialsSecret: String(v['gcp-change-credentials-secret'] ?? '') });
  return gcp ? { gcp } : {};
}

function readBudgetFlag(raw: string): number {
  try {
    return parseReadBudget(raw);
  } catch (err) {
    throw new Error(`--default-read-budget "${raw}" ${(err as Error).message}`, { cause: err });
  }
}
