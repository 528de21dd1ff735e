// One real backend end to end: OpenBao (the Vault API) KV v2 with token auth, the token
// read by the reconciler from a Secret in the store's own namespace.
import t from 'tap';
import { createNamespace } from '../helpers/kube.js';
import { vaultFixture } from '../providers/vault-fixture.js';
import { controllerEnv, create, decoded, externalSecret, getSecret, ready, startController } from './fixture.js';

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
