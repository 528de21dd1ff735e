// What the controller reads of an AWS change event (src/controller/fleet/aws-events.ts): the
// changed entries of CloudTrail's records and Parameter Store's own events, names and ARNs
// compared alike, reads ignored, and malformed bodies refused without being quoted.
import t from 'tap';
import { awsNames, MAX_BODY_BYTES, MAX_NAMES, MalformedEvent, parseAwsEvent } from '../../../../src/controller/fleet/aws-events.js';

const ev = (source: string, detailType: string, detail: object, extra: object = {}) => JSON.stringify({ version: '0', source, 'detail-type': detailType, region: 'eu-west-1', detail, ...extra });
const trail = (eventName: string, requestParameters: object, more: object = {}) => ev('aws.secretsmanager', 'AWS API Call via CloudTrail', { eventName, requestParameters, ...more });

t.test('CloudTrail records of the calls that change a secret', async (t) => {
  t.same(parseAwsEvent(trail('PutSecretValue', { secretId: 'db' })), { service: 'SecretsManager', region: 'eu-west-1', names: ['db'] });
  t.same(parseAwsEvent(trail('UpdateSecret', { secretId: 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:app/db-AbC123' }))?.names, ['app/db-AbC123', 'app/db'], 'an ARN: with and without its random suffix');
  t.same(parseAwsEvent(ev('aws.secretsmanager', 'AWS Service Event via CloudTrail', { eventName: 'RotationSucceeded', additionalEventData: { SecretId: 'db' } }))?.names, ['db'], 'a rotation');
  for (const read of ['GetSecretValue', 'DescribeSecret', 'ListSecrets', 'BatchGetSecretValue']) t.equal(parseAwsEvent(trail(read, { secretId: 'db' })), undefined, `${read} changes nothing`);
  t.equal(parseAwsEvent(trail('PutSecretValue', { secretId: 'db' }, { readOnly: true })), undefined, 'a read-only record changes nothing');
});

t.test("Parameter Store's own events and its CloudTrail records", async (t) => {
  t.same(parseAwsEvent(ev('aws.ssm', 'Parameter Store Change', { operation: 'Update', name: '/app/param' })), { service: 'ParameterStore', region: 'eu-west-1', names: ['app/param'] });
  t.same(parseAwsEvent(ev('aws.ssm', 'AWS API Call via CloudTrail', { eventName: 'DeleteParameters', requestParameters: { names: ['/a', 'b'] } }))?.names, ['a', 'b']);
  t.same(awsNames('ParameterStore', 'arn:aws:ssm:eu-west-1:123456789012:parameter/app/param'), ['app/param'], 'an ARN names the same parameter as its name');
  t.equal(parseAwsEvent(ev('aws.ec2', 'EC2 Instance State-change Notification', { state: 'running' })), undefined, "another service's event changes nothing");
});

t.test('the region: the event, its detail, or the ARN', async (t) => {
  const noRegion = (detail: object) => JSON.stringify({ source: 'aws.secretsmanager', 'detail-type': 'AWS API Call via CloudTrail', detail });
  t.equal(parseAwsEvent(noRegion({ eventName: 'PutSecretValue', awsRegion: 'us-east-2', requestParameters: { secretId: 'db' } }))?.region, 'us-east-2');
  t.equal(parseAwsEvent(noRegion({ eventName: 'PutSecretValue', requestParameters: { secretId: 'arn:aws:secretsmanager:ap-south-1:1:secret:db-AbC123' } }))?.region, 'ap-south-1');
  t.throws(() => parseAwsEvent(noRegion({ eventName: 'PutSecretValue', requestParameters: { secretId: 'db' } })), MalformedEvent);
});

t.test('malformed bodies are refused, bounded, and never quoted', async (t) => {
  const canary = 'aws-events-canary-0b7f';
  const bad = [
    `not json ${canary}`,
    JSON.stringify({ note: canary }),
    JSON.stringify(['aws.secretsmanager', canary]),
    trail('PutSecretValue', { other: canary }),
    trail('DeleteParameters', { names: Array.from({ length: 2 }, () => canary) }).replace('aws.secretsmanager', 'aws.ssm'),
    trail('PutSecretValue', { secretId: canary.repeat(MAX_BODY_BYTES / canary.length + 1) }),
  ];
  for (const body of bad) {
    try {
      const out = parseAwsEvent(body);
      // The DeleteParameters record under source aws.ssm but detail-type of CloudTrail is a valid event.
      t.ok(out === undefined || out.service === 'ParameterStore', 'either refused or read for what it is');
    } catch (err) {
      t.type(err, MalformedEvent);
      t.notOk((err as Error).message.includes(canary), `refused without quoting: ${(err as Error).message}`);
    }
  }
  t.throws(() => parseAwsEvent(trail('PutSecretValue', { secretId: Array.from({ length: MAX_NAMES + 1 }, (_, i) => `s${i}`) })), MalformedEvent, 'too many entries');
});
