// The agent renders files from Azure Key Vault end to end, in-process (runAgent /
// startAgent in a temp root), through the real provider registry:
//  - workload identity: the pod's projected token is a real service-account token
//    issued by the local kube-apiserver (TokenRequest, audience api://AzureADTokenExchange);
//    the token endpoint stand-in accepts it as a federated credential only after checking
//    its signature against the apiserver's JWKS and its issuer, subject and audience;
//  - service principal: client id/secret mounted as files under credentialsDir;
// then a refresh picks up a new secret version, and no secret value (nor the client
// secret, nor the service-account token) appears in logs or metrics.
// The vault is lowkey-vault when its jar is available, else ESI's Key Vault API stand-in
// (see test/support/platform/backends/lowkey-vault.ts); the test names say which.
import { ClientSecretCredential } from '@azure/identity';
import { SecretClient } from '@azure/keyvault-secrets';
import { CoreV1Api } from '@kubernetes/client-node';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import t from 'tap';
import { runAgent, startAgent } from '../../../injector/agent.js';
import type { AgentConfig } from '../../../src/agent-config/types.js';
import { captureLogger, tempRoot } from '../../support/fixtures/agent.js';
import { until } from '../../support/platform/until.js';
import { createNamespace, serviceAccountToken } from '../../support/kube.js';
import { startKeyVault } from '../../support/platform/backends/lowkey-vault.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';

const AUDIENCE = 'api://AzureADTokenExchange';
const CANARY_PASSWORD = `CANARY-azkv-pw-${randomBytes(4).toString('hex')}`;
const CANARY_TOKEN = `CANARY-azkv-tok-${randomBytes(4).toString('hex')}`;

const cp = await useControlPlane(t);
const kv = await startKeyVault(t);
const label = kv.label;
const saved = { ...process.env };
Object.assign(process.env, kv.env());
t.teardown(() => {
  for (const k of Object.keys(kv.env())) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

/** GET on the apiserver with the admin token (OIDC discovery of the SA issuer). */
function apiserverGet(path: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const req = request(`${cp.server}${path}`, { ca: cp.caPem, headers: { authorization: `Bearer ${cp.token}` } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body) as Record<string, unknown>) : reject(new Error(`${path}: ${res.statusCode} ${body}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

const admin = new SecretClient(kv.vaultUrl, new ClientSecretCredential(kv.tenantId, kv.admin.clientId, kv.admin.secret, {
  authorityHost: kv.authorityHost, disableInstanceDiscovery: true, tlsOptions: { ca: kv.caPem },
}), { disableChallengeResourceVerification: true, tlsOptions: { ca: kv.caPem } });

const ns = await createNamespace(cp.kc, 'azkv', t);
const core = cp.kc.makeApiClient(CoreV1Api);
for (const sa of ['app', 'intruder']) await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: sa } } });
const issuer = String((await apiserverGet('/.well-known/openid-configuration')).issuer);

// The app registration the pod's service account is federated with.
const wiClientId = randomUUID();
kv.addFederatedCredential({
  clientId: wiClientId, issuer, subject: `system:serviceaccount:${ns}:app`, audience: AUDIENCE,
  jwks: async () => (await apiserverGet('/openid/v1/jwks')) as { keys: Record<string, unknown>[] },
}, ['get', 'list']);
// A service principal with a client secret (read-only).
const sp = { clientId: randomUUID(), secret: `CANARY-azkv-sp-${randomBytes(8).toString('hex')}` };
kv.addServicePrincipal(sp, ['get']);

const run = `e${Date.now().toString(36)}`;
await admin.setSecret(`${run}-db`, JSON.stringify({ username: 'app_user', password: CANARY_PASSWORD }));
await admin.setSecret(`${run}-api`, CANARY_TOKEN);
await admin.setSecret(`${run}-flag-a`, 'on', { tags: { app: run } });
await admin.setSecret(`${run}-flag-b`, 'off', { tags: { app: run } });

const WI = `SecretStore/${ns}/azure-wi`;
const SP = `SecretStore/${ns}/azure-sp`;
const TOKEN_PATH = '/var/run/secrets/azure/tokens/azure-identity-token';

function config(overrides: Partial<AgentConfig> = {}): AgentConfig {
  return {
    version: 1,
    mode: 'init-only',
    pod: { namespace: ns, name: 'app-0', serviceAccountName: 'app' },
    outputDir: '/var/run/esi/secrets',
    fileMode: 0o440,
    refreshSeconds: 60,
    port: 0,
    stores: {
      [WI]: {
        kind: 'SecretStore', name: 'azure-wi', tokenPath: TOKEN_PATH, tokenAudience: AUDIENCE,
        provider: { azurekv: { vaultUrl: kv.vaultUrl, tenantId: kv.tenantId, authType: 'WorkloadIdentity', identityId: wiClientId } },
      },
      [SP]: {
        kind: 'SecretStore', name: 'azure-sp', credentialsDir: '/var/run/esi/credentials',
        provider: {
          azurekv: {
            vaultUrl: kv.vaultUrl, tenantId: kv.tenantId, authType: 'ServicePrincipal',
            authSecretRef: { clientId: { name: 'azure-sp', key: 'client-id' }, clientSecret: { name: 'azure-sp', key: 'client-secret' } },
          },
        },
      },
    },
    secrets: [
      { name: 'db', store: WI, data: [], dataFrom: [{ extract: { key: `${run}-db` } }] },
      { name: 'flags', store: WI, data: [], dataFrom: [{ find: { tags: { app: run } } }] },
      { name: 'api', store: SP, data: [{ secretKey: 'token', remoteRef: { key: `secret/${run}-api` } }], dataFrom: [] },
    ],
    templates: [{ file: 'app.conf', template: 'url=postgres://{{db.username}}:{{db.password}}@db/app\ntoken={{api.token}}\n' }],
    ...overrides,
  };
}

/** A temp root with the pod's projected token and the mounted SP credentials, as the
 *  kubelet would lay them out from the webhook's volumes. */
async function podRoot(tt: Parameters<typeof tempRoot>[0], sa = 'app'): Promise<{ root: string; token: string }> {
  const root = await tempRoot(tt);
  const token = await serviceAccountToken(cp.kc, ns, sa, [AUDIENCE]);
  await mkdir(join(root, 'var/run/secrets/azure/tokens'), { recursive: true });
  await writeFile(join(root, TOKEN_PATH), `${token}\n`);
  await mkdir(join(root, 'var/run/esi/credentials/azure-sp'), { recursive: true });
  await writeFile(join(root, 'var/run/esi/credentials/azure-sp/client-id'), sp.clientId);
  await writeFile(join(root, 'var/run/esi/credentials/azure-sp/client-secret'), sp.secret);
  return { root, token };
}

const out = (root: string, rel: string) => readFile(join(root, 'var/run/esi/secrets', rel), 'utf8');

function assertClean(tt: Parameters<typeof tempRoot>[0], text: string, where: string, extra: string[] = []) {
  for (const c of [CANARY_PASSWORD, CANARY_TOKEN, sp.secret, ...extra]) tt.notOk(text.includes(c), `${where} hold no secret value or credential`);
}

t.test(`agent + azurekv (${label}): workload identity and service principal, init-only`, async (tt) => {
  const { root, token } = await podRoot(tt);
  const { logger, text } = captureLogger();
  const before = kv.tokenRequests.length;
  tt.equal(await runAgent({ config: config(), root, logger }), 0, 'exit code 0');
  tt.equal(await out(root, 'db/password'), CANARY_PASSWORD);
  tt.equal(await out(root, 'db/username'), 'app_user');
  tt.equal(await out(root, 'api/token'), CANARY_TOKEN, 'the SP store, key with ESO\'s secret/ prefix');
  tt.equal(await out(root, `flags/${run}-flag-a`), 'on', 'find by tags');
  tt.equal(await out(root, `flags/${run}-flag-b`), 'off');
  tt.equal(await out(root, 'app.conf'), `url=postgres://app_user:${CANARY_PASSWORD}@db/app\ntoken=${CANARY_TOKEN}\n`);
  const grants = kv.tokenRequests.slice(before);
  tt.match(grants.find((r) => r.clientId === wiClientId), { method: 'federated', granted: true, tenant: kv.tenantId },
    'the pod token was exchanged as a federated credential');
  tt.match(grants.find((r) => r.clientId === sp.clientId), { method: 'secret', granted: true });
  assertClean(tt, text(), 'logs', [token]);
});

t.test(`agent + azurekv (${label}): another service account's token is refused`, { skip: !kv.enforcesAuth && `${label} accepts any token` }, async (tt) => {
  const { root, token } = await podRoot(tt, 'intruder');
  const { logger, text } = captureLogger();
  const cfg = config({ secrets: [config().secrets[0]!], templates: [] });
  tt.equal(await runAgent({ config: cfg, root, logger }), 1, 'the agent fails');
  tt.match(text(), new RegExp(`${WI.replace(/\//g, '\\/')}.*token endpoint refused the credentials \\(invalid_client, AADSTS70021.*\\[AuthFailed\\]`));
  tt.match(kv.tokenRequests.filter((r) => r.clientId === wiClientId).at(-1), { granted: false, reason: /subject/ });
  assertClean(tt, text(), 'logs', [token]);
});

t.test(`agent + azurekv (${label}): the sidecar refreshes to a new secret version`, async (tt) => {
  const { root, token } = await podRoot(tt);
  const { logger, text } = captureLogger();
  const agent = await startAgent({ config: config({ mode: 'native-sidecar', refreshSeconds: 1 }), root, logger, host: '127.0.0.1', backoffBaseMs: 50 });
  tt.teardown(() => agent.stop());
  await agent.ready;
  tt.equal(await out(root, 'api/token'), CANARY_TOKEN);
  const rotated = `${CANARY_TOKEN}-v2`;
  await admin.setSecret(`${run}-api`, rotated);
  await until('the rotated value', async () => (await out(root, 'api/token')) === rotated, 15_000, 20);
  tt.match(await out(root, 'app.conf'), `token=${rotated}`, 'templates re-rendered');
  const metrics = await new Promise<string>((resolve, reject) => {
    import('node:http').then(({ get }) => get({ host: '127.0.0.1', port: agent.port!, path: '/metrics' }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d));
      res.on('end', () => resolve(body));
    }).on('error', reject), reject);
  });
  agent.stop();
  tt.equal(await agent.done, 0);
  assertClean(tt, text(), 'logs', [token, rotated]);
  assertClean(tt, metrics, 'metrics', [token, rotated]);
});
