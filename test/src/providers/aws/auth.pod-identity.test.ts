// The aws provider's EKS Pod Identity path (src/providers/aws/auth.ts) without a platform:
// a local stand-in of the node's Pod Identity agent. It is used only when the caller lends
// the process's environment identity (ctx.environmentIdentity, the reconciler for a lent
// store) and the store has no `auth`; the agent (no such flag) never uses it even when the
// variables are in its environment. The controller-level test with moto is
// test/e2e/adversarial/controller-cloud-identity.test.ts.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildCredentials } from '../../../../src/providers/aws/auth.js';
import { providerError, testContext } from '../../../support/provider-context.js';

const TOKEN = 'pod-identity-token-7c1e';
const STORE = 'ClusterSecretStore/platform';
const dir = await mkdtemp(join(tmpdir(), 'esi-pod-identity-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const tokenFile = join(dir, 'eks-pod-identity-token');
await writeFile(tokenFile, TOKEN);

let answer: { status: number; body: object } = { status: 200, body: {} };
const seen: (string | undefined)[] = [];
const server = createServer((req, res) => {
  seen.push(req.headers.authorization);
  res.statusCode = answer.status;
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify(answer.body));
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
t.teardown(() => server.close());
const uri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/credentials`;

const saved = { uri: process.env.AWS_CONTAINER_CREDENTIALS_FULL_URI, file: process.env.AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE };
process.env.AWS_CONTAINER_CREDENTIALS_FULL_URI = uri;
process.env.AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE = tokenFile;
t.teardown(() => {
  for (const [k, v] of [['AWS_CONTAINER_CREDENTIALS_FULL_URI', saved.uri], ['AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE', saved.file]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

const spec = { service: 'SecretsManager', region: 'eu-central-1' };
const ctx = (environmentIdentity: boolean | undefined) => ({ ...testContext({ storeId: STORE, spec }), ...(environmentIdentity === undefined ? {} : { environmentIdentity }) });

t.test('lent: the agent\'s credentials, its token read from the file', async (t) => {
  const expiration = new Date(Date.now() + 6 * 3600_000);
  answer = { status: 200, body: { AccessKeyId: 'ASIAPODIDENTITY', SecretAccessKey: 'pod-secret', Token: 'pod-session', Expiration: expiration.toISOString(), AccountId: '123456789012' } };
  seen.length = 0;
  const creds = await buildCredentials(ctx(true), spec as never);
  t.teardown(() => creds.close());
  const got = await creds.provider();
  t.match(got, { accessKeyId: 'ASIAPODIDENTITY', secretAccessKey: 'pod-secret', sessionToken: 'pod-session' });
  t.equal(got.expiration?.getTime(), expiration.getTime(), 'the expiry is kept (refreshed before it)');
  t.same(seen, [TOKEN], 'the token file is sent as the Authorization header');
  await creds.provider();
  t.equal(seen.length, 1, 'cached until shortly before they expire');
});

t.test('refused by the agent: AuthFailed naming EKS Pod Identity, no token in the message', async (t) => {
  answer = { status: 403, body: { Code: 'AccessDeniedException', Message: 'no association' } };
  const creds = await buildCredentials(ctx(true), spec as never);
  t.teardown(() => creds.close());
  const err = await providerError(creds.provider());
  t.equal(err.code, 'AuthFailed');
  t.match(err.message, /EKS Pod Identity \(http:\/\/127\.0\.0\.1:\d+\/v1\/credentials\): .*403/);
  t.notMatch(err.message, TOKEN);
});

t.test('not lent (the agent): never the environment, even with the variables set', async (t) => {
  seen.length = 0;
  for (const lent of [undefined, false]) {
    const err = await providerError(buildCredentials(ctx(lent), spec as never));
    t.equal(err.code, 'InvalidSpec', `environmentIdentity ${String(lent)}: web identity, which needs a role`);
    t.match(err.message, /aws\.role is required for web identity/);
  }
  t.same(seen, [], 'the Pod Identity endpoint was never called');
});

t.test('a store naming auth never uses it', async (t) => {
  seen.length = 0;
  const jwt = { ...spec, role: 'arn:aws:iam::123456789012:role/app', auth: { jwt: {} } };
  const creds = await buildCredentials({ ...ctx(true), spec: jwt }, jwt as never);
  t.teardown(() => creds.close());
  // Web identity asks for a token of the named or lent ServiceAccount, not the agent.
  const err = await providerError(creds.provider());
  t.match(err.message, /no service-account token available/);
  t.same(seen, [], 'the Pod Identity endpoint was never called');
});
