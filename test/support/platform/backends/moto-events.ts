// EventBridge on moto for the fleet's AWS change notifications (docs/fleet.md,
// "Notifications"): the operator's queue, the rule routing Secrets Manager and Parameter
// Store events to it, and PutEvents with the events AWS would send. moto emits no CloudTrail
// records (nor Parameter Store's own events), so tests and the fleet bench send them.
// Requests go unsigned: only while moto's IAM checks are off (they are, unless enableAuth()).
import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { MotoServer } from './moto.js';

export interface MotoEvents {
  /** An EventBridge JSON action (PutRule, PutTargets, PutEvents, …) → its answer. */
  call(action: string, body: object): Promise<Record<string, unknown>>;
  /** PutEvents; throws when moto refused an entry. */
  put(...entries: object[]): Promise<void>;
}

export function motoEvents(moto: Pick<MotoServer, 'endpoint' | 'region'>): MotoEvents {
  const call = async (action: string, body: object): Promise<Record<string, unknown>> => {
    const res = await fetch(moto.endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.1', 'x-amz-target': `AWSEvents.${action}`,
        authorization: `AWS4-HMAC-SHA256 Credential=AKIASETUP/20240101/${moto.region}/events/aws4_request, SignedHeaders=host, Signature=0`,
      },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`moto EventBridge ${action}: HTTP ${res.status}: ${text.slice(0, 300)}`);
    return JSON.parse(text || '{}') as Record<string, unknown>;
  };
  return {
    call,
    async put(...entries) {
      const out = await call('PutEvents', { Entries: entries });
      if (out.FailedEntryCount) throw new Error(`PutEvents failed: ${JSON.stringify(out)}`);
    },
  };
}

/** The operator's side: a queue and the rule sending the stores' change events to it. */
export async function changeQueue(moto: Pick<MotoServer, 'endpoint' | 'region' | 'account'>, name = 'esi-changes'): Promise<{ url: string; arn: string }> {
  const sqs = new SQSClient({ region: moto.region, endpoint: moto.endpoint, credentials: { accessKeyId: 'setup', secretAccessKey: 'setup' } });
  try {
    const url = (await sqs.send(new CreateQueueCommand({ QueueName: name }))).QueueUrl!;
    const arn = `arn:aws:sqs:${moto.region}:${moto.account}:${name}`;
    const events = motoEvents(moto);
    await events.call('PutRule', { Name: `${name}-rule`, EventPattern: JSON.stringify({ source: ['aws.secretsmanager', 'aws.ssm'] }) });
    await events.call('PutTargets', { Rule: `${name}-rule`, Targets: [{ Id: 'esi', Arn: arn }] });
    return { url, arn };
  } finally {
    sqs.destroy();
  }
}

/** CloudTrail's record of a Secrets Manager call as EventBridge carries it. */
export const cloudTrailEntry = (region: string, eventName: string, requestParameters: object) => ({
  Source: 'aws.secretsmanager', DetailType: 'AWS API Call via CloudTrail', Detail: JSON.stringify({
    eventVersion: '1.08', eventSource: 'secretsmanager.amazonaws.com', eventName, awsRegion: region, readOnly: eventName.startsWith('Get'), requestParameters }),
});
