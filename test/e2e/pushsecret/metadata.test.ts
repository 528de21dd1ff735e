// PushSecret data[].metadata against real backends, read back from each directly:
// OpenBao KV v2 custom_metadata, moto Secrets Manager tags / description / KMS key /
// binary format, kubernetes labels and annotations (merged, then re-applied when the
// metadata changes with an unchanged value); fields a provider does not apply end in
// Ready=False naming the field, with nothing pushed. (gcpsm and azurekv metadata:
// push-gcpsm.test.ts, push-azurekv.test.ts.)
import { DescribeSecretCommand, GetSecretValueCommand } from '@aws-sdk/client-secrets-manager';
import t from 'tap';
import { kvRead, startVaultServer } from '../../support/platform/backends/openbao.js';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, startController, until } from '../../support/fixtures/controller.js';
import { createPush, kubernetesStore, patchPush, pushReady, putSecret, remoteData, motoSecretsManagerStore } from '../../support/fixtures/push.js';

const CANARY = 'pushmd-canary-5f0a1c';
const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'push-md', t);
const vault = await startVaultServer(t);
const { sm, store: awsStore } = await motoSecretsManagerStore(env, t, ns);

const md = (spec: object) => ({ apiVersion: 'kubernetes.external-secrets.io/v1alpha1', kind: 'PushSecretMetadata', spec });

await putSecret(env, ns, 'creds', { 'vault-token': vault.rootToken });
await putSecret(env, ns, 'db', { username: 'orders', password: `${CANARY}-pw` });
await create(env, ns, 'secretstores', {
  kind: 'SecretStore', metadata: { name: 'bao' },
  spec: { controller: env.cls, provider: { vault: { server: vault.addr, path: 'secret', version: 'v2', auth: { tokenSecretRef: { name: 'creds', key: 'vault-token' } } } } },
});
await create(env, ns, 'secretstores', awsStore);
const kube = await kubernetesStore(env, t, ns, 'kube');
await create(env, ns, 'secretstores', kube.store);
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s'], t);

const customMetadata = async (key: string) => ((await vault.api('GET', `secret/metadata/${key}`)).body!.data as { custom_metadata?: Record<string, string>; current_version: number });

t.test('OpenBao: customMetadata becomes the KV v2 custom_metadata, with the managed-by mark; a change is re-applied without a new version', async (t) => {
  await createPush(env, ns, 'bao', {
    secretStoreRefs: [{ name: 'bao' }], selector: { secret: { name: 'db' } },
    data: [{ match: { secretKey: 'username', remoteRef: { remoteKey: 'md/db', property: 'user' } }, metadata: md({ customMetadata: { team: 'orders', tier: 'gold' } }) }],
  });
  await pushReady(env, ns, 'bao', 'True', 'Synced');
  t.same(await kvRead(vault, 'secret', 2, 'md/db'), { user: 'orders' });
  const first = await customMetadata('md/db');
  t.same(first.custom_metadata, { team: 'orders', tier: 'gold', 'managed-by': 'external-secrets' });

  await patchPush(env, ns, 'bao', (o) => void (o.spec.data![0]!.metadata = md({ customMetadata: { team: 'payments' } })));
  await until('custom_metadata updated', async () => (await customMetadata('md/db')).custom_metadata?.team === 'payments', 45_000);
  const second = await customMetadata('md/db');
  t.same(second.custom_metadata, { team: 'payments', 'managed-by': 'external-secrets' });
  t.equal(second.current_version, first.current_version, 'metadata alone: no new KV version');
});

t.test('moto Secrets Manager: tags, description, KMS key and binary format; later tags added on an unchanged value', async (t) => {
  await createPush(env, ns, 'aws', {
    secretStoreRefs: [{ name: 'aws' }], selector: { secret: { name: 'db' } },
    data: [{
      match: { secretKey: 'password', remoteRef: { remoteKey: 'md/db' } },
      metadata: md({ tags: { team: 'orders' }, description: 'orders database password', kmsKeyID: 'alias/orders', secretPushFormat: 'binary' }),
    }],
  });
  await pushReady(env, ns, 'aws', 'True', 'Synced');
  const d = await sm.send(new DescribeSecretCommand({ SecretId: 'md/db' }));
  const tags = Object.fromEntries((d.Tags ?? []).map((x) => [x.Key, x.Value]));
  t.same(tags, { team: 'orders', 'managed-by': 'external-secrets' });
  t.equal(d.Description, 'orders database password');
  t.equal(d.KmsKeyId, 'alias/orders');
  const v = await sm.send(new GetSecretValueCommand({ SecretId: 'md/db' }));
  t.notOk(v.SecretString, 'secretPushFormat binary: no SecretString');
  t.equal(Buffer.from(v.SecretBinary!).toString('utf8'), `${CANARY}-pw`);

  await patchPush(env, ns, 'aws', (o) => void (o.spec.data![0]!.metadata = md({ tags: { team: 'orders', cost: 'c42' }, description: 'orders database password', kmsKeyID: 'alias/orders', secretPushFormat: 'binary' })));
  await until('tag added', async () => (await sm.send(new DescribeSecretCommand({ SecretId: 'md/db' }))).Tags?.some((x) => x.Key === 'cost' && x.Value === 'c42'), 45_000);
  t.pass('tag added on an unchanged value');
});

t.test('kubernetes: labels and annotations on the remote Secret, merged into its own', async (t) => {
  await createPush(env, ns, 'kube', {
    secretStoreRefs: [{ name: 'kube' }], selector: { secret: { name: 'db' } },
    data: [{ match: { secretKey: 'username', remoteRef: { remoteKey: 'md-db', property: 'user' } }, metadata: md({ labels: { team: 'orders' }, annotations: { 'example.com/owner': 'orders' } }) }],
  });
  await pushReady(env, ns, 'kube', 'True', 'Synced');
  t.same(await remoteData(env, kube.remote, 'md-db'), { user: 'orders' });
  const s = await env.core.readNamespacedSecret({ namespace: kube.remote, name: 'md-db' });
  t.equal(s.metadata?.labels?.team, 'orders');
  t.equal(s.metadata?.annotations?.['example.com/owner'], 'orders');

  await patchPush(env, ns, 'kube', (o) => void (o.spec.data![0]!.metadata = md({ labels: { tier: 'gold' } })));
  await until('label merged', async () => (await env.core.readNamespacedSecret({ namespace: kube.remote, name: 'md-db' })).metadata?.labels?.tier === 'gold', 45_000);
  const after = await env.core.readNamespacedSecret({ namespace: kube.remote, name: 'md-db' });
  t.equal(after.metadata?.labels?.team, 'orders', 'Merge (the default) keeps the labels already there');
});

t.test('fields a provider does not apply: Ready=False naming the field, nothing pushed', async (t) => {
  await createPush(env, ns, 'bad-md', {
    secretStoreRefs: [{ name: 'kube' }, { name: 'bao' }], selector: { secret: { name: 'db' } },
    data: [{ match: { secretKey: 'username', remoteRef: { remoteKey: 'md-bad', property: 'user' } }, metadata: md({ labels: { a: 'b' }, sourceMergePolicy: 'Merge' }) }],
  });
  const ps = await pushReady(env, ns, 'bad-md', 'False', 'Errored');
  const msg = ps.status?.conditions?.[0]?.message ?? '';
  t.match(msg, /SecretStore "[^"]+\/kube": spec.data\[0\].metadata.spec.sourceMergePolicy is not supported by ESI's kubernetes provider/);
  t.match(msg, /SecretStore "[^"]+\/bao": spec.data\[0\].metadata.spec.labels is not a field of the vault provider's push metadata/);
  t.notOk(await remoteData(env, kube.remote, 'md-bad'), 'nothing pushed to kubernetes');
  t.notOk(await kvRead(vault, 'secret', 2, 'md-bad'), 'nothing pushed to OpenBao');
});

t.test('no canary in status, Events, logs or metrics', async (t) => {
  const list = await env.custom.listNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1alpha1', namespace: ns, plural: 'pushsecrets' });
  const events = await env.core.listNamespacedEvent({ namespace: ns });
  for (const [what, text] of [['status', JSON.stringify(list)], ['events', JSON.stringify(events)], ['logs', ctl.output()], ['metrics', await ctl.metrics()]] as const) {
    t.notOk(text.includes(CANARY), `no canary in ${what}`);
  }
});
