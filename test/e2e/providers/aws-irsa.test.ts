// The aws provider's IRSA path (src/providers/aws/auth.ts) against moto's STS and Secrets
// Manager with IAM authentication on: a store with no `auth`, lent the controller's
// environment identity (ctx.environmentIdentity), authenticates as the role EKS's webhook
// put in the controller's environment (AWS_ROLE_ARN, with the token in
// AWS_WEB_IDENTITY_TOKEN_FILE), then assumes the store's `role` on top, as ESO does. Not lent
// (the agent, a tenant's store), the variables are never read.
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { buildCredentials } from '../../../src/providers/aws/auth.js';
import { provider } from '../../../src/providers/aws/index.js';
import { allow, startMoto, useMotoEndpoint } from '../../support/platform/backends/moto.js';
import { providerError, testContext } from '../../support/provider-context.js';

const moto = await startMoto(t);
const { region, account } = moto;
useMotoEndpoint(t, moto);
const admin = await moto.createUser('seeder', allow(['*']));
const irsaRole = await moto.createRole('esi-irsa',
  { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: { Federated: `arn:aws:iam::${account}:oidc-provider/oidc.eks.example` }, Action: 'sts:AssumeRoleWithWebIdentity' }] },
  allow(['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret', 'sts:GetCallerIdentity']));
// The store's `role` on top of the IRSA role is the AssumeRole chain the static-key and Pod
// Identity paths share (roleSteps); moto 5.2.5 refuses AssumeRole from an assumed-role
// session whatever the policies say, so that step is not played here.
await moto.enableAuth();
await new SecretsManagerClient({ region, endpoint: moto.endpoint, credentials: admin }).send(new CreateSecretCommand({ Name: 'db', SecretString: 'irsa-value-CANARY-5e2' }));

const dir = await mkdtemp(join(tmpdir(), 'esi-irsa-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const tokenFile = join(dir, 'token');
// moto reads the token's claims (issuer, subject); the signature is not checked.
const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
const TOKEN = `${b64({ alg: 'RS256', kid: 'test' })}.${b64({ iss: 'https://oidc.eks.example', sub: 'system:serviceaccount:esi-system:esi-controller', aud: ['sts.amazonaws.com'] })}.c2lnbmF0dXJl`;
await writeFile(tokenFile, TOKEN);
const saved = { role: process.env.AWS_ROLE_ARN, file: process.env.AWS_WEB_IDENTITY_TOKEN_FILE };
process.env.AWS_ROLE_ARN = irsaRole;
process.env.AWS_WEB_IDENTITY_TOKEN_FILE = tokenFile;
t.teardown(() => {
  for (const [k, v] of [['AWS_ROLE_ARN', saved.role], ['AWS_WEB_IDENTITY_TOKEN_FILE', saved.file]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

const STORE = 'ClusterSecretStore/platform';
const ctx = (spec: object, environmentIdentity?: boolean) => ({ ...testContext({ storeId: STORE, spec }), ...(environmentIdentity === undefined ? {} : { environmentIdentity }) });
/** The caller's ARN with `creds`. moto authenticates every request, but STS
 *  AssumeRoleWithWebIdentity is unsigned: the first call of the chain is let through. */
async function identity(creds: Awaited<ReturnType<typeof buildCredentials>>): Promise<string | undefined> {
  await moto.allowUnauthenticated(1);
  const sts = new STSClient({ region, endpoint: moto.endpoint, credentials: creds.provider });
  try {
    return (await sts.send(new GetCallerIdentityCommand({}))).Arn;
  } finally {
    sts.destroy();
  }
}

t.test('lent, no role in the store: the IRSA role, read from the environment', async (t) => {
  const spec = { service: 'SecretsManager', region };
  const creds = await buildCredentials(ctx(spec, true), spec as never);
  t.teardown(() => creds.close());
  t.match(await identity(creds), /assumed-role\/esi-irsa\//, 'the credentials are the IRSA role\'s');
  const client = await provider.newClient(ctx(spec, true));
  t.teardown(() => client.close());
  await moto.allowUnauthenticated(1);
  t.equal(Buffer.from(await client.getSecret({ key: 'db' })).toString('utf8'), 'irsa-value-CANARY-5e2', 'the store reads with them');
});

t.test('not lent: the environment is never read', async (t) => {
  const spec = { service: 'SecretsManager', region };
  t.match(await providerError(buildCredentials(ctx(spec), spec as never)), { code: 'InvalidSpec', message: /aws\.role is required/ }, 'a store with no role and no lent identity is refused before any call');
});

t.test('an unreadable token file is named, with no token in the message', async (t) => {
  process.env.AWS_WEB_IDENTITY_TOKEN_FILE = join(dir, 'missing');
  t.teardown(() => { process.env.AWS_WEB_IDENTITY_TOKEN_FILE = tokenFile; });
  const spec = { service: 'SecretsManager', region };
  const creds = await buildCredentials(ctx(spec, true), spec as never);
  t.teardown(() => creds.close());
  const err = await providerError(() => creds.provider());
  t.match(err, { code: 'AuthFailed', message: /IRSA: the web identity token file .*missing cannot be read \(ENOENT\)/ });
  t.notMatch(err.message, TOKEN.split('.')[1]!, 'the token is not in the message');
});
