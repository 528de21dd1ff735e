// The azurekv provider against a Key Vault backend (lowkey-vault when its jar is
// available, else ESI's Key Vault API stand-in; the backend's label is in every test
// name), with the local token endpoint (service principal: secret and certificate) and
// IMDS (managed identity) stand-ins. Seeding goes through @azure/keyvault-secrets with
// an admin identity, not through the provider. TLS is verified everywhere: the test CA
// is trusted through ESI_AZUREKV_CA_FILE only.
import { ClientSecretCredential } from '@azure/identity';
import { SecretClient } from '@azure/keyvault-secrets';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import t from 'tap';
import { provider, newClient, validateSpec } from '../../../src/providers/azurekv/index.js';
import { authority, vaultHostPolicy } from '../../../src/providers/azurekv/spec.js';
import { ProviderError, type SecretsClient } from '../../../src/providers/types.js';
import { freePort } from '../../support/platform/processes.js';
import { makeClientCertificate, startKeyVault, type Permission } from '../../support/platform/backends/lowkey-vault.js';
import { runConformance } from '../../support/conformance.js';
import { testContext, providerError } from '../../support/provider-context.js';

const CANARY = 'CANARY-azurekv-7f3e21';
const kv = await startKeyVault(t, { pageSize: 5 });
const name = `azurekv (${kv.label})`;

// The provider reads its operator settings from the environment of its process.
const saved = { ...process.env };
Object.assign(process.env, kv.env());
t.teardown(() => {
  for (const k of Object.keys(kv.env())) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

const admin = new SecretClient(kv.vaultUrl, new ClientSecretCredential(kv.tenantId, kv.admin.clientId, kv.admin.secret, {
  authorityHost: kv.authorityHost, disableInstanceDiscovery: true, tlsOptions: { ca: kv.caPem },
}), { disableChallengeResourceVerification: true, tlsOptions: { ca: kv.caPem } });

/** A service principal with `permissions`, and the store spec + mounted credentials for it. */
function principal(permissions: Permission[], overrides: { secret?: string } = {}) {
  const sp = { clientId: randomUUID(), secret: randomBytes(18).toString('base64url') };
  kv.addServicePrincipal(sp, permissions);
  const spec = {
    vaultUrl: kv.vaultUrl,
    tenantId: kv.tenantId,
    authType: 'ServicePrincipal',
    authSecretRef: { clientId: { name: 'azure-sp', key: 'client-id' }, clientSecret: { name: 'azure-sp', key: 'client-secret' } },
  };
  const credentials = { 'azure-sp/client-id': `${sp.clientId}\n`, 'azure-sp/client-secret': overrides.secret ?? sp.secret };
  return { sp, spec, credentials };
}

const storeId = 'SecretStore/team-a/azure';
const rw = principal(['get', 'list', 'set', 'delete', 'purge']);
const client = (spec: unknown = rw.spec, credentials: Record<string, string> = rw.credentials, timeoutMs = 10_000) =>
  provider.newClient(testContext({ storeId, spec, credentials, timeoutMs }));

const caught = providerError;

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const run = `t${Date.now().toString(36)}`;

await runConformance(t, {
  name,
  provider,
  storeId,
  client: () => client(),
  ...(kv.enforcesAuth ? { badAuthClient: () => client(rw.spec, { ...rw.credentials, 'azure-sp/client-secret': 'wrong-secret' }) } : {}),
  unreachableClient: async () => client({ ...rw.spec, vaultUrl: `https://127.0.0.1:${await freePort()}` }, rw.credentials, 5000),
  seed: async (key, value, opts) => {
    await admin.setSecret(key, value, opts?.tags ? { tags: opts.tags } : {});
  },
  seedVersions: async (key, first, second) => {
    const a = await admin.setSecret(key, first);
    const b = await admin.setSecret(key, second);
    return [a.properties.version!, b.properties.version!];
  },
  key: (base) => base.replace(/[^0-9A-Za-z-]/g, '-'),
  unsupported: {
    'find-path': 'Key Vault secret names are flat (letters, digits, dashes): there are no paths; ESO\'s azurekv has no find by path either',
    ...(kv.enforcesAuth ? {} : { 'auth-failure': `${kv.label} accepts any bearer token` }),
  },
});

t.test(`${name}: spec validation and operator settings`, async (tt) => {
  tt.same(validateSpec(rw.spec), []);
  tt.match(validateSpec({}), ['azurekv.vaultUrl is required']);
  tt.match(validateSpec({ vaultUrl: 'http://x.vault.azure.net' }).join(), /must use https/);
  tt.match(validateSpec({ vaultUrl: 'https://x.vault.azure.net/secrets' }).join(), /must not have a path/);
  tt.match(validateSpec({ vaultUrl: 'https://x.vault.azure.net', tenantId: 't' }).join(), /clientId is required.*clientSecret or clientCertificate/);
  tt.match(validateSpec({ ...rw.spec, authSecretRef: { ...rw.spec.authSecretRef, clientCertificate: { name: 'a', key: 'b' } } }).join(), /not both/);
  tt.match(validateSpec({ ...rw.spec, authType: 'Kerberos' }).join(), /authType must be one of/);
  tt.match(validateSpec({ ...rw.spec, environmentType: 'GermanCloud' }).join(), /discontinued/);
  tt.match(validateSpec({ ...rw.spec, environmentType: 'AzureStackCloud' }).join(), /customCloudConfig/);
  tt.same(validateSpec({ vaultUrl: 'https://x.vault.azure.net', authType: 'ManagedIdentity' }), []);
  tt.same(validateSpec({ vaultUrl: 'https://x.vault.azure.net', authType: 'WorkloadIdentity', tenantId: 't', identityId: 'c' }), []);

  tt.same(vaultHostPolicy('https://my.vault.azure.net', {}), { allowed: true, verifyChallengeResource: true }, 'Key Vault hosts keep the challenge check');
  tt.same(vaultHostPolicy('https://my.vault.azure.cn', {}), { allowed: true, verifyChallengeResource: true });
  tt.same(vaultHostPolicy('https://evil.example', {}), { allowed: false, verifyChallengeResource: false }, 'other hosts are refused…');
  tt.same(vaultHostPolicy('https://kv.corp.example:8443', { ESI_AZUREKV_ALLOWED_VAULT_HOSTS: 'x, *.corp.example' }),
    { allowed: true, verifyChallengeResource: false }, '…unless the operator allows them');
  tt.same(authority({ vaultUrl: '', environmentType: 'ChinaCloud' }, {}), { host: 'https://login.chinacloudapi.cn', disableInstanceDiscovery: false });
  tt.same(authority({ vaultUrl: '' }, { AZURE_AUTHORITY_HOST: 'https://sts.corp.example/' }),
    { host: 'https://sts.corp.example', disableInstanceDiscovery: true }, 'a private authority is trusted by configuration, not instance discovery');

  const refused = await caught(client({ ...rw.spec, vaultUrl: 'https://attacker.example' }));
  tt.equal(refused.code, 'InvalidSpec');
  tt.match(refused.message, /SecretStore\/team-a\/azure.*not an Azure Key Vault endpoint.*ESI_AZUREKV_ALLOWED_VAULT_HOSTS/);
});

t.test(`${name}: TLS is verified, the CA is trusted only through ESI_AZUREKV_CA_FILE`, async (tt) => {
  await admin.setSecret(`${run}-tls`, CANARY);
  const noCa = { ...process.env };
  delete noCa.ESI_AZUREKV_CA_FILE;
  const c = await newClient(testContext({ storeId, spec: rw.spec, credentials: rw.credentials }), noCa);
  const err = await caught(c.getSecret({ key: `${run}-tls` }));
  tt.equal(err.code, 'Unreachable');
  tt.match(err.message, /TLS verification of the server failed .*ESI_AZUREKV_CA_FILE/);
  tt.equal(process.env.NODE_TLS_REJECT_UNAUTHORIZED, undefined, 'verification is never switched off process-wide');
  const bad = await caught(newClient(testContext({ storeId, spec: rw.spec, credentials: rw.credentials }), { ...process.env, ESI_AZUREKV_CA_FILE: '/nonexistent/ca.pem' }));
  tt.match(bad.message, /ESI_AZUREKV_CA_FILE \(\/nonexistent\/ca.pem\) cannot be read \(ENOENT\)/);
  const ok = await client();
  tt.equal(text(await ok.getSecret({ key: `${run}-tls` })), CANARY, 'with the CA file the same read succeeds');
});

t.test(`${name}: object types, versions, metadata`, async (tt) => {
  const c = await client();
  const key = `${run}-meta`;
  const first = await admin.setSecret(key, JSON.stringify({ user: 'app', pass: CANARY }), { tags: { owner: 'team-a', conf: '{"region":"eu","tier":"gold"}' } });
  tt.equal(text(await c.getSecret({ key: `secret/${key}` })), JSON.stringify({ user: 'app', pass: CANARY }), 'ESO\'s secret/<name> prefix');
  tt.equal(text(await c.getSecret({ key, property: 'user', version: first.properties.version! })), 'app');
  for (const prefix of ['key', 'cert']) {
    const err = await caught(c.getSecret({ key: `${prefix}/${key}` }));
    tt.equal(err.code, 'Unsupported', `${prefix}/ objects are reported, not guessed`);
    tt.match(err.message, /secrets only/);
  }
  tt.equal((await caught(c.getSecret({ key: 'bad_name' }))).code, 'InvalidSpec');
  tt.equal((await caught(c.getSecret({ key, version: '0'.repeat(32) }))).code, 'NotFound');
  tt.same(JSON.parse(text(await c.getSecret({ key, metadataPolicy: 'Fetch' }))), { owner: 'team-a', conf: '{"region":"eu","tier":"gold"}' }, 'Fetch: the tags');
  tt.equal(text(await c.getSecret({ key, metadataPolicy: 'Fetch', property: 'owner' })), 'team-a');
  tt.equal(text(await c.getSecret({ key, metadataPolicy: 'Fetch', property: 'conf.tier' })), 'gold', 'a field of a JSON tag');
  tt.equal((await caught(c.getSecret({ key, metadataPolicy: 'Fetch', property: 'nope' }))).code, 'NotFound');
  const map = await c.getSecretMap({ key, metadataPolicy: 'Fetch' });
  tt.same(Object.fromEntries(Object.entries(map).map(([k, v]) => [k, text(v)])),
    { [`${key}_owner`]: 'team-a', [`${key}_conf_region`]: 'eu', [`${key}_conf_tier`]: 'gold' }, 'ESO\'s <secret>_<tag> keys');
  const err = await caught(c.getSecretMap({ key: `${run}-meta-plain-absent` }));
  tt.equal(err.code, 'NotFound');
});

t.test(`${name}: find skips disabled secrets and follows nextLink pages`, async (tt) => {
  const c = await client();
  for (let i = 0; i < 12; i++) await admin.setSecret(`${run}-page-${i}`, `v${i}`);
  await admin.setSecret(`${run}-page-off`, 'off', { enabled: false });
  const found = await c.getAllSecrets({ name: { regexp: `^${run}-page-` } });
  tt.equal(Object.keys(found).length, 12, 'twelve enabled secrets across pages of five');
  tt.notOk(`${run}-page-off` in found, 'disabled secrets are not returned');
  tt.equal((await caught(c.getAllSecrets({ path: 'a/' }))).code, 'Unsupported');
  tt.equal((await caught(c.getAllSecrets({ name: { regexp: '(' } }))).code, 'InvalidSpec');
});

t.test(`${name}: push and delete follow ESO's ownership tag and property semantics`, async (tt) => {
  const c = await client();
  const foreign = `${run}-foreign`;
  await admin.setSecret(foreign, 'not ours');
  const err = await caught(c.pushSecret(Buffer.from(CANARY), { remoteKey: foreign }));
  tt.equal(err.code, 'Forbidden');
  tt.match(err.message, /not tagged managed-by=external-secrets/);
  tt.equal((await admin.getSecret(foreign)).value, 'not ours', 'an unmanaged secret is left alone');
  tt.equal((await caught(c.deleteSecret({ remoteKey: foreign }))).code, 'Forbidden');

  const key = `${run}-props`;
  await c.pushSecret(Buffer.from('alice'), { remoteKey: key, property: 'user' });
  await c.pushSecret(Buffer.from(CANARY), { remoteKey: key, property: 'pass' });
  const stored = await admin.getSecret(key);
  tt.same(JSON.parse(stored.value!), { user: 'alice', pass: CANARY }, 'properties merge into one JSON value');
  tt.same(stored.properties.tags, { 'managed-by': 'external-secrets' });
  const versionsBefore = [];
  for await (const v of admin.listPropertiesOfSecretVersions(key)) versionsBefore.push(v);
  await c.pushSecret(Buffer.from(CANARY), { remoteKey: key, property: 'pass' });
  const versionsAfter = [];
  for await (const v of admin.listPropertiesOfSecretVersions(key)) versionsAfter.push(v);
  tt.equal(versionsAfter.length, versionsBefore.length, 'an unchanged value writes no new version');
  tt.equal(await c.secretExists({ remoteKey: key, property: 'pass' }), true);
  await c.deleteSecret({ remoteKey: key, property: 'pass' });
  tt.same(JSON.parse((await admin.getSecret(key)).value!), { user: 'alice' }, 'deleting a property keeps the others');
  tt.equal(await c.secretExists({ remoteKey: key, property: 'pass' }), false);
  await c.deleteSecret({ remoteKey: key, property: 'user' });
  tt.equal(await c.secretExists({ remoteKey: key }), false, 'the last property takes the secret with it');
  await c.pushSecret(Buffer.from('again'), { remoteKey: key });
  tt.equal(text(await c.getSecret({ key })), 'again', 'deleted secrets are purged, so the name can be pushed again');
});

t.test(`${name}: a vault with purge protection keeps deleted secrets`, { skip: kv.impl !== 'stand-in' && 'needs the stand-in\'s purge protection switch' }, async (tt) => {
  const pp = await startKeyVault(tt, { purgeProtection: true, forceStandIn: true });
  const c = await newClient(testContext({ storeId, spec: { ...rw.spec, vaultUrl: pp.vaultUrl, tenantId: pp.tenantId },
    credentials: { 'azure-sp/client-id': pp.admin.clientId, 'azure-sp/client-secret': pp.admin.secret } }), { ...process.env, ...pp.env() });
  await c.pushSecret(Buffer.from('x'), { remoteKey: 'kept' });
  await c.deleteSecret({ remoteKey: 'kept' });
  tt.equal(await c.secretExists({ remoteKey: 'kept' }), false, 'deleted (soft)');
  const err = await caught(c.pushSecret(Buffer.from('y'), { remoteKey: 'kept' }));
  tt.match(err.message, /kept by soft delete; recover or purge it/);
});

t.test(`${name}: authorization and authentication failures`, { skip: !kv.enforcesAuth && `${kv.label} accepts any token` }, async (tt) => {
  await admin.setSecret(`${run}-authz`, CANARY);
  const listOnly = principal(['list']);
  const c = await client(listOnly.spec, listOnly.credentials);
  const err = await caught(c.getSecret({ key: `${run}-authz` }));
  tt.equal(err.code, 'Forbidden', 'a 403 from the vault');
  tt.match(err.message, new RegExp(`${storeId}.*${run}-authz.*403 Forbidden/AccessDenied`));
  tt.equal((await caught(c.validate())).code, 'Forbidden', 'validate() sees missing permissions too');
  const wrong = await client(rw.spec, { ...rw.credentials, 'azure-sp/client-secret': `${CANARY}-wrong` });
  const denied = await caught(wrong.validate());
  tt.equal(denied.code, 'AuthFailed');
  tt.match(denied.message, /token endpoint refused the credentials \(invalid_client, AADSTS7000215/);
  tt.notMatch(denied.message, CANARY, 'the wrong secret is not echoed');
  const missing = await caught(client(rw.spec, {}));
  tt.match(missing.message, /credential azure-sp\/client-id is not mounted/);
});

t.test(`${name}: validate() reads no value`, async (tt) => {
  const before = kv.requests().length;
  await (await client()).validate();
  const probe = kv.requests().slice(before).filter((r) => r.status !== 401);
  if (kv.impl === 'stand-in') {
    tt.equal(probe.length, 1, 'one request besides the challenge');
    tt.match(`${probe[0]?.method} ${probe[0]?.path} ${probe[0]?.status}`, /^GET \/secrets\/esi-validate-probe\/? 404$/, 'a 404 for the probe name');
  }
  else tt.pass('lowkey-vault: request log not available');
});

t.test(`${name}: service principal with a client certificate`, { skip: !kv.enforcesAuth && `${kv.label} accepts any token` }, async (tt) => {
  const cert = await makeClientCertificate('esi-azurekv-cert');
  const clientId = randomUUID();
  kv.addServicePrincipal({ clientId, certificatePem: cert.certPem }, ['get']);
  await admin.setSecret(`${run}-cert`, CANARY);
  const spec = { vaultUrl: kv.vaultUrl, tenantId: kv.tenantId,
    authSecretRef: { clientId: { name: 'sp', key: 'id' }, clientCertificate: { name: 'sp', key: 'tls.pem' } } };
  const c = await client(spec, { 'sp/id': clientId, 'sp/tls.pem': cert.pem });
  tt.equal(text(await c.getSecret({ key: `${run}-cert` })), CANARY);
  const req = kv.tokenRequests.find((r) => r.clientId === clientId);
  tt.match(req, { endpoint: 'entra', method: 'certificate', granted: true, scope: /https:\/\/vault\.azure\.net\/\.default/ },
    'the token came from a signed client assertion checked against the certificate');
});

t.test(`${name}: managed identity (IMDS)`, { skip: !kv.enforcesAuth && `${kv.label} accepts any token` }, async (tt) => {
  const system = randomUUID();
  const userAssigned = randomUUID();
  kv.addManagedIdentity(system, ['get']);
  kv.addManagedIdentity(userAssigned, ['get']);
  await admin.setSecret(`${run}-mi`, CANARY);
  const c = await client({ vaultUrl: kv.vaultUrl, authType: 'ManagedIdentity', identityId: userAssigned }, {});
  tt.equal(text(await c.getSecret({ key: `${run}-mi` })), CANARY);
  tt.match(kv.tokenRequests.filter((r) => r.endpoint === 'imds').at(-1), { clientId: userAssigned, granted: true, scope: 'https://vault.azure.net' },
    'identityId selects the user-assigned identity at IMDS');
  const unknown = await client({ vaultUrl: kv.vaultUrl, authType: 'ManagedIdentity', identityId: randomUUID() }, {}, 5000);
  const err = await caught(unknown.getSecret({ key: `${run}-mi` }));
  tt.equal(err.code, 'AuthFailed');
  tt.match(err.message, /invalid_request/, 'IMDS said why');
});

t.test(`${name}: workload identity ids and the pod token (the full exchange is in azurekv-e2e)`, async (tt) => {
  const noIds = { ...process.env };
  delete noIds.AZURE_CLIENT_ID;
  delete noIds.AZURE_TENANT_ID;
  const wi = { vaultUrl: kv.vaultUrl, tenantId: kv.tenantId, authType: 'WorkloadIdentity' };
  const missing = await caught(newClient(testContext({ storeId, spec: wi }), noIds));
  tt.equal(missing.code, 'InvalidSpec');
  tt.match(missing.message, /needs the client id \(authSecretRef.clientId or identityId\)/);

  // The ids of the Azure workload-identity webhook's env are the fallback.
  const envClientId = randomUUID();
  const c = await newClient(testContext({ storeId, spec: { vaultUrl: kv.vaultUrl, authType: 'WorkloadIdentity' }, token: async () => 'not-a-jwt' }),
    { ...noIds, AZURE_CLIENT_ID: envClientId, AZURE_TENANT_ID: kv.tenantId });
  const refused = await caught(c.getSecret({ key: 'anything' }));
  tt.equal(refused.code, 'AuthFailed');
  tt.match(kv.tokenRequests.find((r) => r.clientId === envClientId), { tenant: kv.tenantId, method: 'certificate', granted: false },
    'the assertion went to the token endpoint for AZURE_CLIENT_ID in AZURE_TENANT_ID');

  // The agent's own error about the pod token survives MSAL's rewrapping.
  const wrongAudience = new ProviderError('AuthFailed', storeId, 'the mounted token is for audience "esi", the store wants "api://AzureADTokenExchange"');
  const d = await client({ ...wi, identityId: randomUUID() }, {});
  const ctxClient = await provider.newClient(testContext({ storeId, spec: { ...wi, identityId: randomUUID() }, token: async () => Promise.reject(wrongAudience) }));
  tt.equal(await caught(ctxClient.getSecret({ key: 'anything' })), wrongAudience, 'the same error, not "token endpoint refused"');
  tt.match((await caught(d.getSecret({ key: 'anything' }))).message, /no service-account token available/);
});

t.test(`${name}: a server that never answers is a Timeout within timeoutMs`, async (tt) => {
  const sockets = new Set<Socket>();
  const silent: Server = createServer((s) => sockets.add(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  tt.teardown(() => {
    sockets.forEach((s) => s.destroy());
    silent.close();
  });
  const port = (silent.address() as AddressInfo).port;
  const c = await client({ ...rw.spec, vaultUrl: `https://127.0.0.1:${port}` }, rw.credentials, 1500);
  const started = Date.now();
  const err = await caught(c.getSecret({ key: 'anything' }));
  tt.equal(err.code, 'Timeout');
  tt.ok(Date.now() - started < 4000, `gave up after ${Date.now() - started} ms`);
});

t.test(`${name}: a closed client refuses calls`, async (tt) => {
  const c: SecretsClient = await client();
  await c.close();
  tt.match((await caught(c.getSecret({ key: 'x' }))).message, /client is closed/);
});
