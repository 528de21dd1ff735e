// PushSecret into Google Secret Manager (the emulator of test/platform/backends), read back
// with the official client: properties merged into one JSON secret, whole-Secret pushes,
// the managed-by label, no new version on idle refreshes, an unlabelled secret refused, and
// deletionPolicy Delete removing exactly the pushed secret, push metadata, and the shared
// scenario of push-matrix.ts.
import { generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import { startGcpsmEmulator } from '../../support/platform/backends/gcpsm-emulator.js';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, startController, until } from '../../support/fixtures/controller.js';
import { createPush, deletePush, getPush, patchPush, pushReady, putSecret } from '../../support/fixtures/push.js';
import { pushMatrix } from '../../support/cases/push-matrix.js';

const CANARY = 'pushgcp-canary-2d94aa';
const PROJECT = 'esi-push';
const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'push-gcp', t);
const emu = await startGcpsmEmulator(t);
const sm = emu.client();
const saved = process.env.SECRET_MANAGER_EMULATOR_HOST;
process.env.SECRET_MANAGER_EMULATOR_HOST = emu.endpoint; // inherited by the controller process
t.teardown(() => {
  if (saved === undefined) delete process.env.SECRET_MANAGER_EMULATOR_HOST;
  else process.env.SECRET_MANAGER_EMULATOR_HOST = saved;
});

const latest = async (id: string): Promise<string | undefined> => {
  try {
    const [v] = await sm.accessSecretVersion({ name: `projects/${PROJECT}/secrets/${id}/versions/latest` });
    return Buffer.from(v.payload!.data as Uint8Array).toString('utf8');
  } catch {
    return undefined;
  }
};
const versions = async (id: string) => (await sm.listSecretVersions({ parent: `projects/${PROJECT}/secrets/${id}` }))[0].length;
const seed = async (id: string, value: string) => {
  await sm.createSecret({ parent: `projects/${PROJECT}`, secretId: id, secret: { replication: { automatic: {} } } });
  await sm.addSecretVersion({ parent: `projects/${PROJECT}/secrets/${id}`, payload: { data: Buffer.from(value) } });
};

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
await putSecret(env, ns, 'gcp-sa', { 'key.json': JSON.stringify({ type: 'service_account', project_id: PROJECT, private_key: pem, client_email: 'esi@esi-push.iam.gserviceaccount.com' }) });
await putSecret(env, ns, 'db', { username: 'orders', password: `${CANARY}-pw` });
const gcpStore = {
  kind: 'SecretStore', metadata: { name: 'gcp' },
  spec: { controller: env.cls, provider: { gcpsm: { projectID: PROJECT, auth: { secretRef: { secretAccessKeySecretRef: { name: 'gcp-sa', key: 'key.json' } } } } } },
};
await create(env, ns, 'secretstores', gcpStore);
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s'], t);

t.test('properties, whole Secret, managed-by label, no new version on idle refresh, Delete', async (t) => {
  await seed('app-db-foreign', 'theirs');
  await createPush(env, ns, 'gcp', {
    secretStoreRefs: [{ name: 'gcp' }], selector: { secret: { name: 'db' } }, deletionPolicy: 'Delete',
    data: [
      { match: { secretKey: 'username', remoteRef: { remoteKey: 'app-db', property: 'user' } } },
      { match: { secretKey: 'password', remoteRef: { remoteKey: 'app-db', property: 'pass' } } },
      { match: { remoteRef: { remoteKey: 'app-whole' } } },
    ],
  });
  await pushReady(env, ns, 'gcp', 'True', 'Synced', { ms: 60_000 });
  t.same(JSON.parse((await latest('app-db')) ?? '{}'), { user: 'orders', pass: `${CANARY}-pw` });
  t.same(JSON.parse((await latest('app-whole')) ?? '{}'), { username: 'orders', password: `${CANARY}-pw` });
  const [secret] = await sm.getSecret({ name: `projects/${PROJECT}/secrets/app-db` });
  t.equal(secret.labels?.['managed-by'], 'external-secrets');
  const n = await versions('app-db');
  await new Promise((r) => setTimeout(r, 6000));
  t.equal(await versions('app-db'), n, 'no new version on idle refreshes');
  t.equal(await versions('app-whole'), 1, 'whole Secret written once');

  await deletePush(env, ns, 'gcp');
  await until('PushSecret gone', async () => !(await getPush(env, ns, 'gcp')), 30_000);
  t.notOk(await latest('app-db'), 'pushed secret deleted');
  t.notOk(await latest('app-whole'), 'pushed whole secret deleted');
  t.equal(await latest('app-db-foreign'), 'theirs', 'foreign secret with the same prefix survives');
});

t.test('a whole value is not pushed over a secret without the managed-by label', async (t) => {
  await seed('theirs', 'someone-else');
  await createPush(env, ns, 'gcp-foreign', {
    secretStoreRefs: [{ name: 'gcp' }], selector: { secret: { name: 'db' } },
    data: [{ match: { secretKey: 'username', remoteRef: { remoteKey: 'theirs' } } }],
  });
  const ps = await pushReady(env, ns, 'gcp-foreign', 'False', 'Errored', { ms: 60_000 });
  t.match(ps.status?.conditions?.[0]?.message, /entry "theirs"/);
  t.equal(await latest('theirs'), 'someone-else');
});

t.test('push metadata: labels, annotations, replication location and CMEK key; mergePolicy Merge keeps labels', async (t) => {
  const md = (spec: object) => ({ apiVersion: 'kubernetes.external-secrets.io/v1alpha1', kind: 'PushSecretMetadata', spec });
  await createPush(env, ns, 'gcp-md', {
    secretStoreRefs: [{ name: 'gcp' }], selector: { secret: { name: 'db' } },
    data: [{
      match: { secretKey: 'username', remoteRef: { remoteKey: 'md-db' } },
      metadata: md({ labels: { team: 'orders' }, annotations: { owner: 'orders-team' }, replicationLocation: 'europe-west1', cmekKeyName: 'projects/esi-push/locations/europe-west1/keyRings/r/cryptoKeys/k' }),
    }],
  });
  await pushReady(env, ns, 'gcp-md', 'True', 'Synced', { ms: 60_000 });
  const [s] = await sm.getSecret({ name: `projects/${PROJECT}/secrets/md-db` });
  t.same(s.labels, { team: 'orders', 'managed-by': 'external-secrets' });
  t.same(s.annotations, { owner: 'orders-team' });
  const replicas = (s.replication as { userManaged?: { replicas?: { location?: string; customerManagedEncryption?: { kmsKeyName?: string } }[] } }).userManaged?.replicas;
  t.equal(replicas?.[0]?.location, 'europe-west1');
  t.equal(replicas?.[0]?.customerManagedEncryption?.kmsKeyName, 'projects/esi-push/locations/europe-west1/keyRings/r/cryptoKeys/k');

  await patchPush(env, ns, 'gcp-md', (o) => void (o.spec.data![0]!.metadata = md({ labels: { tier: 'gold' }, mergePolicy: 'Merge' })));
  await until('label merged', async () => (await sm.getSecret({ name: `projects/${PROJECT}/secrets/md-db` }))[0].labels?.tier === 'gold', 45_000);
  t.same((await sm.getSecret({ name: `projects/${PROJECT}/secrets/md-db` }))[0].labels, { team: 'orders', tier: 'gold', 'managed-by': 'external-secrets' });
  t.equal(await versions('md-db'), 1, 'metadata alone: no new version');

  await createPush(env, ns, 'gcp-md-bad', {
    secretStoreRefs: [{ name: 'gcp' }], selector: { secret: { name: 'db' } },
    data: [{ match: { secretKey: 'username', remoteRef: { remoteKey: 'md-bad' } }, metadata: md({ topics: ['projects/p/topics/t'] }) }],
  });
  const bad = await pushReady(env, ns, 'gcp-md-bad', 'False', 'Errored', { ms: 60_000 });
  t.match(bad.status?.conditions?.[0]?.message, /spec.data\[0\].metadata.spec.topics is not supported by ESI's gcpsm provider/);
  t.equal(await latest('md-bad'), undefined, 'nothing pushed');
});

t.test('the shared scenario', (t) => pushMatrix(t, env, ctl, ns, {
  label: 'gcpsm emulator', store: gcpStore,
  read: async (key) => {
    const v = await latest(key);
    return v === undefined ? undefined : (JSON.parse(v) as Record<string, unknown>);
  },
  seed: (key, value) => seed(key, JSON.stringify({ user: value })),
}));

t.test('no canary in status, Events, logs or metrics', async (t) => {
  const list = await env.custom.listNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1alpha1', namespace: ns, plural: 'pushsecrets' });
  const events = await env.core.listNamespacedEvent({ namespace: ns });
  for (const [what, text] of [['status', JSON.stringify(list)], ['events', JSON.stringify(events)], ['logs', ctl.output()], ['metrics', await ctl.metrics()]] as const) {
    t.notOk(text.includes(CANARY), `no canary in ${what}`);
  }
});
