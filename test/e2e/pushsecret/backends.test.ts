// PushSecret into real backends, read back directly from each: OpenBao (KV v2: properties
// merged into one JSON secret, whole-Secret pushes, the managed-by custom metadata, no new
// version on idle refreshes, an unmarked secret refused) and moto (Secrets Manager: the
// managed-by tag, deletionPolicy Delete removing exactly the pushed secret while a foreign
// one with the same prefix survives); and the shared scenario of push-matrix.ts on both.
import { CreateSecretCommand, DescribeSecretCommand, GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import t from 'tap';
import { kvRead, kvWrite, startVaultServer } from '../../support/platform/backends/openbao.js';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, startController, until } from '../../support/fixtures/controller.js';
import { createPush, deletePush, getPush, pushReady, putSecret, motoSecretsManagerStore } from '../../support/fixtures/push.js';
import { pushMatrix } from '../../support/cases/push-matrix.js';

const CANARY = 'pushbk-canary-81c2e7';
const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'push-bk', t);
const vault = await startVaultServer(t);
const { sm, store: awsStore } = await motoSecretsManagerStore(env, t, ns);

await putSecret(env, ns, 'creds', { 'vault-token': vault.rootToken });
await putSecret(env, ns, 'db', { username: 'orders', password: `${CANARY}-pw` });
const baoStore = {
  kind: 'SecretStore', metadata: { name: 'bao' },
  spec: { controller: env.cls, provider: { vault: { server: vault.addr, path: 'secret', version: 'v2', auth: { tokenSecretRef: { name: 'creds', key: 'vault-token' } } } } },
};
await create(env, ns, 'secretstores', baoStore);
await create(env, ns, 'secretstores', awsStore);
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s'], t);

const currentVersion = async (key: string) => ((await vault.api('GET', `secret/metadata/${key}`)).body!.data as { current_version: number; custom_metadata?: Record<string, string> });

t.test('OpenBao: properties into one JSON secret, whole Secret, managed-by mark, no write on idle refresh', async (t) => {
  await createPush(env, ns, 'bao', {
    secretStoreRefs: [{ name: 'bao' }], selector: { secret: { name: 'db' } },
    data: [
      { match: { secretKey: 'username', remoteRef: { remoteKey: 'app/db', property: 'user' } } },
      { match: { secretKey: 'password', remoteRef: { remoteKey: 'app/db', property: 'pass' } } },
      { match: { remoteRef: { remoteKey: 'app/whole' } } },
    ],
  });
  await pushReady(env, ns, 'bao', 'True', 'Synced');
  t.same(await kvRead(vault, 'secret', 2, 'app/db'), { user: 'orders', pass: `${CANARY}-pw` });
  t.same(await kvRead(vault, 'secret', 2, 'app/whole'), { username: 'orders', password: `${CANARY}-pw` });
  const meta = await currentVersion('app/db');
  t.equal(meta.custom_metadata?.['managed-by'], 'external-secrets');
  await new Promise((r) => setTimeout(r, 6000));
  t.equal((await currentVersion('app/db')).current_version, meta.current_version, 'no new KV version on idle refreshes');
  t.equal((await currentVersion('app/whole')).current_version, 1, 'whole-Secret push compared as JSON: written once');

  await putSecret(env, ns, 'db', { username: 'orders', password: `${CANARY}-pw2` });
  await until('updated in OpenBao', async () => (await kvRead(vault, 'secret', 2, 'app/db'))?.pass === `${CANARY}-pw2`, 45_000);
  t.pass('updated within one refresh');
});

t.test('OpenBao: a secret without the managed-by mark is not overwritten', async (t) => {
  await kvWrite(vault, 'secret', 2, 'app/theirs', { user: 'someone' });
  await createPush(env, ns, 'bao-foreign', {
    secretStoreRefs: [{ name: 'bao' }], selector: { secret: { name: 'db' } },
    data: [{ match: { secretKey: 'username', remoteRef: { remoteKey: 'app/theirs', property: 'user' } } }],
  });
  const ps = await pushReady(env, ns, 'bao-foreign', 'False', 'Errored');
  t.match(ps.status?.conditions?.[0]?.message, /SecretStore "[^"]+\/bao" entry "app\/theirs\/user":.*not managed by external-secrets/);
  t.same(await kvRead(vault, 'secret', 2, 'app/theirs'), { user: 'someone' });
});

t.test('OpenBao: deletionPolicy Delete removes the pushed secret on PushSecret deletion; a foreign one survives', async (t) => {
  await kvWrite(vault, 'secret', 2, 'del/app-foreign', { x: 'keep' });
  await createPush(env, ns, 'bao-del', {
    secretStoreRefs: [{ name: 'bao' }], selector: { secret: { name: 'db' } }, deletionPolicy: 'Delete',
    data: [{ match: { secretKey: 'username', remoteRef: { remoteKey: 'del/app', property: 'u' } } }],
  });
  await pushReady(env, ns, 'bao-del', 'True');
  t.same(await kvRead(vault, 'secret', 2, 'del/app'), { u: 'orders' });
  await deletePush(env, ns, 'bao-del');
  await until('PushSecret gone', async () => !(await getPush(env, ns, 'bao-del')));
  t.notOk(await kvRead(vault, 'secret', 2, 'del/app'));
  t.same(await kvRead(vault, 'secret', 2, 'del/app-foreign'), { x: 'keep' });
});

t.test('moto Secrets Manager: push with the managed-by tag, IfNotExists, Delete removes exactly the pushed secret', async (t) => {
  await sm.send(new CreateSecretCommand({ Name: 'esi/db-foreign', SecretString: 'theirs' }));
  await createPush(env, ns, 'aws', {
    secretStoreRefs: [{ name: 'aws' }], selector: { secret: { name: 'db' } }, deletionPolicy: 'Delete',
    data: [
      { match: { secretKey: 'password', remoteRef: { remoteKey: 'esi/db' } } },
      { match: { remoteRef: { remoteKey: 'esi/db-json', property: 'whole' } } },
    ],
  });
  await pushReady(env, ns, 'aws', 'True', 'Synced');
  t.equal((await sm.send(new GetSecretValueCommand({ SecretId: 'esi/db' }))).SecretString, `${CANARY}-pw2`);
  const json = JSON.parse((await sm.send(new GetSecretValueCommand({ SecretId: 'esi/db-json' }))).SecretString ?? '{}') as { whole: string };
  t.same(JSON.parse(json.whole), { username: 'orders', password: `${CANARY}-pw2` }, 'whole Secret as a property of one JSON secret');
  const tags = (await sm.send(new DescribeSecretCommand({ SecretId: 'esi/db' }))).Tags ?? [];
  t.ok(tags.some((x) => x.Key === 'managed-by' && x.Value === 'external-secrets'), 'managed-by tag');

  await createPush(env, ns, 'aws-ifnot', {
    secretStoreRefs: [{ name: 'aws' }], selector: { secret: { name: 'db' } }, updatePolicy: 'IfNotExists',
    data: [{ match: { secretKey: 'username', remoteRef: { remoteKey: 'esi/db-foreign' } } }],
  });
  await pushReady(env, ns, 'aws-ifnot', 'True');
  t.equal((await sm.send(new GetSecretValueCommand({ SecretId: 'esi/db-foreign' }))).SecretString, 'theirs', 'IfNotExists keeps it');

  await deletePush(env, ns, 'aws');
  await until('PushSecret gone', async () => !(await getPush(env, ns, 'aws')));
  await t.rejects(sm.send(new GetSecretValueCommand({ SecretId: 'esi/db' })), /ResourceNotFound|can't find/i);
  t.equal((await sm.send(new GetSecretValueCommand({ SecretId: 'esi/db-foreign' }))).SecretString, 'theirs', 'foreign secret survives');
});

t.test('OpenBao: the shared scenario', (t) => pushMatrix(t, env, ctl, ns, {
  label: 'OpenBao', store: baoStore,
  read: (key) => kvRead(vault, 'secret', 2, key),
  seed: async (key, value) => void (await kvWrite(vault, 'secret', 2, key, { user: value })),
}));

const smRead = async (key: string) => {
  try {
    return JSON.parse((await sm.send(new GetSecretValueCommand({ SecretId: key }))).SecretString ?? 'null') as Record<string, unknown>;
  } catch {
    return undefined;
  }
};
t.test('moto Secrets Manager: the shared scenario', (t) => pushMatrix(t, env, ctl, ns, {
  label: 'moto Secrets Manager', store: awsStore, read: smRead,
  seed: async (key, value) => void (await sm.send(new CreateSecretCommand({ Name: key, SecretString: JSON.stringify({ user: value }) }))),
}));

t.test('no canary in status, Events, logs or metrics', async (t) => {
  const list = await env.custom.listNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1alpha1', namespace: ns, plural: 'pushsecrets' });
  const events = await env.core.listNamespacedEvent({ namespace: ns });
  for (const [what, text] of [['status', JSON.stringify(list)], ['events', JSON.stringify(events)], ['logs', ctl.output()], ['metrics', await ctl.metrics()]] as const) {
    t.notOk(text.includes(CANARY), `no canary in ${what}`);
  }
});
