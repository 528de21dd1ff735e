// AWS change notifications on the real apiserver and moto (docs/fleet.md, "Notifications"):
// the operator's SQS queue, fed by an EventBridge rule, is read by the real `esi controller`
// with the operator's credentials Secret; a change of a Secrets Manager secret or a Parameter
// Store parameter gives exactly the pods whose ExternalSecrets read it (through a tenant's
// store that opted in) a new value-free change generation. Reads, other services' events and
// malformed messages change nothing; every message is deleted.
//
// moto does not emit CloudTrail events (nor Parameter Store's own), so the test sends the
// events AWS would send, in their shapes, with EventBridge PutEvents: they go through the
// rule's pattern and its SQS target in moto as they would in AWS.
import t from 'tap';
import { GetQueueAttributesCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { V1Pod } from '@kubernetes/client-node';
import { createTenant } from '../../support/tenant.js';
import { allow, startMoto, useMotoEndpoint } from '../../support/platform/backends/moto.js';
import { changeQueue, cloudTrailEntry, motoEvents } from '../../support/platform/backends/moto-events.js';
import { controllerEnv, startController, until } from '../../support/fixtures/controller.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const CANARY = 'fleet-aws-canary-61c0';
const moto = await startMoto(t);
useMotoEndpoint(t, moto);
const { region, account } = moto;

// The operator's side: the queue, the rule routing the stores' change events to it, and the
// identity the controller reads it with (a key pair in a Secret of the controller's namespace).
const sqs = new SQSClient({ region, endpoint: moto.endpoint, credentials: { accessKeyId: 'setup', secretAccessKey: 'setup' } });
t.teardown(() => sqs.destroy());
const { url: queueUrl, arn: queueArn } = await changeQueue(moto);
const events = motoEvents(moto);
const key = await moto.createUser('esi-change-queue', allow(['sqs:ReceiveMessage', 'sqs:DeleteMessage'], [queueArn]));

const env = await controllerEnv(t);
const ctlNs = `esi-system-${env.cls}`;
await env.core.createNamespace({ body: { metadata: { name: ctlNs } } });
t.teardown(() => env.core.deleteNamespace({ name: ctlNs }).catch(() => undefined));
await env.core.createNamespacedSecret({ namespace: ctlNs, body: { metadata: { name: 'aws-change-queue' }, stringData: {
  'access-key-id': key.accessKeyId, 'secret-access-key': key.secretAccessKey } } });

const tenant = await createTenant(env.kc, 'fleet-aws', t);
const ns = tenant.namespace;
const ctl = await startController(env.cp.kubeconfigPath, [
  '--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--namespace', ctlNs, '--pod-patch-qps=20',
  '--aws-change-queue-url', queueUrl, '--aws-change-queue-region', region, '--aws-change-queue-credentials-secret', 'aws-change-queue',
], t);

// The tenant's side: stores that opt in (and one that does not), ExternalSecrets, pods as the
// webhook leaves them (no webhook runs here: the annotations are what it would add).
const custom = (plural: string, body: object) => tenant.custom.createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural, body: { apiVersion: 'external-secrets.io/v1', ...body } });
const store = (name: string, service: string, annotations: Record<string, string>) => custom('secretstores', {
  kind: 'SecretStore', metadata: { name, annotations }, spec: { controller: env.cls, provider: { aws: {
    service, region, role: `arn:aws:iam::${account}:role/app`, auth: { jwt: { serviceAccountRef: { name: 'app' } } } } } },
});
const OPT_IN = { 'esi.dev/change-notifications': 'true' };
await store('sm', 'SecretsManager', OPT_IN);
await store('ps', 'ParameterStore', OPT_IN);
await store('quiet', 'SecretsManager', {});
const es = (name: string, storeName: string, remote: string) => custom('externalsecrets', { kind: 'ExternalSecret', metadata: { name }, spec: {
  secretStoreRef: { name: storeName }, refreshInterval: '1h', data: [{ secretKey: 'value', remoteRef: { key: remote } }] } });
await es('db', 'sm', 'db');
await es('other', 'sm', `arn:aws:secretsmanager:${region}:${account}:secret:other-Xy12Zw`);
await es('param', 'ps', '/app/param');
await es('quiet', 'quiet', 'db');
const pod = (name: string, secrets: string): V1Pod => ({ metadata: { name, labels: { 'esi.dev/inject': 'true' }, annotations: {
  'esi.dev/injected': 'native-sidecar', 'esi.dev/secrets': secrets, 'esi.dev/refresh-interval': '1h' } },
spec: { containers: [{ name: 'app', image: 'registry.invalid/app:1' }] } });
const PODS = { a: 'db', b: 'db', c: 'other', p: 'param', q: 'quiet' } as const;
for (const [name, secrets] of Object.entries(PODS)) await tenant.core.createNamespacedPod({ namespace: ns, body: pod(name, secrets) });
const generation = async (name: string) => (await tenant.core.readNamespacedPod({ namespace: ns, name })).metadata?.annotations?.['esi.dev/change-generation'];
const generations = async () => Object.fromEntries(await Promise.all(Object.keys(PODS).map(async (n) => [n, await generation(n)] as const)));

/** An event as AWS would put it on the bus (CloudTrail's record of a call). */
const trail = (eventName: string, requestParameters: object) => cloudTrailEntry(region, eventName, requestParameters);
const put = (...entries: object[]) => events.put(...entries);
const counted = (result: string) => ctl.counter('esi_fleet_aws_notifications_total', { result });

t.test('a PutSecretValue reaches exactly the pods reading that secret through an opted-in store', async (t) => {
  t.same(await generations(), { a: undefined, b: undefined, c: undefined, p: undefined, q: undefined }, 'no change known yet: no generation');
  await put(trail('PutSecretValue', { secretId: 'db' }));
  const g = await until('generations on a and b', async () => {
    const now = await generations();
    return now.a && now.b ? now : undefined;
  });
  t.match(g.a, /^[0-9a-f]{16}$/, 'a hash, naming no key');
  t.equal(g.a, g.b, 'the two pods read the same secret: one generation');
  t.same([g.c, g.p, g.q], [undefined, undefined, undefined], 'another secret, another service, a store that did not opt in: untouched');
  t.ok(await counted('change') >= 1, 'counted');
});

t.test('an ARN, a rotation and a Parameter Store change name their entries', async (t) => {
  const before = await generations();
  // The ARN CloudTrail records ends in AWS's six random characters; the ExternalSecret names the same ARN.
  await put({ Source: 'aws.secretsmanager', DetailType: 'AWS Service Event via CloudTrail', Detail: JSON.stringify({
    eventSource: 'secretsmanager.amazonaws.com', eventName: 'RotationSucceeded', awsRegion: region,
    additionalEventData: { SecretId: `arn:aws:secretsmanager:${region}:${account}:secret:other-Xy12Zw` } }) });
  await put({ Source: 'aws.ssm', DetailType: 'Parameter Store Change', Detail: JSON.stringify({ operation: 'Update', name: '/app/param', type: 'SecureString' }) });
  const g = await until('generations on c and p', async () => {
    const now = await generations();
    return now.c && now.p ? now : undefined;
  });
  t.equal(g.a, before.a, 'a is not told');
  t.equal(g.q, undefined, 'nor the pod of the store that did not opt in');
});

t.test('reads, other events and malformed messages change nothing, and every message is deleted', async (t) => {
  const before = await generations();
  const [ignored, malformed] = [await counted('ignored'), await counted('malformed')];
  await put(trail('GetSecretValue', { secretId: 'db' }), trail('DescribeSecret', { secretId: 'db' }));
  await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: `not an event: ${CANARY}` }));
  await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify({ source: 'aws.ssm', 'detail-type': 'Parameter Store Change', detail: { note: CANARY } }) }));
  await until('the reads counted as ignored and the two bad messages as malformed', async () =>
    (await counted('ignored')) >= ignored + 2 && (await counted('malformed')) >= malformed + 2);
  t.same(await generations(), before, 'no pod was told');
  t.match(ctl.output(), /dropped a malformed change notification from the AWS queue/, 'a clear log line');
  await until('the queue is empty', async () => {
    const a = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }))).Attributes ?? {};
    return a.ApproximateNumberOfMessages === '0' && a.ApproximateNumberOfMessagesNotVisible === '0';
  });
  const all = JSON.stringify(await generations()) + ctl.output() + (await ctl.metrics());
  t.notOk(all.includes(CANARY), 'no message body in any annotation, log line or metric');
  t.notOk(all.includes(key.secretAccessKey), "nor the queue's credentials");
});
