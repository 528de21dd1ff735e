// The cloud identities ESO users give the controller's pod, lent to an operator's
// ClusterSecretStore that names no credential (docs/controller.md, "Identity"):
//  - aws: EKS Pod Identity. The EKS webhook sets AWS_CONTAINER_CREDENTIALS_FULL_URI and
//    AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE; the node's Pod Identity agent checks the
//    projected token and answers with credentials for the associated role. moto serves no
//    such endpoint, so a stand-in on 127.0.0.1 plays the agent: it verifies the token
//    against the apiserver's JWKS (audience pods.eks.amazonaws.com, the controller's
//    ServiceAccount) and returns credentials moto's STS issued for the role; moto, with IAM
//    checks on, then serves the secret only to them.
//  - azurekv: Azure workload identity. The Azure webhook sets AZURE_FEDERATED_TOKEN_FILE,
//    AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_AUTHORITY_HOST; the token is exchanged as a
//    client assertion at the Entra ID stand-in, which verifies it as a federated identity
//    credential against the apiserver's JWKS (test/support/platform/backends/entra-standin.ts).
//  - gcpsm: Application Default Credentials, here a workload identity federation config
//    (GOOGLE_APPLICATION_CREDENTIALS, `external_account` with the controller's token file):
//    the STS stand-in verifies the token. No Secret Manager endpoint checks tokens locally
//    (ESI's emulator and gcplocal accept anyone), so the store's validation (a token
//    obtained) is what shows the controller's identity was used.
// The token files hold tokens the apiserver issued for the controller's ServiceAccount, as
// the kubelet's projected volumes would. Without --allow-ambient-identity every store is
// refused naming the switch, and nothing asks for a token; a tenant's SecretStore with the
// same spec is refused with it too.
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { AssumeRoleCommand, STSClient } from '@aws-sdk/client-sts';
import { ClientSecretCredential } from '@azure/identity';
import { SecretClient } from '@azure/keyvault-secrets';
import { CoreV1Api } from '@kubernetes/client-node';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { createNamespace, serviceAccountToken } from '../../support/kube.js';
import { apiserverIssuer, verifyJwt } from '../../support/oidc.js';
import { createTenant } from '../../support/tenant.js';
import { startKeyVault } from '../../support/platform/backends/lowkey-vault.js';
import { allow, startMoto, useMotoEndpoint } from '../../support/platform/backends/moto.js';
import { GROUP, controllerEnv, create, getSecret, ready, startController, until, useEnv } from '../../support/fixtures/controller.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const CANARY = 'ctl-cloud-id-canary-4d07e1';
const PROJECT = 'esi-cloud-id';
const POD_IDENTITY_AUDIENCE = 'pods.eks.amazonaws.com';
const AZURE_AUDIENCE = 'api://AzureADTokenExchange';
const GCP_POOL = '//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/k8s/providers/esi';
const env = await controllerEnv(t);
const tenant = await createTenant(env.kc, 'cloud-id-tenant', t);
const ns = tenant.namespace;
const ctlNs = await createNamespace(env.kc, 'cloud-id-ctl', t);
await env.kc.makeApiClient(CoreV1Api).createNamespacedServiceAccount({ namespace: ctlNs, body: { metadata: { name: 'esi-controller' } } });
const subject = `system:serviceaccount:${ctlNs}:esi-controller`;
const { issuer, jwks } = await apiserverIssuer(env.cp);
const dir = await mkdtemp(join(tmpdir(), 'esi-cloud-id-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
/** A projected token of the controller's ServiceAccount, written where the kubelet would. */
async function tokenFile(name: string, audience: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, await serviceAccountToken(env.kc, ctlNs, 'esi-controller', [audience]));
  return file;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d));
    req.on('end', () => resolve(body));
  });
}

async function listen(t: Test, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const json = (res: ServerResponse, status: number, body: object) => {
  res.statusCode = status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(body));
};

// ---------------------------------------------------------------- aws: moto + the Pod Identity agent
const moto = await startMoto(t);
useMotoEndpoint(t, moto);
const agentKey = await moto.createUser('pod-identity-agent', allow(['sts:AssumeRole']));
// On EKS the role trusts the service pods.eks.amazonaws.com; moto 5.2.5 fails AssumeRole
// (HTTP 500) with a service principal once IAM checks are on, so it trusts the stand-in
// agent's user, which plays that service here.
const podRole = await moto.createRole(
  'esi-controller-pod-identity',
  { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${moto.account}:user/pod-identity-agent` }, Action: 'sts:AssumeRole' }] },
  allow(['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret']),
);
const seed = new SecretsManagerClient({ region: moto.region, endpoint: moto.endpoint, credentials: { accessKeyId: 'seed', secretAccessKey: 'seed' } });
await seed.send(new CreateSecretCommand({ Name: 'platform/pod-identity', SecretString: `${CANARY}-aws` }));
seed.destroy();
await moto.enableAuth();
const agentSts = new STSClient({ region: moto.region, endpoint: moto.endpoint, credentials: agentKey });
t.teardown(() => agentSts.destroy());
const agentCalls: { granted: boolean; reason?: string }[] = [];
const agentUrl = await listen(t, (req, res) => {
  const refuse = (reason: string) => {
    agentCalls.push({ granted: false, reason });
    json(res, 400, { Message: reason });
  };
  if (req.url !== '/v1/credentials') return refuse('unknown path');
  const claims = verifyJwt(String(req.headers.authorization ?? ''), jwks, issuer, POD_IDENTITY_AUDIENCE);
  if (typeof claims === 'string') return refuse(claims);
  if (claims.sub !== subject) return refuse(`no association for ${String(claims.sub)}`);
  void agentSts.send(new AssumeRoleCommand({ RoleArn: podRole, RoleSessionName: 'eks-pod-identity' })).then((out) => {
    agentCalls.push({ granted: true });
    const c = out.Credentials!;
    json(res, 200, { AccessKeyId: c.AccessKeyId, SecretAccessKey: c.SecretAccessKey, Token: c.SessionToken, Expiration: c.Expiration!.toISOString(), AccountId: moto.account });
  }, (err: Error) => refuse(`sts: ${err.name}: ${err.message}`));
});

// ---------------------------------------------------------------- azurekv: the vault and Entra ID stand-ins
const kv = await startKeyVault(t, { forceStandIn: true });
const azureClientId = randomUUID();
kv.addFederatedCredential({ clientId: azureClientId, issuer, subject, audience: AZURE_AUDIENCE, jwks: async () => jwks as never }, ['get']);
const admin = new SecretClient(kv.vaultUrl, new ClientSecretCredential(kv.tenantId, kv.admin.clientId, kv.admin.secret, {
  authorityHost: kv.authorityHost, disableInstanceDiscovery: true, tlsOptions: { ca: kv.caPem },
}), { disableChallengeResourceVerification: true, tlsOptions: { ca: kv.caPem } });
await admin.setSecret('platform-wi', `${CANARY}-azure`);
const federated = () => kv.tokenRequests.filter((r) => r.method === 'federated');

// ---------------------------------------------------------------- gcpsm: ADC with workload identity federation
const exchanges: { granted: boolean; sub?: string }[] = [];
const stsUrl = await listen(t, (req, res) => {
  void readBody(req).then((body) => {
    const form = new URLSearchParams(body);
    const claims = verifyJwt(form.get('subject_token') ?? '', jwks, issuer, GCP_POOL);
    const ok = form.get('grant_type') === 'urn:ietf:params:oauth:grant-type:token-exchange' && form.get('audience') === GCP_POOL && typeof claims !== 'string';
    exchanges.push({ granted: ok, ...(typeof claims === 'string' ? {} : { sub: String(claims.sub) }) });
    if (!ok) return json(res, 400, { error: 'invalid_grant', error_description: typeof claims === 'string' ? claims : 'bad request' });
    json(res, 200, { access_token: `sts-${randomUUID()}`, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer', expires_in: 3600 });
  });
});
const adcFile = join(dir, 'adc.json');
await writeFile(adcFile, JSON.stringify({
  type: 'external_account', audience: GCP_POOL, subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
  token_url: `${stsUrl}/v1/token`, credential_source: { file: await tokenFile('gcp-token', GCP_POOL) },
}));

// The controller pod's environment, as the three webhooks and the chart would set it.
useEnv(t, {
  ...kv.env(),
  POD_SERVICE_ACCOUNT: 'esi-controller',
  AWS_CONTAINER_CREDENTIALS_FULL_URI: `${agentUrl}/v1/credentials`,
  AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE: await tokenFile('eks-pod-identity-token', POD_IDENTITY_AUDIENCE),
  AZURE_FEDERATED_TOKEN_FILE: await tokenFile('azure-identity-token', AZURE_AUDIENCE),
  AZURE_CLIENT_ID: azureClientId,
  AZURE_TENANT_ID: kv.tenantId,
  GOOGLE_APPLICATION_CREDENTIALS: adcFile,
});

const strict = env.cls;
const lenient = `${env.cls}-own`;
const common = ['--claim-unclassed=false', '--leader-elect=false', '--namespace', ctlNs];
const ctlStrict = await startController(env.cp.kubeconfigPath, ['--controller-class', strict, ...common], t);
const ctlLenient = await startController(env.cp.kubeconfigPath, ['--controller-class', lenient, '--allow-ambient-identity=true', ...common], t);

const providers = {
  aws: { aws: { service: 'SecretsManager', region: moto.region } },
  azurekv: { azurekv: { vaultUrl: kv.vaultUrl, authType: 'WorkloadIdentity' } },
  gcpsm: { gcpsm: { projectID: PROJECT } },
};
const keys = { aws: 'platform/pod-identity', azurekv: 'platform-wi' };
for (const [which, provider] of Object.entries(providers)) {
  for (const cls of [strict, lenient]) {
    await create(env, undefined, 'clustersecretstores', {
      kind: 'ClusterSecretStore', metadata: { name: `${cls}-${which}` }, spec: { controller: cls, provider, conditions: [{ namespaces: [ns] }] },
    });
  }
}
const es = (name: string, store: string, which: keyof typeof keys, kind: string) => tenant.custom.createNamespacedCustomObject({
  group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets',
  body: { apiVersion: `${GROUP}/v1`, kind: 'ExternalSecret', metadata: { name }, spec: { refreshInterval: '1h', secretStoreRef: { name: store, kind }, target: { name }, data: [{ secretKey: 'v', remoteRef: { key: keys[which] } }] } },
});
const message = (e: { status?: { conditions?: { type: string; message?: string }[] } }) => e.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';
const value = async (name: string) => Buffer.from((await getSecret(env, ns, name))?.data?.v ?? '', 'base64').toString();
const storeReady = (name: string) => until(`ClusterSecretStore ${name} Ready`, async () => {
  const s = (await env.custom.getClusterCustomObject({ group: GROUP, version: 'v1', plural: 'clustersecretstores', name })) as { status?: { conditions?: { type: string; status: string; reason?: string; message?: string }[] } };
  return s.status?.conditions?.find((c) => c.type === 'Ready');
}, 120_000);

t.test('off by default: refused, naming the switch, and no token asked for', async (t: Test) => {
  for (const which of ['aws', 'azurekv'] as const) {
    await es(`strict-${which}`, `${strict}-${which}`, which, 'ClusterSecretStore');
    const got = await ready(env, ns, `strict-${which}`, 'False', 'AccessDenied', 90_000);
    t.match(message(got), /--allow-ambient-identity \(chart: controller\.allowAmbientIdentity\)/, `${which}: the switch is named`);
    t.notOk(await getSecret(env, ns, `strict-${which}`), `${which}: no Secret`);
  }
  t.match(await storeReady(`${strict}-gcpsm`), { status: 'False', reason: 'InvalidStoreConfiguration', message: /spec\.provider\.gcpsm\.auth.*--allow-ambient-identity/ }, 'gcpsm: refused');
  t.same(agentCalls, [], 'the Pod Identity agent was not asked');
  t.same(federated(), [], 'Entra ID saw no federated token');
  t.same(exchanges, [], 'GCP STS saw no exchange');
});

t.test('aws: the controller\'s EKS Pod Identity', async (t: Test) => {
  await es('own-aws', `${lenient}-aws`, 'aws', 'ClusterSecretStore');
  await ready(env, ns, 'own-aws', 'True', 'SecretSynced', 120_000).catch((err: Error) => {
    throw new Error(`${err.message}; the agent: ${JSON.stringify(agentCalls)}`);
  });
  t.equal(await value('own-aws'), `${CANARY}-aws`, 'read with the credentials the agent returned for the associated role');
  t.ok(agentCalls.some((c) => c.granted), 'the agent verified the controller\'s token and answered');
  t.notOk(agentCalls.some((c) => !c.granted), `no refused call (${JSON.stringify(agentCalls.filter((c) => !c.granted))})`);
});

t.test('azurekv: the controller\'s Azure workload identity (AZURE_FEDERATED_TOKEN_FILE)', async (t: Test) => {
  await es('own-azurekv', `${lenient}-azurekv`, 'azurekv', 'ClusterSecretStore');
  await ready(env, ns, 'own-azurekv', 'True', 'SecretSynced', 120_000);
  t.equal(await value('own-azurekv'), `${CANARY}-azure`);
  t.match(federated(), [{ clientId: azureClientId, granted: true }], 'Entra ID accepted the controller\'s token as the federated credential');
});

t.test('gcpsm: the controller\'s Application Default Credentials', async (t: Test) => {
  const got = await storeReady(`${lenient}-gcpsm`);
  t.match(got, { status: 'True', reason: 'Valid' }, `the store validated: a token was obtained (${got?.message ?? ''})`);
  t.match(exchanges, [{ granted: true, sub: subject }], 'STS exchanged the controller\'s own token');
});

t.test("a tenant's SecretStore with the same spec never borrows it", async (t: Test) => {
  const before = { agent: agentCalls.length, azure: federated().length };
  for (const which of ['aws', 'azurekv'] as const) {
    await tenant.custom.createNamespacedCustomObject({
      group: GROUP, version: 'v1', namespace: ns, plural: 'secretstores',
      body: { apiVersion: `${GROUP}/v1`, kind: 'SecretStore', metadata: { name: `borrow-${which}` }, spec: { controller: lenient, provider: providers[which] } },
    });
    await es(`borrow-${which}`, `borrow-${which}`, which, 'SecretStore');
    const got = await ready(env, ns, `borrow-${which}`, 'False', 'AccessDenied', 90_000);
    t.match(message(got), /lends its own to no SecretStore|lends it to no SecretStore/, `${which}: refused`);
    t.notOk(await getSecret(env, ns, `borrow-${which}`));
  }
  t.same({ agent: agentCalls.length, azure: federated().length }, before, 'no token was asked for');
});

t.test('no canary in the logs', async (t: Test) => {
  for (const out of [ctlStrict.output(), ctlLenient.output()]) t.notOk(out.includes(CANARY));
});
