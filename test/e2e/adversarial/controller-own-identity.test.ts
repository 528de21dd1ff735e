// The store setups ESO users run with the controller's own identity (docs/controller.md,
// "Identity"): Vault's Kubernetes auth and AWS web identity with the controller's own
// ServiceAccount token, for an operator's ClusterSecretStore that names no ServiceAccount.
// Real OpenBao verifies the token through the apiserver's TokenReview, moto's STS exchanges it
// (AssumeRoleWithWebIdentity). Off by default: refused with a message naming the switch; on
// (--allow-ambient-identity), the ClusterSecretStores sync and a tenant's SecretStore with the
// same spec is still refused (a namespaced store never borrows the controller's identity).
// The controller's ServiceAccount is named as the chart names it (POD_SERVICE_ACCOUNT).
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { CoreV1Api } from '@kubernetes/client-node';
import t, { type Test } from 'tap';
import { createNamespace } from '../../support/kube.js';
import { createTenant } from '../../support/tenant.js';
import { enableKubernetesAuth, startVaultServer, writePolicy } from '../../support/platform/backends/openbao.js';
import { startMoto, useMotoEndpoint } from '../../support/platform/backends/moto.js';
import { GROUP, controllerEnv, create, getSecret, ready, startController, useEnv } from '../../support/fixtures/controller.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const CANARY = 'ctl-own-id-canary-91ac3e';
const env = await controllerEnv(t);
const tenant = await createTenant(env.kc, 'own-id-tenant', t);
const ns = tenant.namespace;
// The controller's own namespace and ServiceAccount.
const ctlNs = await createNamespace(env.kc, 'own-id-ctl', t);
await env.kc.makeApiClient(CoreV1Api).createNamespacedServiceAccount({ namespace: ctlNs, body: { metadata: { name: 'esi-controller' } } });
useEnv(t, { POD_SERVICE_ACCOUNT: 'esi-controller' });

// OpenBao: Kubernetes auth bound to the controller's ServiceAccount, checked by TokenReview.
const bao = await startVaultServer(t);
await writePolicy(bao, 'platform-read', 'path "secret/data/platform/*" { capabilities = ["read"] }');
await enableKubernetesAuth(bao, env.cp, { mount: 'kubernetes', reviewerNamespace: ctlNs });
await bao.api('POST', 'auth/kubernetes/role/esi', {
  bound_service_account_names: ['esi-controller'], bound_service_account_namespaces: [ctlNs], token_policies: ['platform-read'], token_ttl: '5m',
});
await bao.api('POST', 'secret/data/platform/db', { data: { password: `${CANARY}-vault` } });

// moto: a role the controller's web identity assumes, and a secret it may read.
const moto = await startMoto(t);
useMotoEndpoint(t, moto);
const role = await moto.createRole(
  'esi-controller',
  { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: { Federated: `arn:aws:iam::${moto.account}:oidc-provider/kubernetes.default.svc` }, Action: 'sts:AssumeRoleWithWebIdentity' }] },
  { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: ['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'], Resource: '*' }] },
);
const sm = new SecretsManagerClient({ region: moto.region, endpoint: moto.endpoint, credentials: { accessKeyId: 'seed', secretAccessKey: 'seed' } });
t.teardown(() => sm.destroy());
await sm.send(new CreateSecretCommand({ Name: 'platform/aws', SecretString: `${CANARY}-aws` }));

const strict = env.cls;
const lenient = `${env.cls}-own`;
const common = ['--claim-unclassed=false', '--leader-elect=false', '--namespace', ctlNs];
const ctlStrict = await startController(env.cp.kubeconfigPath, ['--controller-class', strict, ...common], t);
const ctlLenient = await startController(env.cp.kubeconfigPath, ['--controller-class', lenient, '--allow-ambient-identity=true', ...common], t);
// A third lends it to the SecretStores of one named namespace (the tenant's, here).
const byNamespace = `${env.cls}-ns`;
const ctlByNs = await startController(env.cp.kubeconfigPath, ['--controller-class', byNamespace, '--allow-ambient-identity-namespaces', ns, ...common], t);

const providers = {
  vault: { vault: { server: bao.addr, path: 'secret', version: 'v2', auth: { kubernetes: { mountPath: 'kubernetes', role: 'esi' } } } },
  aws: { aws: { service: 'SecretsManager', region: moto.region, role } },
};
const keys = { vault: { key: 'platform/db', property: 'password' }, aws: { key: 'platform/aws' } };
const es = (name: string, store: string, which: keyof typeof keys, kind: string) => tenant.custom.createNamespacedCustomObject({
  group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets',
  body: { apiVersion: `${GROUP}/v1`, kind: 'ExternalSecret', metadata: { name }, spec: { refreshInterval: '1h', secretStoreRef: { name: store, kind }, target: { name }, data: [{ secretKey: 'v', remoteRef: keys[which] }] } },
});
const message = (e: { status?: { conditions?: { type: string; message?: string }[] } }) => e.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';
const value = async (name: string) => Buffer.from((await getSecret(env, ns, name))?.data?.v ?? '', 'base64').toString();

for (const which of ['vault', 'aws'] as const) {
  for (const cls of [strict, lenient]) {
    await create(env, undefined, 'clustersecretstores', {
      kind: 'ClusterSecretStore', metadata: { name: `${cls}-${which}` }, spec: { controller: cls, provider: providers[which], conditions: [{ namespaces: [ns] }] },
    });
  }
}

t.test('off by default: refused, naming the switch', async (t: Test) => {
  for (const which of ['vault', 'aws'] as const) {
    await es(`strict-${which}`, `${strict}-${which}`, which, 'ClusterSecretStore');
    const got = await ready(env, ns, `strict-${which}`, 'False', 'AccessDenied', 90_000);
    t.match(message(got), /names no ServiceAccount.*--allow-ambient-identity \(chart: controller\.allowAmbientIdentity\)/, `${which}: the switch is named`);
    t.notOk(await getSecret(env, ns, `strict-${which}`), `${which}: no Secret`);
  }
});

t.test("opted in: an operator's ClusterSecretStore logs in with the controller's own token", async (t: Test) => {
  await es('own-vault', `${lenient}-vault`, 'vault', 'ClusterSecretStore');
  await es('own-aws', `${lenient}-aws`, 'aws', 'ClusterSecretStore');
  await ready(env, ns, 'own-vault', 'True', 'SecretSynced', 120_000);
  t.equal(await value('own-vault'), `${CANARY}-vault`, "OpenBao's Kubernetes auth accepted the controller's token (TokenReview)");
  await ready(env, ns, 'own-aws', 'True', 'SecretSynced', 120_000);
  t.equal(await value('own-aws'), `${CANARY}-aws`, 'STS exchanged the controller\'s token for the role');
});

t.test("a tenant's SecretStore with the same spec never borrows it", async (t: Test) => {
  for (const which of ['vault', 'aws'] as const) {
    await tenant.custom.createNamespacedCustomObject({
      group: GROUP, version: 'v1', namespace: ns, plural: 'secretstores',
      body: { apiVersion: `${GROUP}/v1`, kind: 'SecretStore', metadata: { name: `borrow-${which}` }, spec: { controller: lenient, provider: providers[which] } },
    });
    await es(`borrow-${which}`, `borrow-${which}`, which, 'SecretStore');
    const got = await ready(env, ns, `borrow-${which}`, 'False', 'AccessDenied', 90_000);
    t.match(message(got), /the controller lends its own to no SecretStore/, `${which}: refused`);
    t.notOk(await getSecret(env, ns, `borrow-${which}`));
  }
});

t.test('a namespace the operator names lends it to its SecretStores', async (t: Test) => {
  await tenant.custom.createNamespacedCustomObject({
    group: GROUP, version: 'v1', namespace: ns, plural: 'secretstores',
    body: { apiVersion: `${GROUP}/v1`, kind: 'SecretStore', metadata: { name: 'lent-vault' }, spec: { controller: byNamespace, provider: providers.vault } },
  });
  await es('lent-vault', 'lent-vault', 'vault', 'SecretStore');
  await ready(env, ns, 'lent-vault', 'True', 'SecretSynced', 120_000);
  t.equal(await value('lent-vault'), `${CANARY}-vault`);
});

t.test('no canary in the logs', async (t: Test) => {
  for (const out of [ctlStrict.output(), ctlLenient.output(), ctlByNs.output()]) t.notOk(out.includes(CANARY));
});
