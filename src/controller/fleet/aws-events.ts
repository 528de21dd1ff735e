// What an AWS change notification says, read from one SQS message an EventBridge rule
// delivered (docs/fleet.md, "Notifications"): which Secrets Manager secrets or Parameter Store
// parameters of which region changed. Events carry names and ARNs only; this module reads
// nothing else of them and quotes nothing of a body in its errors.
//
// Two shapes reach the queue:
//  - CloudTrail's "AWS API Call via CloudTrail" (and "AWS Service Event via CloudTrail", e.g.
//    a rotation's RotationSucceeded) of source aws.secretsmanager or aws.ssm: the changed
//    entry is in requestParameters (secretId, name, names) or additionalEventData.SecretId.
//  - Parameter Store's own "Parameter Store Change" (source aws.ssm): detail.name.
// Only events that change what a read returns count; reads (GetSecretValue and the like, which
// CloudTrail also records) are ignored, or the agents' own fetches would notify them again.

export type AwsService = 'SecretsManager' | 'ParameterStore';

export interface AwsChange {
  service: AwsService;
  region: string;
  /** Canonical names (awsNames) of the changed entries. */
  names: string[];
}

/** The body of an SQS message is at most 256 KiB; anything larger is not an EventBridge event. */
export const MAX_BODY_BYTES = 256 * 1024;
/** Entries one event may name; an event naming more is refused, not cut short silently. */
export const MAX_NAMES = 100;

const REGION = /^[a-z]{2}(-[a-z]+)+-\d+$/;

/** Calls that change a secret's value, its current version or whether it exists. */
const SECRETS_MANAGER_CHANGES = new Set([
  'CreateSecret', 'PutSecretValue', 'UpdateSecret', 'RotateSecret', 'RotationSucceeded', 'UpdateSecretVersionStage',
  'DeleteSecret', 'RestoreSecret', 'ReplicateSecretToRegions',
]);
/** The same for parameters (CloudTrail's names); "Parameter Store Change" events all count. */
const PARAMETER_STORE_CHANGES = new Set(['PutParameter', 'DeleteParameter', 'DeleteParameters', 'LabelParameterVersion', 'UnlabelParameterVersion']);

const SERVICE_OF_SOURCE: Record<string, AwsService> = { 'aws.secretsmanager': 'SecretsManager', 'aws.ssm': 'ParameterStore' };

export class MalformedEvent extends Error {
  override name = 'MalformedEvent';
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The names an entry goes by, as both sides are compared: an event and an ExternalSecret's
 * key may name one entry by its name or by its ARN. A Secrets Manager ARN ends in the name
 * plus `-` and six random characters, so an ARN gives the name with and without them; a
 * parameter's leading `/` is dropped (its ARN has none). One entry may so match a second one
 * whose name is a prefix of it: a pod told too often fetches once more, which is harmless.
 */
export function awsNames(service: AwsService, id: string): string[] {
  if (service === 'SecretsManager') {
    const arn = /^arn:[\w-]+:secretsmanager:[^:]*:[^:]*:secret:(.+)$/.exec(id);
    if (!arn) return [id];
    const full = arn[1]!;
    const short = /^(.+)-[A-Za-z0-9]{6}$/.exec(full)?.[1];
    return short ? [full, short] : [full];
  }
  const arn = /^arn:[\w-]+:ssm:[^:]*:[^:]*:parameter\/?(.+)$/.exec(id);
  return [(arn ? arn[1]! : id).replace(/^\/+/, '')];
}

/** The region an ARN names, if it is one. */
function arnRegion(id: string): string | undefined {
  return /^arn:[\w-]+:(?:secretsmanager|ssm):([^:]+):/.exec(id)?.[1];
}

function strings(...values: unknown[]): string[] {
  const out: string[] = [];
  for (const v of values) {
    if (typeof v === 'string' && v) out.push(v);
    else if (Array.isArray(v)) for (const x of v) if (typeof x === 'string' && x) out.push(x);
  }
  return out;
}

/** The ids (names or ARNs) a change event names, or undefined when it changes nothing. */
function changedIds(service: AwsService, detailType: string, detail: Record<string, unknown>): string[] | undefined {
  if (detailType === 'Parameter Store Change') return service === 'ParameterStore' ? strings(detail.name) : undefined;
  if (!detailType.endsWith('via CloudTrail')) return undefined;
  if (detail.readOnly === true || typeof detail.eventName !== 'string') return undefined;
  const changes = service === 'SecretsManager' ? SECRETS_MANAGER_CHANGES : PARAMETER_STORE_CHANGES;
  if (!changes.has(detail.eventName)) return undefined;
  const req = isObject(detail.requestParameters) ? detail.requestParameters : {};
  const extra = isObject(detail.additionalEventData) ? detail.additionalEventData : {};
  const resp = isObject(detail.responseElements) ? detail.responseElements : {};
  return service === 'SecretsManager'
    ? strings(req.secretId, extra.SecretId, resp.aRN, resp.arn, detail.eventName === 'CreateSecret' ? req.name : undefined)
    : strings(req.name, req.names);
}

/**
 * One message body → the change it reports; undefined for an event that changes nothing
 * (a read, another service's event the rule let through). Throws MalformedEvent, with a
 * message that quotes nothing of the body, for anything that is not such an event.
 */
export function parseAwsEvent(body: string): AwsChange | undefined {
  if (Buffer.byteLength(body, 'utf8') > MAX_BODY_BYTES) throw new MalformedEvent(`larger than ${MAX_BODY_BYTES} bytes`);
  let ev: unknown;
  try {
    ev = JSON.parse(body);
  } catch {
    throw new MalformedEvent('not JSON');
  }
  if (!isObject(ev) || !isObject(ev.detail) || typeof ev.source !== 'string' || typeof ev['detail-type'] !== 'string') {
    throw new MalformedEvent('not an EventBridge event (source, detail-type and detail are required)');
  }
  const service = SERVICE_OF_SOURCE[ev.source];
  if (!service) return undefined;
  const ids = changedIds(service, ev['detail-type'], ev.detail);
  if (ids === undefined) return undefined;
  if (ids.length === 0) throw new MalformedEvent(`a ${ev['detail-type']} event of ${ev.source} that names no entry`);
  if (ids.length > MAX_NAMES) throw new MalformedEvent(`names more than ${MAX_NAMES} entries`);
  const region = [ev.region, ev.detail.awsRegion, arnRegion(ids[0]!)].find((r): r is string => typeof r === 'string' && REGION.test(r));
  if (!region) throw new MalformedEvent('names no region');
  return { service, region, names: [...new Set(ids.flatMap((id) => awsNames(service, id)))] };
}
