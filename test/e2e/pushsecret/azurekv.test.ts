// PushSecret into Azure Key Vault (lowkey-vault or ESI's stand-in, with the Entra token
// stand-in), read back with the official SDK: a value and a property push, the managed-by
// tag, no new version on idle refreshes, an untagged secret refused, and deletionPolicy
// Delete removing exactly the pushed secrets, push metadata, and the shared scenario of
// push-matrix.ts.
import { ClientSecretCredential } from '@azure/identity';
import { SecretClient } from '@azure/keyvault-secrets';
import { randomBytes, randomUUID } from 'node:crypto';
import t from 'tap';
import { startKeyVault } from '../../support/platform/backends/lowkey-vault.js';
import { createNamespace } from '../../support/kube.js';
import { controllerEnv, create, startController, until } from '../../support/fixtures/controller.js';
import { createPush, deletePush, getPush, patchPush, pushReady, putSecret } from '../../support/fixtures/push.js';
import { pushMatrix } from '../../support/cases/push-matrix.js';

const CANARY = 'pushaz-canary-6e1b3f';
const env = await controllerEnv(t);
const ns = await createNamespace(env.kc, 'push-az', t);
const kv = await startKeyVault(t);
const saved = { ...process.env };
Object.assign(process.env, kv.env()); // inherited by the controller process
t.teardown(() => {
  for (const k of Object.keys(kv.env())) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});
const admin = new SecretClient(kv.vaultUrl, new ClientSecretCredential(kv.tenantId, kv.admin.clientId, kv.admin.secret, {
  authorityHost: kv.authorityHost, disableInstanceDiscovery: true, tlsOptions: { ca: kv.caPem },
}), { disableChallengeResourceVerification: true, tlsOptions: { ca: kv.caPem } });
const value = (name: string) => admin.getSecret(name).then((s) => s.value, () => undefined);
const versionCount = async (name: string) => {
  let n = 0;
  for await (const _ of admin.listPropertiesOfSecretVersions(name)) n++;
  return n;
};

const run = `p${randomBytes(3).toString('hex')}`;
const sp = { clientId: randomUUID(), secret: `sp-${randomBytes(8).toString('hex')}` };
kv.addServicePrincipal(sp, ['get', 'list', 'set', 'delete', 'purge']);
await putSecret(env, ns, 'azure-sp', { 'client-id': sp.clientId, 'client-secret': sp.secret });
await putSecret(env, ns, 'db', { username: 'orders', password: `${CANARY}-pw` });
const azureStore = {
  kind: 'SecretStore', metadata: { name: 'azure' },
  spec: { controller: env.cls, provider: { azurekv: {
    vaultUrl: kv.vaultUrl, tenantId: kv.tenantId, authType: 'ServicePrincipal',
    authSecretRef: { clientId: { name: 'azure-sp', key: 'client-id' }, clientSecret: { name: 'azure-sp', key: 'client-secret' } },
  } } },
};
await create(env, ns, 'secretstores', azureStore);
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s'], t);

t.test(`${kv.label}: value and property pushes, managed-by tag, no new version when idle, Delete`, async (t) => {
  await admin.setSecret(`${run}-db-foreign`, 'theirs');
  await createPush(env, ns, 'az', {
    secretStoreRefs: [{ name: 'azure' }], selector: { secret: { name: 'db' } }, deletionPolicy: 'Delete',
    data: [
      { match: { secretKey: 'password', remoteRef: { remoteKey: `${run}-db` } } },
      { match: { secretKey: 'username', remoteRef: { remoteKey: `${run}-json`, property: 'user' } } },
    ],
  });
  await pushReady(env, ns, 'az', 'True', 'Synced', { ms: 60_000 });
  t.equal(await value(`${run}-db`), `${CANARY}-pw`);
  t.same(JSON.parse((await value(`${run}-json`)) ?? '{}'), { user: 'orders' });
  t.equal((await admin.getSecret(`${run}-db`)).properties.tags?.['managed-by'], 'external-secrets');
  const n = await versionCount(`${run}-db`);
  await new Promise((r) => setTimeout(r, 6000));
  t.equal(await versionCount(`${run}-db`), n, 'no new version on idle refreshes');

  await deletePush(env, ns, 'az');
  await until('PushSecret gone', async () => !(await getPush(env, ns, 'az')), 60_000);
  t.notOk(await value(`${run}-db`), 'pushed secret deleted');
  t.equal(await value(`${run}-db-foreign`), 'theirs', 'foreign secret with the same prefix survives');
});

t.test('an untagged secret is not overwritten', async (t) => {
  await admin.setSecret(`${run}-theirs`, 'someone-else');
  await createPush(env, ns, 'az-foreign', {
    secretStoreRefs: [{ name: 'azure' }], selector: { secret: { name: 'db' } },
    data: [{ match: { secretKey: 'username', remoteRef: { remoteKey: `${run}-theirs` } } }],
  });
  const ps = await pushReady(env, ns, 'az-foreign', 'False', 'Errored', { ms: 60_000 });
  t.match(ps.status?.conditions?.[0]?.message, new RegExp(`entry "${run}-theirs"`));
  t.equal(await value(`${run}-theirs`), 'someone-else');
});

t.test(`${kv.label}: push metadata: tags and expirationDate on the pushed version; a tag change is re-applied`, async (t) => {
  const md = (spec: object) => ({ apiVersion: 'kubernetes.external-secrets.io/v1alpha1', kind: 'PushSecretMetadata', spec });
  await createPush(env, ns, 'az-md', {
    secretStoreRefs: [{ name: 'azure' }], selector: { secret: { name: 'db' } },
    data: [{ match: { secretKey: 'username', remoteRef: { remoteKey: `${run}-md` } }, metadata: md({ tags: { team: 'orders' }, expirationDate: '2031-01-02T03:04:05Z' }) }],
  });
  await pushReady(env, ns, 'az-md', 'True', 'Synced', { ms: 60_000 });
  const s = await admin.getSecret(`${run}-md`);
  t.same(s.properties.tags, { team: 'orders', 'managed-by': 'external-secrets' });
  t.equal(s.properties.expiresOn?.toISOString(), '2031-01-02T03:04:05.000Z');

  await patchPush(env, ns, 'az-md', (o) => void (o.spec.data![0]!.metadata = md({ tags: { team: 'payments' }, expirationDate: '2031-01-02T03:04:05Z' })));
  await until('tag re-applied', async () => (await admin.getSecret(`${run}-md`)).properties.tags?.team === 'payments', 45_000);
  t.equal(await value(`${run}-md`), 'orders', 'same value');
});

t.test('the shared scenario', (t) => pushMatrix(t, env, ctl, ns, {
  label: kv.label, store: azureStore,
  read: async (key) => {
    const v = await value(key);
    return v === undefined ? undefined : (JSON.parse(v) as Record<string, unknown>);
  },
  seed: async (key, v) => void (await admin.setSecret(key, JSON.stringify({ user: v }))),
}));

t.test('no canary in status, Events, logs or metrics', async (t) => {
  const list = await env.custom.listNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1alpha1', namespace: ns, plural: 'pushsecrets' });
  const events = await env.core.listNamespacedEvent({ namespace: ns });
  for (const [what, text] of [['status', JSON.stringify(list)], ['events', JSON.stringify(events)], ['logs', ctl.output()], ['metrics', await ctl.metrics()]] as const) {
    t.notOk(text.includes(CANARY), `no canary in ${what}`);
  }
});
