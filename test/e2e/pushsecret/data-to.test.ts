// PushSecret `dataTo` (ESO's bulk push) into moto's Secrets Manager, read back directly:
// per-key mode (the keys a regexp picks, each its own secret, named by a rewrite), bundle
// mode (the picked keys as one JSON secret), storeRef scoping (a second target gets only the
// explicit `data` entries), explicit `data` winning for its key, a key removed from the source
// deleted remotely (deletionPolicy Delete), and bad dataTo entries refused naming the field.
import { GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, startController, until } from '../../support/fixtures/controller.js';
import { createPush, kubernetesStore, motoSecretsManagerStore, pushReady, putSecret, remoteData } from '../../support/fixtures/push.js';

const CANARY = 'pushto-canary-5d20a9';
const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'push-to', t);
const { sm, store: awsStore } = await motoSecretsManagerStore(env, t, ns);
await create(env, ns, 'secretstores', awsStore);
const k8s = await kubernetesStore(env, t, ns, 'remote');
await create(env, ns, 'secretstores', k8s.store);
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s'], t);

const read = async (id: string) => (await sm.send(new GetSecretValueCommand({ SecretId: id })).catch(() => undefined))?.SecretString;

t.test('per-key and bundle modes, scoped to their store; explicit data wins; a removed key is deleted', async (t) => {
  await putSecret(env, ns, 'app', { 'db-host': 'db.internal', 'db-user': 'orders', 'db-password': `${CANARY}-pw`, 'api-token': `${CANARY}-tok` });
  await createPush(env, ns, 'app', {
    // Sources are not watched: the refresh picks up a changed source Secret.
    secretStoreRefs: [{ name: 'aws' }, { name: 'remote' }], selector: { secret: { name: 'app' } }, deletionPolicy: 'Delete', refreshInterval: '2s',
    data: [
      // Explicit: db-password goes to both stores under its own name, and dataTo skips it.
      { match: { secretKey: 'db-password', remoteRef: { remoteKey: 'explicit-pw', property: 'pw' } } },
    ],
    dataTo: [
      { storeRef: { name: 'aws' }, match: { regexp: '^db-' }, rewrite: [{ regexp: { source: '^db-(.*)$', target: 'orders/db/$1' } }] },
      { storeRef: { name: 'aws', kind: 'SecretStore' }, match: { regexp: 'token$' }, remoteKey: 'orders/bundle' },
    ],
  });
  const ps = await pushReady(env, ns, 'app', 'True', 'Synced');
  t.equal(await read('orders/db/host'), 'db.internal', 'per-key: db-host as orders/db/host');
  t.equal(await read('orders/db/user'), 'orders');
  t.equal(await read('orders/db/password'), undefined, 'db-password is pushed by its explicit entry, not by dataTo');
  t.same(JSON.parse((await read('orders/bundle')) ?? '{}'), { 'api-token': `${CANARY}-tok` }, 'bundle: the picked keys as one JSON object');
  t.same(Object.keys(ps.status?.syncedPushSecrets?.['SecretStore/aws'] ?? {}).sort(), ['explicit-pw/pw', 'orders/bundle', 'orders/db/host', 'orders/db/user']);
  t.same(await remoteData(env, k8s.remote, 'explicit-pw'), { pw: `${CANARY}-pw` }, 'the explicit entry reaches every target');
  t.same(Object.keys(ps.status?.syncedPushSecrets?.['SecretStore/remote'] ?? {}), ['explicit-pw/pw'], 'dataTo reaches only the store its storeRef names');

  await putSecret(env, ns, 'app', { 'db-host': 'db.internal', 'db-password': `${CANARY}-pw`, 'api-token': `${CANARY}-tok` });
  await until('db-user gone from the store (deletionPolicy Delete)', async () => (await read('orders/db/user')) === undefined || undefined, 90_000);
  t.equal(await read('orders/db/host'), 'db.internal', 'the other keys stay');
  t.notOk(`${JSON.stringify(ps.status)}${ctl.output()}`.includes(CANARY), 'no value in status or logs');
});

t.test('bad dataTo entries are refused, each naming its field', async (t) => {
  await putSecret(env, ns, 'bad-src', { a: '1' });
  await createPush(env, ns, 'bad', {
    secretStoreRefs: [{ name: 'aws' }], selector: { secret: { name: 'bad-src' } },
    dataTo: [
      { match: { regexp: 'x' } },
      { storeRef: { name: 'aws' }, remoteKey: 'b', rewrite: [{ regexp: { source: 'a', target: 'b' } }] },
      { storeRef: { name: 'aws' }, match: { regexp: '(' } },
    ],
  });
  const ps = await pushReady(env, ns, 'bad', 'False');
  const msg = ps.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';
  t.match(msg, /spec\.dataTo\[0\]\.storeRef needs name or labelSelector/);
  t.match(msg, /spec\.dataTo\[1\]: remoteKey and rewrite exclude each other/);
  t.match(msg, /spec\.dataTo\[2\]\.match\.regexp/);

  await createPush(env, ns, 'elsewhere', {
    secretStoreRefs: [{ name: 'remote' }], selector: { secret: { name: 'bad-src' } },
    dataTo: [{ storeRef: { name: 'aws' } }],
  });
  const other = await pushReady(env, ns, 'elsewhere', 'False');
  t.match(other.status?.conditions?.find((c) => c.type === 'Ready')?.message, /spec\.dataTo\[0\]\.storeRef picks none of the stores spec\.secretStoreRefs names/);
  t.equal(await read('a'), undefined, 'nothing pushed');
});
