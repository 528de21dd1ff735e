// GCP change notifications on the real apiserver and Google's Pub/Sub emulator (docs/
// fleet.md, "GCP"): the operator's subscription of the topic Secret Manager publishes to is
// pulled by the real `esi controller`; a change of a secret gives exactly the pods whose
// ExternalSecrets read it (through a tenant's gcpsm store that opted in) a new value-free
// change generation. Events that change nothing and malformed messages change nothing; every
// message is acknowledged.
//
// The secrets live in ESI's Secret Manager emulator (test/support/platform/backends/
// gcpsm-emulator.ts), which, like every emulator here, publishes no notifications (it does not
// model `topics`): the test adds the version there and publishes the message Secret Manager
// would (attributes eventType, secretId, dataFormat; the data the SecretVersion resource).
import t from 'tap';
import type { V1Pod } from '@kubernetes/client-node';
import { createTenant } from '../../support/tenant.js';
import { startGcpsmEmulator } from '../../support/platform/backends/gcpsm-emulator.js';
import { pubsubEmulatorJar, startPubsubEmulator } from '../../support/platform/backends/pubsub-emulator.js';
import { controllerEnv, startController, until, useEnv } from '../../support/fixtures/controller.js';

const jar = pubsubEmulatorJar();
if ('missing' in jar) {
  t.plan(0, jar.missing);
} else {
  await run();
}

async function run(): Promise<void> {
  const CANARY = 'fleet-gcp-canary-3b9d';
  const PROJECT = 'esi-fleet';
  const PROJECT_NUMBER = '318624917'; // Secret Manager's events name the project by number
  const TOPIC = `projects/${PROJECT}/topics/secret-events`;
  const SUBSCRIPTION = `projects/${PROJECT}/subscriptions/esi-changes`;

  // The store's side: the secrets, in ESI's Secret Manager emulator.
  const sm = await startGcpsmEmulator(t);
  const client = sm.client();
  for (const id of ['db', 'other']) {
    await client.createSecret({ parent: `projects/${PROJECT}`, secretId: id, secret: { replication: { automatic: {} } } });
    await client.addSecretVersion({ parent: `projects/${PROJECT}/secrets/${id}`, payload: { data: Buffer.from(`${CANARY}-${id}-v1`) } });
  }

  // The operator's side: the topic set on the secrets and the controller's subscription to it.
  const pubsub = await startPubsubEmulator(t);
  await pubsub.createTopic(TOPIC);
  await pubsub.createSubscription(SUBSCRIPTION, TOPIC);

  const env = await controllerEnv(t);
  const ctlNs = `esi-system-${env.cls}`;
  await env.core.createNamespace({ body: { metadata: { name: ctlNs } } });
  t.teardown(() => env.core.deleteNamespace({ name: ctlNs }).catch(() => undefined));
  const tenant = await createTenant(env.kc, 'fleet-gcp', t);
  const ns = tenant.namespace;
  useEnv(t, { PUBSUB_EMULATOR_HOST: pubsub.host, SECRET_MANAGER_EMULATOR_HOST: sm.endpoint });
  const ctl = await startController(env.cp.kubeconfigPath, [
    '--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--namespace', ctlNs, '--pod-patch-qps=20',
    '--gcp-change-subscription', SUBSCRIPTION,
  ], t);

  // The tenant's side: gcpsm stores that opt in (a global and a regional one) and one that
  // does not, ExternalSecrets, pods as the webhook leaves them (no webhook runs here).
  const custom = (plural: string, body: object) => tenant.custom.createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural, body: { apiVersion: 'external-secrets.io/v1', ...body } });
  const store = (name: string, annotations: Record<string, string>, location?: string) => custom('secretstores', {
    kind: 'SecretStore', metadata: { name, annotations }, spec: { controller: env.cls, provider: { gcpsm: {
      projectID: PROJECT, ...(location ? { location } : {}),
      auth: { workloadIdentity: { clusterLocation: 'europe-west1', clusterName: 'fleet', clusterProjectID: PROJECT, serviceAccountRef: { name: 'app' } } } } } },
  });
  const OPT_IN = { 'esi.dev/change-notifications': 'true' };
  await store('gcp', OPT_IN);
  await store('regional', OPT_IN, 'europe-west1');
  await store('quiet', {});
  const es = (name: string, storeName: string, remote: string) => custom('externalsecrets', { kind: 'ExternalSecret', metadata: { name }, spec: {
    secretStoreRef: { name: storeName }, refreshInterval: '1h', data: [{ secretKey: 'value', remoteRef: { key: remote } }] } });
  await es('db', 'gcp', 'db');
  await es('other', 'gcp', `projects/${PROJECT}/secrets/other/versions/latest`);
  await es('regional', 'regional', 'db');
  await es('quiet', 'quiet', 'db');
  const pod = (name: string, secrets: string): V1Pod => ({ metadata: { name, labels: { 'esi.dev/inject': 'true' }, annotations: {
    'esi.dev/injected': 'native-sidecar', 'esi.dev/secrets': secrets, 'esi.dev/refresh-interval': '1h' } },
  spec: { containers: [{ name: 'app', image: 'registry.invalid/app:1' }] } });
  const PODS = { a: 'db', b: 'db', c: 'other', r: 'regional', q: 'quiet' } as const;
  for (const [name, secrets] of Object.entries(PODS)) await tenant.core.createNamespacedPod({ namespace: ns, body: pod(name, secrets) });
  const generation = async (name: string) => (await tenant.core.readNamespacedPod({ namespace: ns, name })).metadata?.annotations?.['esi.dev/change-generation'];
  const generations = async () => Object.fromEntries(await Promise.all(Object.keys(PODS).map(async (n) => [n, await generation(n)] as const)));

  /** What Secret Manager publishes for a new version: the attributes, the SecretVersion as JSON. */
  const versionAdded = async (secretName: string, eventType = 'SECRET_VERSION_ADD') => {
    const [version] = await client.addSecretVersion({ parent: secretName.replace(`projects/${PROJECT_NUMBER}/`, `projects/${PROJECT}/`), payload: { data: Buffer.from(`${CANARY}-new`) } });
    await pubsub.publish(TOPIC, [{ attributes: { eventType, secretId: secretName, dataFormat: 'JSON_API_V1' },
      data: JSON.stringify({ name: version.name?.replace(`projects/${PROJECT}/`, `projects/${PROJECT_NUMBER}/`), state: 'ENABLED', createTime: new Date().toISOString() }) }]);
  };
  const counted = (result: string) => ctl.counter('esi_fleet_gcp_notifications_total', { result });

  t.test('a new version reaches exactly the pods reading that secret through an opted-in store', async (t) => {
    t.same(await generations(), { a: undefined, b: undefined, c: undefined, r: undefined, q: undefined }, 'no change known yet: no generation');
    await versionAdded(`projects/${PROJECT_NUMBER}/secrets/db`);
    const g = await until('generations on a and b', async () => {
      const now = await generations();
      return now.a && now.b ? now : undefined;
    });
    t.match(g.a, /^[0-9a-f]{16}$/, 'a hash, naming no key');
    t.equal(g.a, g.b, 'the two pods read the same secret: one generation');
    t.same([g.c, g.r, g.q], [undefined, undefined, undefined], 'another secret, the regional secret of that id, a store that did not opt in: untouched');
    t.ok(await counted('change') >= 1, 'counted');
  });

  t.test('a full resource name in the key, and a regional secret', async (t) => {
    const before = await generations();
    await versionAdded(`projects/${PROJECT_NUMBER}/secrets/other`, 'SECRET_VERSION_DISABLE');
    await pubsub.publish(TOPIC, [{ attributes: { eventType: 'SECRET_VERSION_ADD', secretId: `projects/${PROJECT_NUMBER}/locations/europe-west1/secrets/db`, dataFormat: 'JSON_API_V1' } }]);
    const g = await until('generations on c and r', async () => {
      const now = await generations();
      return now.c && now.r ? now : undefined;
    });
    t.same([g.a, g.b], [before.a, before.b], 'the global secret\'s pods are not told');
    t.equal(g.q, undefined, 'nor the pod of the store that did not opt in');
  });

  t.test('events that change nothing and malformed messages change nothing, and every message is acknowledged', async (t) => {
    const before = await generations();
    const [ignored, malformed] = [await counted('ignored'), await counted('malformed')];
    await pubsub.publish(TOPIC, [
      { attributes: { eventType: 'SECRET_ROTATE', secretId: `projects/${PROJECT_NUMBER}/secrets/db`, dataFormat: 'JSON_API_V1' } },
      { attributes: { eventType: 'TOPIC_CONFIGURED' } },
      { data: `not a notification: ${CANARY}` },
      { attributes: { eventType: 'SECRET_VERSION_ADD', secretId: CANARY } },
    ]);
    await until('two ignored and two malformed counted', async () =>
      (await counted('ignored')) >= ignored + 2 && (await counted('malformed')) >= malformed + 2);
    t.same(await generations(), before, 'no pod was told');
    t.match(ctl.output(), /dropped a malformed change notification from the GCP subscription/, 'a clear log line');
    await until('the subscription is drained', async () => (await pubsub.pending(SUBSCRIPTION)) === 0);
    const all = JSON.stringify(await generations()) + ctl.output() + (await ctl.metrics());
    t.notOk(all.includes(CANARY), 'no message content nor secret value in any annotation, log line or metric');
  });
}
