// The `aws` provider against moto's server (AWS Secrets Manager, SSM Parameter Store, STS
// and IAM): the conformance suite for both services with moto's IAM authentication on
// (the store's principal holds exactly the least-privilege policy of
// docs/providers/aws.md), plus ESO semantics the suite does not cover, web identity,
// role chaining, access denial, deadlines, and the static checks.
import {
  CreateSecretCommand,
  DescribeSecretCommand,
  GetSecretValueCommand,
  PutSecretValueCommand,
  SecretsManagerClient,
  TagResourceCommand,
} from '@aws-sdk/client-secrets-manager';
import { GetParameterCommand, ListTagsForResourceCommand, PutParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import { createServer, type Socket } from 'node:net';
import t from 'tap';
import { endpointFromEnv, validateSpec } from '../../../src/providers/aws/spec.js';
import { provider } from '../../../src/providers/aws/index.js';
import { loadProvider } from '../../../src/providers/registry.js';
import { ProviderError, type SecretsClient } from '../../../src/providers/types.js';
import { allow, startMoto, type AccessKey, useMotoEndpoint } from '../../support/platform/backends/moto.js';
import { freePort } from '../../support/platform/processes.js';
import { runConformance } from '../../support/conformance.js';
import { testContext } from '../../support/provider-context.js';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const CANARY = 'aws-canary-7d41';

/** The least-privilege policies of docs/providers/aws.md (read + PushSecret). */
export const SECRETS_MANAGER_ACTIONS = [
  'secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret', 'secretsmanager:ListSecrets',
  'secretsmanager:BatchGetSecretValue', 'secretsmanager:CreateSecret', 'secretsmanager:PutSecretValue',
  'secretsmanager:TagResource', 'secretsmanager:DeleteSecret', 'secretsmanager:RestoreSecret',
];
export const PARAMETER_STORE_ACTIONS = [
  'ssm:GetParameter', 'ssm:GetParameters', 'ssm:GetParametersByPath', 'ssm:DescribeParameters',
  'ssm:ListTagsForResource', 'ssm:PutParameter', 'ssm:AddTagsToResource', 'ssm:DeleteParameter',
];

async function caught(p: Promise<unknown>): Promise<unknown> {
  return p.then(() => undefined, (err: unknown) => err);
}

/** Runs `fn` with environment variables set, then restores them. */
async function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const apply = (v: Record<string, string | undefined>) => {
    for (const [k, val] of Object.entries(v)) {
      if (val === undefined) delete process.env[k];
      else process.env[k] = val;
    }
  };
  apply(vars);
  try {
    return await fn();
  } finally {
    apply(saved);
  }
}

// All setup happens before the first subtest: tap ends the root test (and runs its
// teardowns, stopping moto) once the queued subtests are done, even while the module
// is still awaiting.
const moto = await startMoto(t);
const { region, account } = moto;
t.comment(`moto ${moto.version} at ${moto.endpoint}`);
useMotoEndpoint(t, moto); // inherited by processes the test starts

// Principals, created while moto's authentication is still off.
const admin = await moto.createUser('seeder', allow(['*']));
const smUser = await moto.createUser('esi-sm', allow([...SECRETS_MANAGER_ACTIONS]));
const psUser = await moto.createUser('esi-ps', allow([...PARAMETER_STORE_ACTIONS]));
const describeOnly = await moto.createUser('esi-describe-only', allow(['secretsmanager:DescribeSecret']));
const chainBase = await moto.createUser('esi-chain-base', allow(['sts:AssumeRole']));
const webRole = await moto.createRole(
  'esi-web',
  { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: { Federated: `arn:aws:iam::${account}:oidc-provider/kubernetes.default.svc` }, Action: 'sts:AssumeRoleWithWebIdentity' }] },
  allow(['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret']),
);
const chainRole = await moto.createRole(
  'esi-chained',
  { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Principal: { AWS: `arn:aws:iam::${account}:user/esi-chain-base` }, Action: 'sts:AssumeRole' }] },
  allow(['ssm:GetParameter']),
);
await moto.enableAuth();

const seedCfg = { region, endpoint: moto.endpoint, credentials: admin };
const sm = new SecretsManagerClient(seedCfg);
const ssm = new SSMClient(seedCfg);
t.teardown(() => {
  sm.destroy();
  ssm.destroy();
});

const keyCredentials = (k: AccessKey) => ({ 'aws-creds/access-key-id': k.accessKeyId, 'aws-creds/secret-access-key': k.secretAccessKey });
const secretRef = {
  accessKeyIDSecretRef: { name: 'aws-creds', key: 'access-key-id' },
  secretAccessKeySecretRef: { name: 'aws-creds', key: 'secret-access-key' },
};

function storeClient(storeId: string, spec: Record<string, unknown>, opts: { keys?: AccessKey; token?: () => Promise<string>; timeoutMs?: number } = {}): Promise<SecretsClient> {
  return provider.newClient(testContext({
    storeId, namespace: 'team-a', spec, timeoutMs: opts.timeoutMs ?? 5000,
    ...(opts.keys ? { credentials: keyCredentials(opts.keys) } : {}),
    ...(opts.token ? { token: opts.token } : {}),
  }));
}

async function unreachable(storeId: string, spec: Record<string, unknown>, keys: AccessKey): Promise<SecretsClient> {
  const closed = `http://127.0.0.1:${await freePort()}`;
  return withEnv({ AWS_ENDPOINT_URL: closed }, () => storeClient(storeId, spec, { keys, timeoutMs: 3000 }));
}

const smSpec = { service: 'SecretsManager', region, auth: { secretRef } };
const psSpec = { service: 'ParameterStore', region, auth: { secretRef } };
const SM_STORE = 'SecretStore/team-a/aws-sm';
const PS_STORE = 'SecretStore/team-a/aws-ps';

t.test('static checks of spec.provider.aws', async (tt) => {
  const ok = { service: 'SecretsManager', region: 'eu-central-1', auth: { secretRef: {
    accessKeyIDSecretRef: { name: 'aws', key: 'id' }, secretAccessKeySecretRef: { name: 'aws', key: 'secret' },
  } } };
  tt.same(validateSpec(ok), []);
  tt.same(validateSpec({ service: 'ParameterStore', region: 'us-east-1', role: 'arn:aws:iam::123456789012:role/app' }), [], 'web identity with a role');
  tt.match(validateSpec({ service: 'SecretsManager', region: 'us-east-1', auth: { jwt: {} } }).join(), /aws\.role is required for web identity.*eks\.amazonaws\.com\/role-arn/);
  // Without any auth the controller may use its EKS Pod Identity: the role is checked when the client is built.
  tt.same(validateSpec({ service: 'SecretsManager', region: 'us-east-1' }), [], 'no auth, no role: left to the client build');
  tt.match(validateSpec({ ...ok, service: 'S3' }).join(), /aws\.service must be one of SecretsManager, ParameterStore/);
  tt.match(validateSpec({ ...ok, region: '' }).join(), /aws\.region is required/);
  tt.match(validateSpec({ ...ok, region: 'Frankfurt' }).join(), /not an AWS region name/);
  tt.match(validateSpec({ ...ok, role: 'team-b' }).join(), /aws\.role must be an IAM role ARN/);
  tt.match(validateSpec({ ...ok, additionalRoles: ['x'] }).join(), /aws\.additionalRoles\[0\] must be an IAM role ARN/);
  tt.match(validateSpec({ ...ok, auth: { secretRef: { accessKeyIDSecretRef: { name: 'aws', key: 'id' } } } }).join(),
    /aws\.auth\.secretRef\.secretAccessKeySecretRef must be an object with name and key/);
  tt.match(validateSpec({ ...ok, secretsManager: { forceDeleteWithoutRecovery: true, recoveryWindowInDays: 7 } }).join(), /cannot both be set/);
  tt.match(validateSpec({ ...ok, secretsManager: { recoveryWindowInDays: 3 } }).join(), /from 7 to 30/);
  tt.match(validateSpec({ ...ok, service: 'ParameterStore', secretsManager: {} }).join(), /applies to service SecretsManager only/);
  tt.match(validateSpec({ ...ok, auth: { ...ok.auth, jwt: {} } }).join(), /only one of secretRef and jwt/);
  const err = await caught(provider.newClient(testContext({ storeId: 'SecretStore/ns/aws', spec: { service: 'SecretsManager' } })));
  tt.ok(err instanceof ProviderError && err.code === 'InvalidSpec', 'newClient refuses an invalid spec');
  tt.equal(await loadProvider('aws'), provider, 'the registry loads the aws provider');
});

t.test('endpoint overrides: ESO variables, then the SDK service and global variables', async (tt) => {
  tt.equal(endpointFromEnv('secretsmanager', {}), undefined);
  tt.equal(endpointFromEnv('secretsmanager', { AWS_ENDPOINT_URL: 'http://all' }), 'http://all');
  tt.equal(endpointFromEnv('secretsmanager', { AWS_ENDPOINT_URL: 'http://all', AWS_ENDPOINT_URL_SECRETS_MANAGER: 'http://sdk' }), 'http://sdk');
  tt.equal(endpointFromEnv('secretsmanager', { AWS_ENDPOINT_URL_SECRETS_MANAGER: 'http://sdk', AWS_SECRETSMANAGER_ENDPOINT: 'http://eso' }), 'http://eso');
  tt.equal(endpointFromEnv('ssm', { AWS_SSM_ENDPOINT: 'http://eso-ssm', AWS_ENDPOINT_URL_SSM: 'http://sdk-ssm' }), 'http://eso-ssm');
  tt.equal(endpointFromEnv('sts', { AWS_ENDPOINT_URL_STS: 'http://sdk-sts', AWS_ENDPOINT_URL: 'http://all' }), 'http://sdk-sts');
});


t.test('conformance: Secrets Manager', async (tt) => {
  await runConformance(tt, {
    name: `aws SecretsManager (moto ${moto.version})`,
    provider,
    storeId: SM_STORE,
    client: () => storeClient(SM_STORE, smSpec, { keys: smUser }),
    badAuthClient: () => storeClient(SM_STORE, smSpec, { keys: { ...smUser, secretAccessKey: 'wrong-secret-key' } }),
    unreachableClient: () => unreachable(SM_STORE, smSpec, smUser),
    key: (base) => `esi-conf/${base}`,
    pathPrefix: 'esi-conf/',
    seed: async (key, value, opts) => {
      const Tags = Object.entries(opts?.tags ?? {}).map(([Key, Value]) => ({ Key, Value }));
      await sm.send(new CreateSecretCommand({ Name: key, SecretString: value, ...(Tags.length ? { Tags } : {}) }));
    },
    seedVersions: async (key, first, second) => {
      const a = await sm.send(new CreateSecretCommand({ Name: key, SecretString: first }));
      const b = await sm.send(new PutSecretValueCommand({ SecretId: key, SecretString: second }));
      return [`uuid/${a.VersionId}`, `uuid/${b.VersionId}`];
    },
  });
});

t.test('conformance: Parameter Store', async (tt) => {
  await runConformance(tt, {
    name: `aws ParameterStore (moto ${moto.version})`,
    provider,
    storeId: PS_STORE,
    client: () => storeClient(PS_STORE, psSpec, { keys: psUser }),
    badAuthClient: () => storeClient(PS_STORE, psSpec, { keys: { accessKeyId: 'AKIAUNKNOWN000000000', secretAccessKey: 'x' } }),
    unreachableClient: () => unreachable(PS_STORE, psSpec, psUser),
    key: (base) => `/esi-conf/${base}`,
    pathPrefix: '/esi-conf/',
    seed: async (key, value, opts) => {
      const Tags = Object.entries(opts?.tags ?? {}).map(([Key, Value]) => ({ Key, Value }));
      await ssm.send(new PutParameterCommand({ Name: key, Value: value, Type: 'SecureString', ...(Tags.length ? { Tags } : {}) }));
    },
    seedVersions: async (key, first, second) => {
      const a = await ssm.send(new PutParameterCommand({ Name: key, Value: first, Type: 'SecureString' }));
      const b = await ssm.send(new PutParameterCommand({ Name: key, Value: second, Type: 'SecureString', Overwrite: true }));
      return [String(a.Version), String(b.Version)];
    },
  });
});

const run = `t${Date.now().toString(36)}`;

t.test('Secrets Manager: staging labels, binary values, tags, prefix, find keys', async (tt) => {
  const c = await storeClient(SM_STORE, smSpec, { keys: smUser });
  tt.teardown(() => c.close());
  const key = `${run}/rotated`;
  await sm.send(new CreateSecretCommand({ Name: key, SecretString: 'old', Tags: [{ Key: 'team', Value: 'a' }] }));
  await sm.send(new PutSecretValueCommand({ SecretId: key, SecretString: 'new' }));
  tt.equal(text(await c.getSecret({ key, version: 'AWSPREVIOUS' })), 'old', 'version = staging label');
  tt.equal(text(await c.getSecret({ key, version: 'AWSCURRENT' })), 'new');
  tt.equal((await caught(c.getSecret({ key, version: 'uuid/00000000-0000-0000-0000-00000000dead' })) as ProviderError).code, 'NotFound');
  tt.same(JSON.parse(text(await c.getSecret({ key, metadataPolicy: 'Fetch' }))), { team: 'a' }, 'metadataPolicy Fetch reads the tags');
  tt.equal(text(await c.getSecret({ key, metadataPolicy: 'Fetch', property: 'team' })), 'a');

  const bin = Buffer.from([0xde, 0xad, 0x00, 0xbe, 0xef]);
  await sm.send(new CreateSecretCommand({ Name: `${run}/binary`, SecretBinary: bin }));
  tt.same(Buffer.from(await c.getSecret({ key: `${run}/binary` })), bin, 'SecretBinary is returned as bytes');

  const prefixed = await storeClient(SM_STORE, { ...smSpec, prefix: `${run}/` }, { keys: smUser });
  tt.teardown(() => prefixed.close());
  tt.equal(text(await prefixed.getSecret({ key: 'rotated' })), 'new', 'the prefix is prepended to keys');
  const found = await prefixed.getAllSecrets({ name: { regexp: '^(rot|bin)' } });
  tt.same(Object.keys(found).sort(), ['binary', 'rotated'], 'find keys are relative to the prefix');
  tt.same(Object.keys(await prefixed.getAllSecrets({ tags: { team: 'a' } })), ['rotated'], 'find by tags stays under the prefix');
  const err = await caught(c.getAllSecrets({}));
  tt.equal((err as ProviderError).code, 'InvalidSpec', 'an empty find is refused');
});

t.test('Secrets Manager: PushSecret ownership, properties, deletion and restore', async (tt) => {
  const c = await storeClient(SM_STORE, smSpec, { keys: smUser });
  tt.teardown(() => c.close());
  const remoteKey = `${run}/pushed-json`;
  await c.pushSecret(Buffer.from('app'), { remoteKey, property: 'db.user' });
  await c.pushSecret(Buffer.from(`${CANARY}-pw`), { remoteKey, property: 'db.password' });
  tt.same(JSON.parse(text(await c.getSecret({ key: remoteKey }))), { db: { user: 'app', password: `${CANARY}-pw` } }, 'properties merge into one JSON object');
  const d = await sm.send(new DescribeSecretCommand({ SecretId: remoteKey }));
  tt.same(d.Tags, [{ Key: 'managed-by', Value: 'external-secrets' }], 'created with the managed-by tag ESO uses');
  const versions = Object.keys(d.VersionIdsToStages ?? {}).length;
  await c.pushSecret(Buffer.from(`${CANARY}-pw`), { remoteKey, property: 'db.password' });
  const after = await sm.send(new DescribeSecretCommand({ SecretId: remoteKey }));
  tt.equal(Object.keys(after.VersionIdsToStages ?? {}).length, versions, 'an unchanged value writes no new version');
  tt.equal(await c.secretExists({ remoteKey, property: 'db.user' }), true);
  await c.deleteSecret({ remoteKey, property: 'db.user' });
  tt.equal(await c.secretExists({ remoteKey, property: 'db.user' }), false, 'deleting a property keeps the rest');
  tt.equal(text(await c.getSecret({ key: remoteKey, property: 'db.password' })), `${CANARY}-pw`);
  await c.deleteSecret({ remoteKey, property: 'db.password' });
  tt.equal(await c.secretExists({ remoteKey }), false, 'deleting the last property deletes the secret');

  // Pushing to a secret scheduled for deletion restores it.
  await c.pushSecret(Buffer.from('back'), { remoteKey });
  tt.equal(text(await c.getSecret({ key: remoteKey })), 'back');
  tt.notOk((await sm.send(new DescribeSecretCommand({ SecretId: remoteKey }))).DeletedDate, 'restored');

  const binary = Buffer.from([0xff, 0x00, 0x01]);
  await c.pushSecret(binary, { remoteKey: `${run}/pushed-binary` });
  tt.same(Buffer.from((await sm.send(new GetSecretValueCommand({ SecretId: `${run}/pushed-binary` }))).SecretBinary!), binary, 'non-UTF-8 is pushed as SecretBinary');

  // A secret someone else created is neither overwritten nor deleted.
  const foreign = `${run}/foreign`;
  await sm.send(new CreateSecretCommand({ Name: foreign, SecretString: 'theirs' }));
  const err = await caught(c.pushSecret(Buffer.from('mine'), { remoteKey: foreign }));
  tt.ok(err instanceof ProviderError && err.code === 'Forbidden', 'refuses to overwrite an unmanaged secret');
  tt.match((err as Error).message, /managed-by=external-secrets/);
  await c.deleteSecret({ remoteKey: foreign });
  tt.equal(text(await c.getSecret({ key: foreign })), 'theirs', 'deleting an unmanaged secret is a no-op');
  await sm.send(new TagResourceCommand({ SecretId: foreign, Tags: [{ Key: 'managed-by', Value: 'external-secrets' }] }));
  await c.pushSecret(Buffer.from('mine'), { remoteKey: foreign });
  tt.equal(text(await c.getSecret({ key: foreign })), 'mine', 'once tagged, PushSecret owns it');

  const forced = await storeClient(SM_STORE, { ...smSpec, secretsManager: { forceDeleteWithoutRecovery: true } }, { keys: smUser });
  tt.teardown(() => forced.close());
  await forced.deleteSecret({ remoteKey: foreign });
  const gone = await caught(sm.send(new DescribeSecretCommand({ SecretId: foreign })));
  tt.equal((gone as Error).name, 'ResourceNotFoundException', 'forceDeleteWithoutRecovery deletes at once');
});

t.test('Parameter Store: versions, SecureString push, ownership, text only', async (tt) => {
  const c = await storeClient(PS_STORE, psSpec, { keys: psUser });
  tt.teardown(() => c.close());
  const remoteKey = `/${run}/pushed`;
  await c.pushSecret(Buffer.from(`${CANARY}-param`), { remoteKey });
  const p = await ssm.send(new GetParameterCommand({ Name: remoteKey, WithDecryption: true }));
  tt.equal(p.Parameter?.Type, 'SecureString', 'pushed as SecureString');
  const tags = await ssm.send(new ListTagsForResourceCommand({ ResourceType: 'Parameter', ResourceId: remoteKey }));
  tt.same(tags.TagList, [{ Key: 'managed-by', Value: 'external-secrets' }]);
  await c.pushSecret(Buffer.from(`${CANARY}-param`), { remoteKey });
  tt.equal((await ssm.send(new GetParameterCommand({ Name: remoteKey }))).Parameter?.Version, 1, 'an unchanged value writes no new version');
  await c.pushSecret(Buffer.from('second'), { remoteKey });
  tt.equal(text(await c.getSecret({ key: remoteKey, version: '1' })), `${CANARY}-param`, 'version = name:version');
  tt.equal(text(await c.getSecret({ key: remoteKey })), 'second');
  const notJson = await caught(c.pushSecret(Buffer.from('x'), { remoteKey, property: 'p' }));
  tt.ok(notJson instanceof ProviderError && /not JSON/.test(notJson.message), 'a property cannot be set in a non-JSON value');
  tt.same(JSON.parse(text(await c.getSecret({ key: remoteKey, metadataPolicy: 'Fetch' }))), { 'managed-by': 'external-secrets' });

  const err = await caught(c.pushSecret(Buffer.from([0xff, 0xfe]), { remoteKey: `/${run}/binary` }));
  tt.ok(err instanceof ProviderError && err.code === 'Unsupported', 'binary values are refused with a reason');

  const foreign = `/${run}/foreign`;
  await ssm.send(new PutParameterCommand({ Name: foreign, Value: 'theirs', Type: 'String' }));
  const refused = await caught(c.pushSecret(Buffer.from('mine'), { remoteKey: foreign }));
  tt.ok(refused instanceof ProviderError && refused.code === 'Forbidden', 'refuses to overwrite an unmanaged parameter');
  await c.deleteSecret({ remoteKey: foreign });
  tt.equal(text(await c.getSecret({ key: foreign })), 'theirs', 'deleting an unmanaged parameter is a no-op');

  const prefixed = await storeClient(PS_STORE, { ...psSpec, prefix: `/${run}` }, { keys: psUser });
  tt.teardown(() => prefixed.close());
  tt.equal(text(await prefixed.getSecret({ key: '/foreign' })), 'theirs', 'the prefix is prepended to names');
  tt.same(Object.keys(await prefixed.getAllSecrets({ path: '/' })).sort(), ['/foreign', '/pushed'], 'find keys are relative to the prefix');
});

t.test('access denied and rejected keys are told apart', async (tt) => {
  await sm.send(new CreateSecretCommand({ Name: `${run}/denied`, SecretString: `${CANARY}-denied` }));
  const limited = await storeClient(SM_STORE, smSpec, { keys: describeOnly });
  tt.teardown(() => limited.close());
  const denied = await caught(limited.getSecret({ key: `${run}/denied` }));
  tt.ok(denied instanceof ProviderError && denied.code === 'Forbidden', `Forbidden (${(denied as Error).message})`);
  tt.match((denied as Error).message, /secretsmanager:GetSecretValue/, 'the message names the denied action');
  tt.notMatch((denied as Error).message, CANARY);

  const unknownKey = await storeClient(SM_STORE, smSpec, { keys: { accessKeyId: 'AKIANOSUCHKEY0000000', secretAccessKey: 'x' } });
  const e1 = await caught(unknownKey.getSecret({ key: `${run}/denied` }));
  tt.ok(e1 instanceof ProviderError && e1.code === 'AuthFailed', `unknown key id: AuthFailed (${(e1 as Error).message})`);
  await tt.rejects(unknownKey.validate(), { code: 'AuthFailed' }, 'validate() reports rejected keys');
  await unknownKey.close();
  const good = await storeClient(SM_STORE, smSpec, { keys: smUser });
  await good.validate();
  await good.close();
  tt.pass('validate() passes with working keys');
  const missing = await provider.newClient(testContext({ storeId: SM_STORE, spec: smSpec }));
  const e2 = await caught(missing.getSecret({ key: 'x' }));
  tt.ok(e2 instanceof ProviderError && /aws-creds\/access-key-id is not mounted/.test(e2.message), 'a missing credential file is named');
});

t.test('web identity: the pod token is exchanged for the store role, whose policy applies', async (tt) => {
  await sm.send(new CreateSecretCommand({ Name: `${run}/web`, SecretString: `${CANARY}-web` }));
  const audiences: (string | undefined)[] = [];
  const token = 'eyJhbGciOiJSUzI1NiIsImtpZCI6InRlc3QifQ.eyJpc3MiOiJodHRwczovL2t1YmVybmV0ZXMuZGVmYXVsdC5zdmMiLCJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6dGVhbS1hOmFwcCIsImF1ZCI6WyJzdHMuYW1hem9uYXdzLmNvbSJdfQ.c2lnbmF0dXJl';
  const c = await provider.newClient({
    ...testContext({ storeId: SM_STORE, namespace: 'team-a', spec: { service: 'SecretsManager', region, role: webRole, auth: { jwt: { serviceAccountRef: { name: 'app' } } } } }),
    serviceAccountToken: async (aud?: string) => {
      audiences.push(aud);
      return token;
    },
  });
  tt.teardown(() => c.close());
  // moto authenticates every request, but STS AssumeRoleWithWebIdentity is unsigned.
  await moto.allowUnauthenticated(1);
  tt.equal(text(await c.getSecret({ key: `${run}/web` })), `${CANARY}-web`, 'read with the role\'s temporary credentials');
  tt.same(audiences, ['sts.amazonaws.com'], 'the token is requested for the STS audience');
  const denied = await caught(c.getAllSecrets({ name: { regexp: run } }));
  tt.ok(denied instanceof ProviderError && denied.code === 'Forbidden', 'the role policy (no ListSecrets) is enforced');
  await c.validate();
  tt.equal(audiences.length, 1, 'the temporary credentials are cached');

  const noRole = await caught(provider.newClient(testContext({ storeId: SM_STORE, spec: { service: 'SecretsManager', region } })));
  tt.ok(noRole instanceof ProviderError && noRole.code === 'InvalidSpec', 'web identity without a role is refused');
  tt.match((noRole as Error).message, /aws\.role is required/);
});

t.test('role chaining: static keys, then sts:AssumeRole of the store role', async (tt) => {
  await ssm.send(new PutParameterCommand({ Name: `/${run}/chained`, Value: `${CANARY}-chain`, Type: 'SecureString' }));
  const spec = { service: 'ParameterStore', region, role: chainRole, auth: { secretRef } };
  const c = await storeClient(PS_STORE, spec, { keys: chainBase });
  tt.teardown(() => c.close());
  tt.equal(text(await c.getSecret({ key: `/${run}/chained` })), `${CANARY}-chain`, 'read as the assumed role');
  const base = await storeClient(PS_STORE, { ...spec, role: undefined }, { keys: chainBase });
  tt.equal((await caught(base.getSecret({ key: `/${run}/chained` })) as ProviderError).code, 'Forbidden', 'the base user alone may not read');
  await base.close();
  const untrusted = await storeClient(PS_STORE, spec, { keys: psUser });
  const e = await caught(untrusted.getSecret({ key: `/${run}/chained` }));
  tt.ok(e instanceof ProviderError && e.code === 'Forbidden', `a principal the trust policy does not name is refused (${(e as Error).message})`);
  tt.match((e as Error).message, /sts:AssumeRole of arn:aws:iam::123456789012:role\/esi-chained/);
  await untrusted.close();
});

t.test('an endpoint that accepts and never answers: Timeout within the deadline', async (tt) => {
  const sockets: Socket[] = [];
  const server = createServer((s) => sockets.push(s));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  tt.teardown(() => new Promise<void>((r) => {
    for (const s of sockets) s.destroy();
    server.close(() => r());
  }));
  const port = (server.address() as { port: number }).port;
  const c = await withEnv({ AWS_ENDPOINT_URL: `http://127.0.0.1:${port}` }, () => storeClient(SM_STORE, smSpec, { keys: smUser, timeoutMs: 1000 }));
  const started = Date.now();
  const err = await caught(c.getSecret({ key: 'hangs' }));
  tt.ok(err instanceof ProviderError && err.code === 'Timeout', `Timeout (${(err as Error).message})`);
  tt.ok(Date.now() - started < 5000, `gave up after ${Date.now() - started} ms`);
  await c.close();
});
