// The akeyless provider against the Akeyless API stand-in on 127.0.0.1
// (test/support/standins/akeyless.ts): ESO's documented store (an access ID, type and key from
// one Secret), static secrets by version, property and map, rotated and dynamic secrets, find by
// name under a folder and by tag, Kubernetes auth (a token Secret, the pod's own token), and no
// value, access key or token in any error; PushSecret as ESO's store does it (a tagged new
// item, a new version only on change, a key of the item's JSON object, deletion of tagged
// items only).
import t from 'tap';
import { provider, rotatedValue } from '../../../../src/providers/akeyless/index.js';
import { meta } from '../../../../src/providers/akeyless/meta.js';
import { providerNames } from '../../../../src/providers/registry.js';
import { type SecretsClient } from '../../../../src/providers/types.js';
import { testContext, providerError, expectFailures } from '../../../support/provider-context.js';
import { startAkeylessStandIn, type AkeylessItem } from '../../../support/standins/akeyless.js';

const CANARY = 'CANARY-akeyless-3e90b2';
const ACCESS_KEY = `${CANARY}-access-key`;
const JWT = `${CANARY}.jwt.sig`;
const STORE = 'SecretStore/team-a/akeyless-secret-store';
const dec = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const strings = (m: Record<string, Uint8Array>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, dec(v)]));

const items: Record<string, AkeylessItem> = {
  '/team-a/db-password': { type: 'STATIC_SECRET', versions: ['old-pw', `${CANARY}-pw`], tags: ['team-a'] },
  '/team-a/config': { type: 'STATIC_SECRET', versions: [JSON.stringify({ user: 'orders', port: 5432 })] },
  '/team-a/rotated': { type: 'ROTATED_SECRET', value: { username: 'svc', password: `${CANARY}-rot` } },
  '/team-a/ssh-rotated': { type: 'ROTATED_SECRET', value: { payload: 'ssh-key-text' } },
  '/team-a/db-dynamic': { type: 'DYNAMIC_SECRET', value: { user: 'tmp-user', password: `${CANARY}-dyn`, ttl_in_minutes: '60' } },
  '/team-b/other': { type: 'STATIC_SECRET', versions: ['b'], tags: ['team-a'] },
};
const api = await startAkeylessStandIn(t, {
  accessKey: { accessId: 'p-abc123', accessKey: ACCESS_KEY },
  k8s: { accessId: 'p-k8s456', confName: 'my-conf-name', jwt: JWT },
}, items);

/** ESO's documented store: the access ID, type and its parameter from one Secret. */
const spec = (extra: object = {}) => ({
  akeylessGWApiURL: api.url,
  authSecretRef: {
    secretRef: {
      accessID: { name: 'akeylss-secret-creds', key: 'accessId' },
      accessType: { name: 'akeylss-secret-creds', key: 'accessType' },
      accessTypeParam: { name: 'akeylss-secret-creds', key: 'accessTypeParam' },
    },
  },
  ...extra,
});
const k8sSpec = (k: object = {}) => spec({ authSecretRef: { kubernetesAuth: { accessID: 'p-k8s456', k8sConfName: 'my-conf-name', ...k } } });
const credentials = {
  'akeylss-secret-creds/accessId': 'p-abc123', 'akeylss-secret-creds/accessType': 'api_key', 'akeylss-secret-creds/accessTypeParam': `${ACCESS_KEY}\n`,
  'akeyless-jwt/token': JWT,
};

function client(s: object = spec(), creds: Record<string, string> = credentials, token?: () => Promise<string>): Promise<SecretsClient> {
  return provider.newClient(testContext({ storeId: STORE, spec: s, credentials: creds, ...(token ? { token } : {}) }));
}

t.test('registered; capabilities', async (t) => {
  t.ok(providerNames().includes('akeyless'));
  t.same(meta.capabilities.find, { name: true, tags: true, path: true });
  t.equal(meta.capabilities.versions, true);
  t.equal(meta.capabilities.write, true);
  t.equal(meta.capabilities.pushProperty, 'key');
});

t.test('static secrets: latest, a version, a property, a map; one token serves every call', async (t) => {
  const c = await client();
  t.equal(dec(await c.getSecret({ key: '/team-a/db-password' })), `${CANARY}-pw`);
  t.equal(dec(await c.getSecret({ key: '/team-a/db-password', version: '1' })), 'old-pw');
  t.equal(dec(await c.getSecret({ key: '/team-a/config', property: 'user' })), 'orders');
  t.same(strings(await c.getSecretMap({ key: '/team-a/config' })), { user: 'orders', port: '5432' });
  await c.validate();
  const auth = api.seen.find((s) => s.url === '/auth')!;
  t.same(JSON.parse(auth.body), { 'access-id': 'p-abc123', 'access-type': 'access_key', 'access-key': ACCESS_KEY });
  t.equal(api.auths, 2, 'one /auth for the reads, one for validate');
});

t.test('rotated and dynamic secrets, as ESO reads them', async (t) => {
  const c = await client();
  t.same(JSON.parse(dec(await c.getSecret({ key: '/team-a/rotated' }))), { username: 'svc', password: `${CANARY}-rot` });
  t.equal(dec(await c.getSecret({ key: '/team-a/rotated', property: 'username' })), 'svc');
  t.equal(dec(await c.getSecret({ key: '/team-a/ssh-rotated' })), 'ssh-key-text');
  t.equal(dec(await c.getSecret({ key: '/team-a/db-dynamic', property: 'user' })), 'tmp-user');
  t.equal(rotatedValue({ value: { target_value: { a: 1 } } }), '{"a":1}');
});

t.test('find: by name under a folder, by tag value', async (t) => {
  const c = await client();
  t.same(Object.keys(await c.getAllSecrets({ path: 'team-a', name: { regexp: 'db-' } })).sort(), ['/team-a/db-dynamic', '/team-a/db-password']);
  t.same(strings(await c.getAllSecrets({ tags: { team: 'team-a' } })), { '/team-a/db-password': `${CANARY}-pw`, '/team-b/other': 'b' });
  t.same(Object.keys(await c.getAllSecrets({ path: '/team-b/', tags: { team: 'team-a' } })), ['/team-b/other']);
});

t.test('kubernetes auth: a token Secret (key defaults to token), or the pod\'s own token', async (t) => {
  const bySecret = await client(k8sSpec({ secretRef: { name: 'akeyless-jwt' } }));
  t.equal(dec(await bySecret.getSecret({ key: '/team-a/db-password' })), `${CANARY}-pw`);
  t.match(JSON.parse(api.seen.filter((s) => s.url === '/auth').at(-1)!.body), { 'access-type': 'k8s', 'k8s-auth-config-name': 'my-conf-name' });
  let asked: string | undefined = 'none';
  const bySa = await client(k8sSpec({ serviceAccountRef: { name: 'app', audiences: ['akeyless'] } }), credentials, async () => JWT);
  await bySa.validate();
  const byPod = await client(k8sSpec(), credentials, async () => {
    asked = 'pod';
    return JWT;
  });
  await byPod.validate();
  t.equal(asked, 'pod');
});

t.test('failures: status and name, never a value, the access key or a token', async (t) => {
  const c = await client();
  const cases: [() => Promise<unknown>, string, RegExp][] = [
    [() => c.getSecret({ key: '/team-a/nope' }), 'NotFound', /key "\/team-a\/nope": Akeyless describe item answered HTTP 404/],
    [() => c.getSecret({ key: '/team-a/db-password', version: '9' }), 'NotFound', /get secret value answered HTTP 404/],
    [async () => (await client(spec(), { ...credentials, 'akeylss-secret-creds/accessTypeParam': 'wrong' })).validate(), 'AuthFailed', /Akeyless authenticate answered HTTP 401/],
    [async () => (await client(spec(), { ...credentials, 'akeylss-secret-creds/accessType': 'aws_iam' })).validate(), 'Unsupported', /access type "aws_iam"/],
    [async () => (await client(k8sSpec({ secretRef: { name: 'akeyless-jwt', key: 'other' } }))).validate(), 'AuthFailed', /akeyless-jwt\/other is not mounted/],
    [() => c.getSecret({ key: '/team-a/db-password', version: 'latest' }), 'InvalidSpec', /remoteRef.version must be an item version number/],
    [() => c.getSecret({ key: '/team-a/db-password', property: 'x' }), 'Unknown', /not JSON/],
    [() => c.getAllSecrets({ path: '/team-a' }), 'InvalidSpec', /find needs name or tags/],
    [() => c.pushSecret(new TextEncoder().encode('x'), { remoteKey: '/team-a/db-password', property: 'k' }), 'Unknown', /not JSON/],
  ];
  await expectFailures(t, cases, /CANARY/);
  const refused = provider.newClient({ ...testContext({ storeId: STORE, spec: spec(), credentials }), addresses: { privateAddresses: false, privateHint: 'flag' } });
  t.match((await providerError(async () => (await refused).validate())).message, /127\.0\.0\.1 is a loopback or private address; flag/);
});

t.test('validateSpec, references, pod identity', async (t) => {
  t.same(meta.validateSpec(spec()), []);
  t.same(meta.validateSpec(k8sSpec()), []);
  t.match(meta.validateSpec(spec({ akeylessGWApiURL: 'ftp://x' })).join(), /akeylessGWApiURL must use https:\/\/ or http:\/\//);
  t.match(meta.validateSpec(spec({ authSecretRef: {} })).join(), /authSecretRef must set secretRef/);
  t.match(meta.validateSpec(k8sSpec({ accessID: '' })).join(), /kubernetesAuth.accessID must be a non-empty string/);
  t.match(meta.validateSpec(spec({ authSecretRef: { secretRef: { accessID: { name: 'a' } } } })).join(), /accessID.key must be a non-empty string[^]*accessType must be an object/);
  t.same(meta.references(spec()).credentials.map((c) => `${c.path}=${c.name}/${c.key}`), [
    'akeyless.authSecretRef.secretRef.accessID=akeylss-secret-creds/accessId',
    'akeyless.authSecretRef.secretRef.accessType=akeylss-secret-creds/accessType',
    'akeyless.authSecretRef.secretRef.accessTypeParam=akeylss-secret-creds/accessTypeParam',
  ]);
  t.same(meta.references(k8sSpec({ secretRef: { name: 'akeyless-jwt' } })).credentials, [{ path: 'akeyless.authSecretRef.kubernetesAuth.secretRef', kind: 'Secret', name: 'akeyless-jwt', key: 'token' }]);
  t.same(meta.references(k8sSpec({ serviceAccountRef: { name: 'my-sa' } })).serviceAccounts, [{ path: 'akeyless.authSecretRef.kubernetesAuth.serviceAccountRef', name: 'my-sa' }]);
  t.equal(meta.identity?.ambient(k8sSpec()), true);
  t.equal(meta.identity?.ambient(spec()), false);
  t.match(meta.ambientIdentity?.(k8sSpec()), { field: 'akeyless.authSecretRef.kubernetesAuth.serviceAccountRef', kind: 'token' });
  t.equal(meta.ambientIdentity?.(k8sSpec({ serviceAccountRef: { name: 'my-sa' } })), undefined);
});

t.test('PushSecret: a new item tagged, a new version only on change, a property, exists, delete of tagged items only', async (t) => {
  const c = await client();
  const enc = (v: string) => new TextEncoder().encode(v);
  await c.pushSecret(enc(`${CANARY}-pushed`), { remoteKey: '/pushed/token' });
  t.same(items['/pushed/token'], { type: 'STATIC_SECRET', versions: [`${CANARY}-pushed`], tags: ['k8s-external-secrets'] }, 'created with ESO\'s tag');
  await c.pushSecret(enc(`${CANARY}-pushed`), { remoteKey: '/pushed/token' });
  t.equal((items['/pushed/token'] as { versions: string[] }).versions.length, 1, 'an unchanged value writes no version');
  await c.pushSecret(enc('v2'), { remoteKey: '/pushed/token' });
  t.same((items['/pushed/token'] as { versions: string[] }).versions, [`${CANARY}-pushed`, 'v2']);
  await c.pushSecret(enc('orders'), { remoteKey: '/pushed/db', property: 'user' });
  await c.pushSecret(enc('s3cret'), { remoteKey: '/pushed/db', property: 'pass.word' });
  t.same(JSON.parse(dec(await c.getSecret({ key: '/pushed/db' }))), { user: 'orders', 'pass.word': 's3cret' }, 'a property is one key of the JSON object');
  t.equal(await c.secretExists({ remoteKey: '/pushed/db', property: 'user' }), true);
  t.equal(await c.secretExists({ remoteKey: '/pushed/db', property: 'nope' }), false);
  t.equal(await c.secretExists({ remoteKey: '/pushed/none' }), false);
  await c.deleteSecret({ remoteKey: '/pushed/db', property: 'user' });
  t.same(JSON.parse(dec(await c.getSecret({ key: '/pushed/db' }))), { 'pass.word': 's3cret' }, 'the other key stays');
  await c.deleteSecret({ remoteKey: '/pushed/db', property: 'pass.word' });
  t.notOk(items['/pushed/db'], 'the last key gone: the item is deleted');
  await c.deleteSecret({ remoteKey: '/pushed/token' });
  t.notOk(items['/pushed/token']);
  await c.deleteSecret({ remoteKey: '/team-a/db-password' });
  t.ok(items['/team-a/db-password'], 'an item without the tag is not deleted');
  await c.deleteSecret({ remoteKey: '/pushed/none' });
  t.match((await providerError(() => c.pushSecret(enc('x'), { remoteKey: '/team-a/rotated' }))).message, /only static secrets can be pushed to \(the item is a ROTATED_SECRET\)/);
});
