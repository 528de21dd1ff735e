// The gcpsm provider against a Secret Manager emulator over gRPC (see
// test/support/platform/backends/gcpsm-emulator.ts for which one runs and what it does not
// model). Seeding goes through the official client straight to the emulator; the
// provider is only the code under test. Also: the conformance suite, regional secrets,
// full resource names, push/delete semantics, error mapping (closed port, silent port),
// the emulator env var, spec validation, and the service-account key credential.
import { generateKeyPairSync, createVerify } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import t from 'tap';
import { newGcpsmClient, provider, validateSpec } from '../../../src/providers/gcpsm/index.js';
import { keyFileClient } from '../../../src/providers/gcpsm/auth.js';
import { federationPlan } from '../../../src/providers/gcpsm/spec.js';
import { toProviderError } from '../../../src/providers/errors.js';
import { classifyGcpsm, Code, withRetries } from '../../../src/providers/gcpsm/errors.js';
import { type SecretsClient } from '../../../src/providers/types.js';
import { freePort } from '../../support/platform/processes.js';
import { GAPS, startGcpsmEmulator } from '../../support/platform/backends/gcpsm-emulator.js';
import { runConformance } from '../../support/conformance.js';
import { testContext, providerError } from '../../support/provider-context.js';

const PROJECT = 'esi-conformance';
const storeId = 'SecretStore/conformance/gcpsm';
const CANARY = 'gcpsm-canary-7c41';
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

const emu = await startGcpsmEmulator(t);
const sm = emu.client();
const clients: SecretsClient[] = [];
t.teardown(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
});

async function client(spec: Record<string, unknown> = { projectID: PROJECT }, emulatorHost = emu.endpoint, timeoutMs = 5000): Promise<SecretsClient> {
  const c = await newGcpsmClient(testContext({ storeId, spec, timeoutMs }), { emulatorHost });
  clients.push(c);
  return c;
}

async function seed(key: string, value: string, opts: { tags?: Record<string, string>; parent?: string } = {}): Promise<string> {
  const parent = opts.parent ?? `projects/${PROJECT}`;
  const regional = parent.includes('/locations/');
  try {
    await sm.createSecret({ parent, secretId: key, secret: { labels: opts.tags ?? {}, ...(regional ? {} : { replication: { automatic: {} } }) } });
  } catch (err) {
    if ((err as { code?: number }).code !== 6) throw err; // ALREADY_EXISTS: add a version
  }
  const [v] = await sm.addSecretVersion({ parent: `${parent}/secrets/${key}`, payload: { data: Buffer.from(value) } });
  return v.name!.split('/').pop()!;
}

const caught = providerError;

await runConformance(t, {
  name: `gcpsm (${emu.name})`,
  provider,
  storeId,
  client: () => client(),
  key: (base) => base.replace(/[^A-Za-z0-9_-]/g, '_'),
  seed: async (key, value, opts) => {
    await seed(key, value, opts);
  },
  seedVersions: async (key, first, second) => [await seed(key, first), await seed(key, second)],
  unreachableClient: async () => client({ projectID: PROJECT }, `127.0.0.1:${await freePort()}`),
  unsupported: { 'auth-failure': `emulator ${emu.name} lacks authentication (${GAPS.auth})` },
});

t.test(`gcpsm (${emu.name}): regional secrets (location): names, no replication policy, find`, async (tt) => {
  const c = await client({ projectID: PROJECT, location: 'europe-west1' });
  const run = `r${Date.now().toString(36)}`;
  await c.pushSecret(Buffer.from(`${CANARY}-regional`), { remoteKey: `${run}-pushed` });
  const [s] = await sm.getSecret({ name: `projects/${PROJECT}/locations/europe-west1/secrets/${run}-pushed` });
  tt.same(s.labels, { 'managed-by': 'external-secrets' }, 'created as managed, in the region');
  tt.notOk(s.replication?.automatic || s.replication?.userManaged, 'no replication policy on a regional secret');
  await seed(`${run}-seeded`, 'R', { parent: `projects/${PROJECT}/locations/europe-west1` });
  tt.equal(text(await c.getSecret({ key: `${run}-seeded` })), 'R');
  tt.same(Object.keys(await c.getAllSecrets({ name: { regexp: `^${run}-` } })).sort(), [`${run}-pushed`, `${run}-seeded`]);
  const global = await client();
  tt.equal((await caught(global.getSecret({ key: `${run}-seeded` }))).code, 'NotFound', 'a global store does not see it');
});

t.test(`gcpsm (${emu.name}): keys as full resource names; versions; disabled versions`, async (tt) => {
  const c = await client();
  const key = `v${Date.now().toString(36)}`;
  const v1 = await seed(key, 'one');
  const v2 = await seed(key, 'two');
  tt.equal(text(await c.getSecret({ key: `projects/${PROJECT}/secrets/${key}` })), 'two', 'full secret name = latest');
  tt.equal(text(await c.getSecret({ key: `projects/${PROJECT}/secrets/${key}/versions/${v1}` })), 'one', 'full version name');
  tt.equal(text(await c.getSecret({ key, version: 'latest' })), 'two');
  await sm.disableSecretVersion({ name: `projects/${PROJECT}/secrets/${key}/versions/${v2}` });
  const err = await caught(c.getSecret({ key }));
  tt.equal(err.code, 'NotFound', 'latest disabled: not available');
  tt.match(err.message, /disabled or destroyed/);
  tt.equal(text(await c.getSecret({ key, version: v1 })), 'one', 'an enabled older version still reads');
  tt.equal(await c.secretExists({ remoteKey: key }), false, 'exists = the latest version is readable');
});

t.test(`gcpsm (${emu.name}): push: property merge, no-op when unchanged, refused over non-JSON`, async (tt) => {
  const c = await client();
  const key = `p${Date.now().toString(36)}`;
  await seed(key, JSON.stringify({ user: 'app' }));
  await c.pushSecret(Buffer.from(`${CANARY}-pw`), { remoteKey: key, property: 'db.password' });
  tt.same(JSON.parse(text(await c.getSecret({ key }))), { user: 'app', db: { password: `${CANARY}-pw` } }, 'merged into the latest JSON');
  tt.equal(text(await c.getSecret({ key, property: 'db.password' })), `${CANARY}-pw`);
  await c.pushSecret(Buffer.from(`${CANARY}-pw`), { remoteKey: key, property: 'db.password' });
  const [versions] = await sm.listSecretVersions({ parent: `projects/${PROJECT}/secrets/${key}` });
  tt.equal(versions.length, 2, 'an unchanged value adds no version');
  tt.equal(await c.secretExists({ remoteKey: key, property: 'db.password' }), true);
  await c.deleteSecret({ remoteKey: key, property: 'db.password' });
  tt.equal(await c.secretExists({ remoteKey: key, property: 'db.password' }), false, 'property deleted');
  tt.same(JSON.parse(text(await c.getSecret({ key }))), { user: 'app' }, 'the rest kept (a property delete edits any secret; whole deletes need the managed-by label)');
  const plain = `n${Date.now().toString(36)}`;
  await seed(plain, 'not json');
  const err = await caught(c.pushSecret(Buffer.from('x'), { remoteKey: plain, property: 'a' }));
  tt.match(err.message, /not JSON/);
  tt.notMatch(err.message, /not json/, 'the current value is not quoted');
});

t.test(`gcpsm (${emu.name}): JSON numbers keep the text they were written with`, async (tt) => {
  const c = await client();
  const key = `num${Date.now().toString(36)}`;
  await seed(key, '{"id": 12345678901234567890, "price": 1.50, "big": 1e3}');
  tt.equal(text(await c.getSecret({ key, property: 'id' })), '12345678901234567890');
  tt.same(Object.fromEntries(Object.entries(await c.getSecretMap({ key })).map(([k, v]) => [k, text(v)])),
    { id: '12345678901234567890', price: '1.50', big: '1e3' }, 'dataFrom.extract');
  await c.pushSecret(Buffer.from('x'), { remoteKey: key, property: 'pw' });
  tt.equal(text(await c.getSecret({ key })), '{"id":12345678901234567890,"price":1.50,"big":1e3,"pw":"x"}', 'a property push keeps the other numbers');
});

t.test(`gcpsm (${emu.name}): secrets ESI/ESO did not create: not overwritten, not deleted; a property push adopts them`, async (tt) => {
  const c = await client();
  const key = `u${Date.now().toString(36)}`;
  await seed(key, JSON.stringify({ keep: 'me' }));
  const err = await caught(c.pushSecret(Buffer.from('x'), { remoteKey: key }));
  tt.equal(err.code, 'Forbidden', 'a whole value is not pushed over an unmanaged secret');
  tt.match(err.message, /not managed by external-secrets/);
  await c.deleteSecret({ remoteKey: key });
  tt.same(JSON.parse(text(await c.getSecret({ key }))), { keep: 'me' }, 'no managed-by label: left in place');
  await c.pushSecret(Buffer.from('v'), { remoteKey: key, property: 'added' });
  const [s] = await sm.getSecret({ name: `projects/${PROJECT}/secrets/${key}` });
  tt.equal(s.labels?.['managed-by'], 'external-secrets', 'a property push labels it (as ESO)');
  tt.same(JSON.parse(text(await c.getSecret({ key }))), { keep: 'me', added: 'v' });
});

t.test(`gcpsm (${emu.name}): metadataPolicy Fetch reads labels and annotations`, async (tt) => {
  const c = await client();
  const key = `m${Date.now().toString(36)}`;
  await seed(key, 'v', { tags: { team: 'alpha' } });
  tt.same(JSON.parse(text(await c.getSecret({ key, metadataPolicy: 'Fetch' }))), { annotations: {}, labels: { team: 'alpha' } });
  tt.equal(text(await c.getSecret({ key, metadataPolicy: 'Fetch', property: 'labels.team' })), 'alpha');
  tt.equal((await caught(c.getSecret({ key, metadataPolicy: 'Fetch', property: 'labels.nope' }))).code, 'NotFound');
  const labels = await c.getSecretMap({ key, metadataPolicy: 'Fetch', property: 'labels' });
  tt.same(Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, text(v)])), { team: 'alpha' }, 'dataFrom.extract of the labels');
});

t.test(`gcpsm (${emu.name}): find: tags combined with name and path; invalid regexp`, async (tt) => {
  const c = await client();
  const run = `f${Date.now().toString(36)}`;
  await seed(`${run}-a-1`, '1', { tags: { app: run } });
  await seed(`${run}-b-2`, '2', { tags: { app: run } });
  const found = await c.getAllSecrets({ tags: { app: run }, name: { regexp: '-a-' } });
  tt.same(Object.keys(found), [`${run}-a-1`]);
  tt.same(Object.keys(await c.getAllSecrets({ tags: { app: run }, path: `${run}-b` })), [`${run}-b-2`]);
  tt.equal((await caught(c.getAllSecrets({ name: { regexp: '(' } }))).code, 'InvalidSpec');
  tt.equal((await caught(c.getAllSecrets({}))).code, 'InvalidSpec');
});

t.test(`gcpsm (${emu.name}): a port that accepts but never answers: Timeout within the deadline`, async (tt) => {
  const sockets: Socket[] = [];
  const silent: Server = createServer((s) => sockets.push(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  tt.teardown(() => {
    sockets.forEach((s) => s.destroy());
    silent.close();
  });
  const port = (silent.address() as { port: number }).port;
  const c = await client({ projectID: PROJECT }, `127.0.0.1:${port}`, 1500);
  const started = Date.now();
  const err = await caught(c.getSecret({ key: 'anything' }));
  tt.ok(['Timeout', 'Unreachable'].includes(err.code), `code ${err.code}`);
  tt.ok(Date.now() - started < 5000, 'bounded by the store timeout');
  tt.match(err.message, storeId);
});

t.test(`gcpsm (${emu.name}): SECRET_MANAGER_EMULATOR_HOST in the environment`, async (tt) => {
  const before = process.env.SECRET_MANAGER_EMULATOR_HOST;
  tt.teardown(() => {
    if (before === undefined) delete process.env.SECRET_MANAGER_EMULATOR_HOST;
    else process.env.SECRET_MANAGER_EMULATOR_HOST = before;
  });
  const key = `e${Date.now().toString(36)}`;
  await seed(key, 'via env');
  process.env.SECRET_MANAGER_EMULATOR_HOST = emu.endpoint;
  const c = await provider.newClient(testContext({ storeId, spec: { projectID: PROJECT } }));
  clients.push(c);
  tt.equal(text(await c.getSecret({ key })), 'via env');
  await c.validate();
  process.env.SECRET_MANAGER_EMULATOR_HOST = 'no-port';
  tt.equal((await caught(provider.newClient(testContext({ storeId, spec: { projectID: PROJECT } })))).code, 'InvalidSpec');
});

t.test('validateSpec', async (tt) => {
  tt.same(validateSpec({ projectID: 'p' }), []);
  tt.same(validateSpec({ projectID: 'p', location: 'europe-west1', auth: { secretRef: { secretAccessKeySecretRef: { name: 's', key: 'k' } } } }), []);
  tt.match(validateSpec({ projectID: 'p', auth: { secretRef: { secretAccessKeySecretRef: { name: 's' } } } })[0], /needs name and key/);
  tt.match(validateSpec({ projectID: 7 })[0], /projectID/);
  tt.match(validateSpec({ location: 'Europe West' })[0], /location/);
  tt.match(validateSpec({ projectID: 'p', auth: { workloadIdentity: { serviceAccountRef: { name: 'sa' } } } })[0], /clusterLocation, .*clusterName/);
  tt.same(validateSpec({ projectID: 'p', auth: { workloadIdentity: { serviceAccountRef: { name: 'sa' }, clusterLocation: 'europe-west1', clusterName: 'c1' } } }), []);
  const pool = '//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/k8s/providers/c1';
  tt.same(validateSpec({ projectID: 'p', auth: { workloadIdentity: { serviceAccountRef: { name: 'sa', audiences: [pool] } } } }), [], 'a pool provider audience needs no cluster fields');
  tt.match(validateSpec({ projectID: 'p', auth: { secretRef: { secretAccessKeySecretRef: { name: 's', key: 'k' } }, workloadIdentity: { serviceAccountRef: { name: 'sa' }, clusterLocation: 'l', clusterName: 'c' } } }).join(), /not both/);
  tt.equal((await caught(provider.newClient(testContext({ storeId, spec: { projectID: 7 } })))).code, 'InvalidSpec');
});

t.test('workload identity: the token exchange plan', async (tt) => {
  tt.same(federationPlan({ serviceAccountRef: { name: 'sa' }, clusterLocation: 'europe-west1', clusterName: 'prod' }, 'proj'), {
    kind: 'gke',
    tokenAudience: 'proj.svc.id.goog',
    stsAudience: 'identitynamespace:proj.svc.id.goog:https://container.googleapis.com/v1/projects/proj/locations/europe-west1/clusters/prod',
  });
  tt.equal((federationPlan({ serviceAccountRef: { name: 'sa' }, clusterProjectID: 'host', clusterLocation: 'l', clusterName: 'c' }, 'proj') as { tokenAudience: string }).tokenAudience, 'host.svc.id.goog', 'the cluster project owns the pool');
  const pool = 'https://iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/k8s/providers/c1';
  tt.same(federationPlan({ serviceAccountRef: { name: 'sa', audiences: [pool] } }, 'proj'), {
    kind: 'pool', tokenAudience: pool, stsAudience: pool.replace(/^https:/, ''),
  }, 'an IAM pool provider: the token for its allowed audience, STS audience without the scheme');
});

t.test('service-account key: a JWT client signing with the mounted key; malformed keys', async (tt) => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const json = JSON.stringify({ type: 'service_account', project_id: 'key-project', private_key_id: 'kid1', private_key: pem, client_email: 'esi@key-project.iam.gserviceaccount.com' });
  const spec = { auth: { secretRef: { secretAccessKeySecretRef: { name: 'gcp', key: 'sa.json' } } } };
  const ctx = testContext({ storeId, spec, credentials: { 'gcp/sa.json': json } });
  const { client: auth, projectID } = await keyFileClient(ctx, spec);
  tt.equal(projectID, 'key-project', 'the project falls back to the key file');
  const headers = await auth.getRequestHeaders('https://secretmanager.googleapis.com/google.cloud.secretmanager.v1.SecretManagerService/AccessSecretVersion');
  const bearer = /^Bearer (.+)$/.exec(headers.get('authorization') ?? '')?.[1];
  tt.ok(bearer, 'a bearer token, signed locally (no token endpoint)');
  const [h, p, s] = bearer!.split('.') as [string, string, string];
  tt.ok(createVerify('RSA-SHA256').update(`${h}.${p}`).verify(publicKey, Buffer.from(s, 'base64url')), 'signed with the mounted key');
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
  tt.equal(claims.iss, 'esi@key-project.iam.gserviceaccount.com');
  tt.equal(claims.scope, 'https://www.googleapis.com/auth/cloud-platform', 'scoped to cloud-platform');
  tt.equal(JSON.parse(Buffer.from(h, 'base64url').toString()).kid, 'kid1');
  // The client picks the project up from the key when the spec has none (emulator mode).
  const c = await newGcpsmClient(ctx, { emulatorHost: emu.endpoint });
  clients.push(c);
  await c.pushSecret(Buffer.from('k'), { remoteKey: `k${Date.now().toString(36)}` });
  const [listed] = await sm.listSecrets({ parent: 'projects/key-project' });
  tt.ok(listed.length >= 1, 'wrote into the key file project');

  for (const [bad, why] of [[`{"private_key": "${CANARY}"`, /not valid JSON/], [JSON.stringify({ type: 'authorized_user', refresh_token: CANARY }), /service_account/]] as const) {
    const err = await caught(newGcpsmClient(testContext({ storeId, spec, credentials: { 'gcp/sa.json': bad } }), { emulatorHost: emu.endpoint }));
    tt.equal(err.code, 'AuthFailed');
    tt.match(err.message, why);
    tt.notMatch(err.message, CANARY, 'the credential is not quoted');
  }
  tt.equal((await caught(newGcpsmClient(testContext({ storeId, spec }), { emulatorHost: emu.endpoint }))).code, 'AuthFailed', 'credential not mounted');
});

t.test('gRPC status mapping and the retry budget (unit)', async (tt) => {
  const grpcErr = (code: number, details = `server says ${CANARY}`) => Object.assign(new Error(`${code} ${details}`), { code, details });
  const cases: [number, string][] = [
    [Code.NOT_FOUND, 'NotFound'], [Code.UNAUTHENTICATED, 'AuthFailed'], [Code.PERMISSION_DENIED, 'Forbidden'],
    [Code.UNAVAILABLE, 'Unreachable'], [Code.DEADLINE_EXCEEDED, 'Timeout'], [Code.FAILED_PRECONDITION, 'NotFound'],
    [Code.RESOURCE_EXHAUSTED, 'Unreachable'], [Code.ALREADY_EXISTS, 'Unknown'],
  ];
  for (const [code, want] of cases) {
    const e = toProviderError(grpcErr(code), { storeId, op: 'access', key: 'db-creds' }, classifyGcpsm);
    tt.equal(e.code, want, `gRPC ${code} -> ${want}`);
    tt.notMatch(e.message, CANARY, 'the server message is not passed through');
    tt.match(e.message, /db-creds/);
  }
  const plugin = toProviderError(grpcErr(Code.UNAVAILABLE, 'Getting metadata from plugin failed with error: invalid_grant'), { storeId, op: 'access' }, classifyGcpsm);
  tt.equal(plugin.code, 'AuthFailed', 'a failed token exchange is an auth failure, not an outage');

  let calls = 0;
  const flaky = await withRetries({ timeoutMs: 2000, attempts: 3, backoffMs: 10 }, true, async () => {
    if (++calls < 3) throw grpcErr(Code.UNAVAILABLE);
    return 'ok';
  });
  tt.equal(flaky, 'ok');
  tt.equal(calls, 3, 'transient failures retried up to 3 attempts');
  calls = 0;
  await tt.rejects(withRetries({ timeoutMs: 2000, attempts: 3, backoffMs: 10 }, false, async () => {
    calls++;
    throw grpcErr(Code.UNAVAILABLE);
  }));
  tt.equal(calls, 1, 'non-idempotent calls are not retried');
  calls = 0;
  await tt.rejects(withRetries({ timeoutMs: 2000, attempts: 3, backoffMs: 10 }, true, async () => {
    calls++;
    throw grpcErr(Code.NOT_FOUND);
  }));
  tt.equal(calls, 1, 'NOT_FOUND is final');
  const budgets: number[] = [];
  await tt.rejects(withRetries({ timeoutMs: 300, attempts: 3, backoffMs: 200 }, true, async (left) => {
    budgets.push(left);
    throw grpcErr(Code.UNAVAILABLE);
  }));
  tt.ok(budgets.length < 3 && budgets.every((b) => b <= 300), `attempts share one budget (${budgets.join(', ')} ms)`);
});
