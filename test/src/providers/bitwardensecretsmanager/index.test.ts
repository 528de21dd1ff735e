// The bitwardensecretsmanager provider against the Bitwarden SDK server stand-in over TLS
// on 127.0.0.1 (test/support/standins/bitwarden.ts): keys by id and by name within the
// project, JSON maps, find, PushSecret, the CA, and no value or token in any error.
import t from 'tap';
import { meta } from '../../../../src/providers/bitwardensecretsmanager/meta.js';
import { provider } from '../../../../src/providers/bitwardensecretsmanager/index.js';
import { type SecretsClient } from '../../../../src/providers/types.js';
import { startBitwardenStandIn } from '../../../support/standins/bitwarden.js';
import { testContext, providerError, expectFailures } from '../../../support/provider-context.js';

const CANARY = 'CANARY-bw-83c4d2';
const TOKEN = `0.machine-token.${CANARY}`;
const ORG = '3f9c8e2a-1b7d-4c5e-9a6f-0d2e4b6c8a10';
const PROJECT = '7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
const OTHER = '11111111-2222-4333-8444-555555555555';
const STORE = 'SecretStore/team-a/bitwarden';
const dec = (b: Uint8Array) => Buffer.from(b).toString('utf8');

const bw = await startBitwardenStandIn(t, TOKEN, ORG, [
  { key: 'db-password', value: `${CANARY}-db`, projectId: PROJECT },
  { key: 'db-password', value: 'other-project', projectId: OTHER },
  { key: 'app-config', value: JSON.stringify({ port: 8080, host: 'db' }), projectId: PROJECT },
  { key: 'twice', value: 'a', projectId: PROJECT },
  { key: 'twice', value: 'b', projectId: PROJECT },
]);

/** ESO's documented store shape (the SDK server's CA as caBundle). */
const spec = (extra: object = {}) => ({
  apiURL: 'https://api.bitwarden.com', identityURL: 'https://identity.bitwarden.com',
  bitwardenServerSDKURL: bw.url, caBundle: Buffer.from(bw.caPem).toString('base64'),
  organizationID: ORG, projectID: PROJECT,
  auth: { secretRef: { credentials: { name: 'bitwarden-access-token', key: 'token' } } },
  ...extra,
});

function client(s: object = spec(), token = TOKEN): Promise<SecretsClient> {
  return provider.newClient(testContext({ storeId: STORE, spec: s, credentials: { 'bitwarden-access-token/token': token } }));
}

const failure = providerError;

t.test('a key is a secret id or a name unique in the project; maps; find; validate', async (t) => {
  const c = await client();
  t.equal(dec(await c.getSecret({ key: 'db-password' })), `${CANARY}-db`, 'by name, in the store\'s project only');
  const id = [...bw.secrets.values()].find((s) => s.projectId === OTHER)!.id;
  t.equal(dec(await c.getSecret({ key: id })), 'other-project', 'by id');
  t.same(Object.fromEntries(Object.entries(await c.getSecretMap({ key: 'app-config' })).map(([k, v]) => [k, dec(v)])), { port: '8080', host: 'db' });
  t.equal(Object.keys(await c.getAllSecrets({})).length, 5, 'find: every secret of the organization, by id');
  t.same(Object.keys(await c.getAllSecrets({ name: { regexp: `^${id}$` } })), [id]);
  await c.validate();
  t.match(bw.wardenUrls.at(-1), 'https://api.bitwarden.com https://identity.bitwarden.com');
});

t.test('PushSecret creates in the project, updates the value, deletes', async (t) => {
  const c = await client();
  await c.pushSecret(Buffer.from(`${CANARY}-pushed`), { remoteKey: 'pushed' });
  const created = [...bw.secrets.values()].find((s) => s.key === 'pushed');
  t.match(created, { value: `${CANARY}-pushed`, projectId: PROJECT, organizationId: ORG });
  await c.pushSecret(Buffer.from('v2'), { remoteKey: 'pushed' });
  t.equal(bw.secrets.get(created!.id)?.value, 'v2', 'updated in place');
  t.ok(await c.secretExists({ remoteKey: 'pushed' }));
  await c.deleteSecret({ remoteKey: 'pushed' });
  t.notOk(await c.secretExists({ remoteKey: 'pushed' }));
  await c.deleteSecret({ remoteKey: 'pushed' });
  t.equal((await failure(() => c.pushSecret(Buffer.from('x'), { remoteKey: 'p', property: 'a' }))).code, 'Unsupported');
});

t.test('failures: code and status, never a value or the token', async (t) => {
  const c = await client();
  const cases: [() => Promise<unknown>, string, RegExp][] = [
    [() => c.getSecret({ key: 'nope' }), 'NotFound', /no secret named "nope" in project/],
    [() => c.getSecret({ key: 'twice' }), 'Unknown', /more than one secret named "twice"/],
    [() => c.getSecret({ key: '00000000-0000-4000-8000-000000000000' }), 'Unknown', /answered HTTP 400 \(the SDK call failed/],
    [async () => (await client(spec(), 'wrong')).validate(), 'Unknown', /answered HTTP 400/],
    [async () => (await client(spec({ caBundle: undefined }))).validate(), 'Unreachable', /TLS/],
    [async () => provider.newClient({ ...testContext({ storeId: STORE, spec: spec(), credentials: { 'bitwarden-access-token/token': TOKEN } }), addresses: { privateAddresses: false } }).then((x) => x.validate()), 'Forbidden', /loopback/],
  ];
  await expectFailures(t, cases, /CANARY/);
});

t.test('validateSpec and references', async (t) => {
  t.same(meta.validateSpec(spec()), []);
  t.match(meta.validateSpec(spec({ bitwardenServerSDKURL: 'http://sdk:9998' })).join(), /bitwardenServerSDKURL must use https:\/\/, got "http:"/);
  t.match(meta.validateSpec(spec({ projectID: '' })).join(), /projectID/);
  t.same(meta.references(spec({ caBundle: undefined, caProvider: { type: 'Secret', name: 'bw-ca', key: 'ca.crt' } })).credentials.map((c) => `${c.kind}/${c.name}/${c.key}`), ['Secret/bitwarden-access-token/token', 'Secret/bw-ca/ca.crt']);
});
