// End to end: the agent (in-process, init-only, temp root) renders files from moto's AWS
// Secrets Manager and SSM Parameter Store through the aws provider loaded by the lazy
// registry. moto's IAM authentication is on: one store authenticates with static keys
// mounted in `credentialsDir`; another exchanges the pod's projected token (a real
// TokenRequest token from the local apiserver, audience sts.amazonaws.com, at the store's
// `tokenPath`) for a role with STS AssumeRoleWithWebIdentity. moto does not verify the
// token's signature against an OIDC provider (real STS does); the role's own policy is
// enforced. The endpoint reaches the agent the way an operator sets it: an environment
// variable. The agent's whole log is scanned for values, keys and tokens.
// Run: `npx tap <this file>`.
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { CoreV1Api } from '@kubernetes/client-node';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import t from 'tap';
import { runAgent } from '../../../injector/agent.js';
import type { AgentConfig, AgentSecret, AgentStore } from '../../../src/agent-config/types.js';
import { createNamespace, serviceAccountToken } from '../../support/kube.js';
import { captureLogger, tempRoot } from '../../support/fixtures/agent.js';
import { allow, startMoto, useMotoEndpoint } from '../../support/platform/backends/moto.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const PASSWORD = 'CANARY-aws-pw-61c0d2';
const API_TOKEN = 'CANARY-aws-api-9e4f17';
const TOKEN_PATH = '/var/run/secrets/esi/aws/token';
const CRED_DIR = '/var/run/secrets/esi/credentials/aws-static';

// All setup before the first subtest (tap ends the root test, and stops moto, once the
// queued subtests are done).
const moto = await startMoto(t);
useMotoEndpoint(t, moto); // inherited by processes the test starts
const cp = await useControlPlane(t);
const ns = await createNamespace(cp.kc, 'aws-e2e', t);
await cp.kc.makeApiClient(CoreV1Api).createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'app' } } });

const seeder = await moto.createUser('seeder', allow(['*']));
const reader = await moto.createUser('app-reader', allow([
  'secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret', 'secretsmanager:ListSecrets', 'secretsmanager:BatchGetSecretValue',
]));
const role = await moto.createRole(
  'app-web-identity',
  { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: { Federated: `arn:aws:iam::${moto.account}:oidc-provider/kubernetes.default.svc` }, Action: 'sts:AssumeRoleWithWebIdentity' }] },
  allow(['ssm:GetParameter', 'ssm:GetParametersByPath']),
);
await moto.enableAuth();

const seed = { region: moto.region, endpoint: moto.endpoint, credentials: seeder };
const sm = new SecretsManagerClient(seed);
const ssm = new SSMClient(seed);
t.teardown(() => {
  sm.destroy();
  ssm.destroy();
});
await sm.send(new CreateSecretCommand({ Name: 'app/db', SecretString: JSON.stringify({ username: 'app_user', password: PASSWORD }) }));
await sm.send(new CreateSecretCommand({ Name: 'app/api', SecretString: API_TOKEN }));
await ssm.send(new PutParameterCommand({ Name: '/app/config/url', Value: 'https://api.example', Type: 'String' }));
await ssm.send(new PutParameterCommand({ Name: '/app/config/token', Value: API_TOKEN, Type: 'SecureString' }));

const STATIC = `SecretStore/${ns}/aws-sm`;
const WEB = `SecretStore/${ns}/aws-ps`;

function config(stores: Record<string, AgentStore>, secrets: AgentSecret[], templates: AgentConfig['templates'] = []): AgentConfig {
  return {
    version: 1, mode: 'init-only', pod: { namespace: ns, name: 'app-0', serviceAccountName: 'app' },
    outputDir: '/var/run/esi/secrets', fileMode: 0o440, refreshSeconds: 60, port: 0, stores, secrets, templates,
  };
}

const staticStore: AgentStore = {
  kind: 'SecretStore', name: 'aws-sm', credentialsDir: CRED_DIR,
  provider: { aws: { service: 'SecretsManager', region: moto.region, auth: { secretRef: {
    accessKeyIDSecretRef: { name: 'aws-creds', key: 'access-key-id' },
    secretAccessKeySecretRef: { name: 'aws-creds', key: 'secret-access-key' },
  } } } },
};
const webStore: AgentStore = {
  kind: 'SecretStore', name: 'aws-ps', tokenPath: TOKEN_PATH, tokenAudience: 'sts.amazonaws.com',
  provider: { aws: { service: 'ParameterStore', region: moto.region, role, auth: { jwt: { serviceAccountRef: { name: 'app' } } } } },
};

async function place(root: string, path: string, content: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), content, { mode: 0o600 });
}

const out = (root: string, p: string) => readFile(join(root, '/var/run/esi/secrets', p), 'utf8');

t.test('static keys: Secrets Manager values, a find and a template become files', async (tt) => {
  const root = await tempRoot(tt);
  await place(root, join(CRED_DIR, 'aws-creds', 'access-key-id'), reader.accessKeyId);
  await place(root, join(CRED_DIR, 'aws-creds', 'secret-access-key'), reader.secretAccessKey);
  const log = captureLogger();
  const cfg = config({ [STATIC]: staticStore }, [
    { name: 'db', store: STATIC, data: [], dataFrom: [{ extract: { key: 'app/db' } }] },
    { name: 'api', store: STATIC, data: [{ secretKey: 'token', remoteRef: { key: 'app/api' } }], dataFrom: [] },
    { name: 'all', store: STATIC, data: [], dataFrom: [{ find: { path: 'app/' }, rewrite: [{ regexp: { source: '^app/', target: '' } }] }] },
  ], [{ file: 'app.conf', template: 'url=postgres://{{db.username}}:{{db.password}}@db/app\ntoken={{api.token}}\n' }]);

  tt.equal(await runAgent({ config: cfg, root, logger: log.logger }), 0, 'exit 0');
  tt.equal(await out(root, 'db/password'), PASSWORD);
  tt.equal(await out(root, 'db/username'), 'app_user');
  tt.equal(await out(root, 'api/token'), API_TOKEN);
  tt.equal(await out(root, 'all/api'), API_TOKEN, 'find by path: one file per secret');
  tt.equal(await out(root, 'all/db'), JSON.stringify({ username: 'app_user', password: PASSWORD }));
  tt.equal(await out(root, 'app.conf'), `url=postgres://app_user:${PASSWORD}@db/app\ntoken=${API_TOKEN}\n`);
  tt.equal((await stat(join(root, '/var/run/esi/secrets/db/password'))).mode & 0o777, 0o440);
  const text = log.text();
  for (const s of [PASSWORD, API_TOKEN, reader.secretAccessKey]) tt.notOk(text.includes(s), 'the log holds no value or key');
});

t.test('web identity: the pod token is exchanged for the store role', async (tt) => {
  const root = await tempRoot(tt);
  const podToken = await serviceAccountToken(cp.kc, ns, 'app', ['sts.amazonaws.com']);
  await place(root, TOKEN_PATH, podToken);
  const log = captureLogger();
  const cfg = config({ [WEB]: webStore }, [
    { name: 'cfg', store: WEB, data: [{ secretKey: 'token', remoteRef: { key: '/app/config/token' } }], dataFrom: [] },
    { name: 'tree', store: WEB, data: [], dataFrom: [{ find: { path: '/app/config/' }, rewrite: [{ regexp: { source: '^/app/config/', target: '' } }] }] },
  ]);
  // moto authenticates every request; the STS web-identity call is unsigned by design.
  await moto.allowUnauthenticated(1);
  tt.equal(await runAgent({ config: cfg, root, logger: log.logger }), 0, 'exit 0');
  tt.equal(await out(root, 'cfg/token'), API_TOKEN);
  tt.equal(await out(root, 'tree/url'), 'https://api.example');
  tt.equal(await out(root, 'tree/token'), API_TOKEN);
  const text = log.text();
  for (const s of [API_TOKEN, podToken]) tt.notOk(text.includes(s), 'the log holds no value or token');
});

t.test('a denied read fails the init container with a value-free message', async (tt) => {
  const root = await tempRoot(tt);
  await place(root, TOKEN_PATH, await serviceAccountToken(cp.kc, ns, 'app', ['sts.amazonaws.com']));
  const log = captureLogger();
  // The web-identity role may read parameters, not Secrets Manager.
  const denied: AgentStore = { ...webStore, provider: { aws: { ...webStore.provider.aws!, service: 'SecretsManager' } } };
  const cfg = config({ [WEB]: denied }, [{ name: 'db', store: WEB, data: [], dataFrom: [{ extract: { key: 'app/db' } }] }]);
  await moto.allowUnauthenticated(1);
  tt.equal(await runAgent({ config: cfg, root, logger: log.logger }), 1, 'exit 1');
  const line = log.lines.find((l) => l.includes('"secret":"db"'));
  tt.ok(line, 'one line names the secret');
  tt.match(line, new RegExp(`SecretStore/${ns}/aws-ps.*app/db.*not authorized to perform: secretsmanager:GetSecretValue.*Forbidden`));
  await tt.rejects(stat(join(root, '/var/run/esi/secrets/db')), { code: 'ENOENT' }, 'nothing written');
  tt.notOk(log.text().includes(PASSWORD), 'the log holds no value');
});
