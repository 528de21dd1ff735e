// One real backend end to end: OpenBao (the Vault API) KV v2 with token auth, the token
// read by the reconciler from a Secret in the store's own namespace; the same server as
// ESO's openBao store kind.
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { vaultFixture } from '../../support/fixtures/vault.js';
import { controllerEnv, create, decoded, externalSecret, getSecret, ready, startController } from '../../support/fixtures/controller.js';

const CANARY = 'ctl-vault-canary-91c2';
const env = await controllerEnv(t);
const vault = await vaultFixture(t);
const ns = await createNamespace(env.kc, 'ctl-vault', t);
await env.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'vault-token' }, stringData: { token: vault.rwToken } } });
await vault.seed('v2', 'orders/db', { username: 'orders', password: `${CANARY}-pw` });
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false'], t);

t.test('OpenBao KV v2, token auth: the Secret holds the remote values', async (t) => {
  await create(env, ns, 'secretstores', { kind: 'SecretStore', metadata: { name: 'vault' }, spec: { controller: env.cls, provider: { vault: vault.tokenSpec('v2') } } });
  await create(env, ns, 'externalsecrets', externalSecret('db', 'vault', { dataFrom: [{ extract: { key: 'orders/db' } }] }));
  await ready(env, ns, 'db', 'True');
  t.same(decoded(await getSecret(env, ns, 'db')), { username: 'orders', password: `${CANARY}-pw` });
  t.notOk(ctl.output().includes(CANARY), 'no canary in the logs');
});

t.test('an openBao store (ESO\'s OpenBao kind, served by the vault implementation) syncs into a Secret', async (t) => {
  await create(env, ns, 'secretstores', { kind: 'SecretStore', metadata: { name: 'bao' }, spec: { controller: env.cls, provider: { openBao: vault.tokenSpec('v2') } } });
  await create(env, ns, 'externalsecrets', externalSecret('bao-db', 'bao', { data: [{ secretKey: 'pw', remoteRef: { key: 'orders/db', property: 'password' } }] }));
  await ready(env, ns, 'bao-db', 'True');
  t.same(decoded(await getSecret(env, ns, 'bao-db')), { pw: `${CANARY}-pw` });
  await create(env, ns, 'secretstores', { kind: 'SecretStore', metadata: { name: 'bao-userpass' }, spec: { controller: env.cls, provider: { openBao: {
    ...vault.tokenSpec('v2'), auth: { userPass: { username: 'app', secretRef: { name: 'vault-token', key: 'token' } } } } } } });
  await create(env, ns, 'externalsecrets', externalSecret('bao-userpass', 'bao-userpass', { dataFrom: [{ extract: { key: 'orders/db' } }] }));
  const es = await ready(env, ns, 'bao-userpass', 'False', 'StoreNotReady');
  t.match(es.status?.conditions?.[0]?.message, /openBao\.auth\.userPass is not supported by ESI \(use tokenSecretRef, appRole\)/, 'the store\'s refusal names the openBao field');
  t.notOk(await getSecret(env, ns, 'bao-userpass'));
  t.notOk(ctl.output().includes(CANARY), 'no canary in the logs');
});
