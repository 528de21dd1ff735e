// The `kubernetes` provider against the real kube-apiserver of the test platform (RBAC
// on, TokenRequest): the conformance suite, then ESO's kubernetes semantics (whole data
// as JSON, data keys, JSON paths inside a key, metadata, find by name and labels, push
// and delete of single keys, remoteNamespace). Auth, RBAC denials, TLS and the network
// are in kubernetes-auth.test.ts; shared set-up in kubernetes-fixture.ts.
import t from 'tap';
import { provider } from '../../../src/providers/kubernetes/index.js';
import type { SecretsClient } from '../../../src/providers/types.js';
import { freePort } from '../../support/platform/processes.js';
import { createNamespace } from '../../support/kube.js';
import { runConformance } from '../../support/conformance.js';
import {
  CANARY, caBundle, caught, client, core, cp, ns, readBack, seedSecret, spec, storeId, text, texts,
} from '../../support/fixtures/kubernetes.js';

// ---------------------------------------------------------------- conformance

/** The conformance suite thinks of a key as holding one value; a Kubernetes Secret is a
 *  map. The target maps conformance key K to data key `value` of Secret K: a property
 *  P becomes `value.P` (a JSON path inside that data key, ESO's rule), and a found
 *  Secret's JSON data is unwrapped to its `value`. The provider itself is unchanged;
 *  its raw semantics are tested below. */
const DATA_KEY = 'value';
function asSingleValue(c: SecretsClient): SecretsClient {
  const prop = (p?: string) => (p ? `${DATA_KEY}.${p}` : DATA_KEY);
  return {
    getSecret: (r) => c.getSecret({ ...r, property: prop(r.property) }),
    getSecretMap: (r) => c.getSecretMap({ ...r, property: prop(r.property) }),
    getAllSecrets: async (f) => {
      const found = await c.getAllSecrets(f);
      for (const [k, v] of Object.entries(found)) found[k] = Buffer.from((JSON.parse(text(v)) as Record<string, string>)[DATA_KEY] ?? '');
      return found;
    },
    pushSecret: (v, r) => c.pushSecret(v, { ...r, property: r.property ?? DATA_KEY }),
    deleteSecret: (r) => c.deleteSecret({ ...r, property: r.property ?? DATA_KEY }),
    secretExists: (r) => c.secretExists({ ...r, property: r.property ?? DATA_KEY }),
    validate: () => c.validate(),
    close: () => c.close(),
  };
}

await t.test('conformance', async (tt) => {
  await runConformance(tt, {
    name: 'kubernetes',
    provider,
    storeId,
    client: async () => asSingleValue(await client()),
    badAuthClient: async () => asSingleValue(await client({ token: async () => 'garbage.not-a.jwt' })),
    unreachableClient: async () => {
      const port = await freePort();
      return asSingleValue(await client({ spec: spec({ server: { url: `https://127.0.0.1:${port}`, caBundle } }) }));
    },
    seed: (key, value, opts) => seedSecret(key, { [DATA_KEY]: value }, opts?.tags ? { labels: opts.tags } : {}),
    key: (base) => base.toLowerCase().replace(/[^a-z0-9.-]/g, '-'),
    unsupported: {
      version: 'Kubernetes Secrets have no versions',
      'find-path': 'Kubernetes Secret names have no paths (find by name or labels instead)',
      'push-property': 'this target maps every key to data key "value"; a pushed property is a data key of its own (flat, pushProperty "key"), tested under ESO semantics below',
    },
  });
});

// ---------------------------------------------------------------- ESO semantics

t.test('read: whole data as JSON, data keys, JSON paths inside a key, binary values', async (tt) => {
  const bin = Buffer.from([0, 1, 2, 0xfe, 0xff]);
  await seedSecret('db', {
    username: 'app', password: `${CANARY}-pw`, 'config.json': JSON.stringify({ db: { host: 'pg', port: 5432 } }), 'tls.key': bin,
  });
  const c = await client();
  tt.teardown(() => c.close());
  tt.equal(text(await c.getSecret({ key: 'db', property: 'password' })), `${CANARY}-pw`, 'a data key');
  tt.same(Buffer.from(await c.getSecret({ key: 'db', property: 'tls.key' })), bin, 'a key with a dot, binary bytes intact');
  tt.equal(text(await c.getSecret({ key: 'db', property: 'config.json.db.host' })), 'pg', 'a JSON path inside a key named with a dot');
  tt.equal(text(await c.getSecret({ key: 'db', property: 'config.json.db.port' })), '5432');
  const whole = JSON.parse(text(await c.getSecret({ key: 'db' }))) as Record<string, string>;
  tt.same(Object.keys(whole), ['config.json', 'password', 'tls.key', 'username'], 'no property: all data keys, sorted');
  tt.equal(whole.password, `${CANARY}-pw`);
  const missing = await caught(c.getSecret({ key: 'db', property: 'nope' }));
  tt.equal(missing.code, 'NotFound');
  tt.match(missing.message, /property "nope" not found/);
  tt.match(missing.message, /key "db"/);
  const absent = await caught(c.getSecret({ key: 'no-such-secret' }));
  tt.equal(absent.code, 'NotFound');
  tt.match(absent.message, new RegExp(`${storeId} key "no-such-secret": Secret not found in namespace "${ns}"`));
  tt.equal((await caught(c.getSecret({ key: 'db', version: '3' }))).code, 'Unsupported', 'versions are refused, not ignored');
  tt.equal((await caught(c.getSecret({ key: 'Not_A_Name' }))).code, 'InvalidSpec');
});

t.test('JSON numbers inside a data key keep the text they were written with', async (tt) => {
  // JSON.parse would give 12345678901234567000, 1.5 and 1000.
  await seedSecret('nums', { 'cfg.json': '{"id": 12345678901234567890, "price": 1.50, "big": 1e3, "n": {"ids": [12345678901234567891]}}' });
  const c = await client();
  tt.teardown(() => c.close());
  tt.equal(text(await c.getSecret({ key: 'nums', property: 'cfg.json.id' })), '12345678901234567890');
  tt.equal(text(await c.getSecret({ key: 'nums', property: 'cfg.json.price' })), '1.5', 'a path into a JSON key: gjson\'s string of the number, as ESO');
  tt.equal(text(await c.getSecret({ key: 'nums', property: 'cfg.json.big' })), '1000');
  tt.equal(text(await c.getSecret({ key: 'nums', property: 'cfg.json.n' })), '{"ids":[12345678901234567891]}');
  tt.same(texts(await c.getSecretMap({ key: 'nums', property: 'cfg.json' })),
    { id: '12345678901234567890', price: '1.50', big: '1e3', n: '{"ids":[12345678901234567891]}' }, 'dataFrom.extract with a property');
});

t.test('getSecretMap: the data keys, or the JSON object a property selects', async (tt) => {
  await seedSecret('map', { a: '1', b: `${CANARY}-b`, 'cfg.json': JSON.stringify({ x: 'y', n: { m: 1 } }) });
  const c = await client();
  tt.teardown(() => c.close());
  tt.same(texts(await c.getSecretMap({ key: 'map' })), { a: '1', b: `${CANARY}-b`, 'cfg.json': '{"x":"y","n":{"m":1}}' });
  tt.same(texts(await c.getSecretMap({ key: 'map', property: 'cfg.json' })), { x: 'y', n: '{"m":1}' });
  tt.same(texts(await c.getSecretMap({ key: 'map', property: 'cfg.json.n' })), { m: '1' });
  const notObject = await caught(c.getSecretMap({ key: 'map', property: 'a' }));
  tt.match(notObject.message, /property "a" of the Secret is not a JSON object/);
  tt.notMatch(notObject.message, CANARY);
});

t.test('metadataPolicy Fetch: labels and annotations', async (tt) => {
  await seedSecret('meta', { k: 'v' }, {
    labels: { 'app.kubernetes.io/name': 'web', tier: 'db' },
    annotations: { 'example.com/cfg': JSON.stringify({ owner: 'team-a' }), note: 'hi' },
  });
  const c = await client();
  tt.teardown(() => c.close());
  const fetch = { key: 'meta', metadataPolicy: 'Fetch' as const };
  tt.same(JSON.parse(text(await c.getSecret(fetch))), {
    annotations: { 'example.com/cfg': '{"owner":"team-a"}', note: 'hi' },
    labels: { 'app.kubernetes.io/name': 'web', tier: 'db' },
  });
  tt.same(JSON.parse(text(await c.getSecret({ ...fetch, property: 'labels' }))), { 'app.kubernetes.io/name': 'web', tier: 'db' });
  tt.equal(text(await c.getSecret({ ...fetch, property: 'labels.app.kubernetes.io/name' })), 'web', 'a label key with dots');
  tt.equal(text(await c.getSecret({ ...fetch, property: 'annotations.example.com/cfg.owner' })), 'team-a', 'a JSON path inside an annotation');
  tt.equal((await caught(c.getSecret({ ...fetch, property: 'labels.none' }))).code, 'NotFound');
  tt.equal((await caught(c.getSecret({ ...fetch, property: 'data' }))).code, 'NotFound');
  tt.same(texts(await c.getSecretMap({ ...fetch, property: 'labels' })), { 'app.kubernetes.io/name': 'web', tier: 'db' });
  tt.same(Object.keys(await c.getSecretMap(fetch)).sort(), ['annotations', 'labels']);
});

t.test('find by name regexp and by labels (tags): each Secret as JSON of its data', async (tt) => {
  await seedSecret('find-app-one', { u: 'one' }, { labels: { team: 'alpha', env: 'prod' } });
  await seedSecret('find-app-two', { u: 'two' }, { labels: { team: 'alpha', env: 'dev' } });
  await seedSecret('find-other', { u: 'three' }, { labels: { team: 'alpha', env: 'prod' } });
  const c = await client();
  tt.teardown(() => c.close());
  const byName = texts(await c.getAllSecrets({ name: { regexp: '^find-app-' } }));
  tt.same(byName, { 'find-app-one': '{"u":"one"}', 'find-app-two': '{"u":"two"}' });
  const byTags = texts(await c.getAllSecrets({ tags: { team: 'alpha', env: 'prod' } }));
  tt.same(Object.keys(byTags).sort(), ['find-app-one', 'find-other']);
  const both = texts(await c.getAllSecrets({ name: { regexp: 'app' }, tags: { env: 'prod' } }));
  tt.same(Object.keys(both), ['find-app-one'], 'name and tags together: both must match');
  tt.equal((await caught(c.getAllSecrets({ path: 'x/' }))).code, 'Unsupported');
  tt.equal((await caught(c.getAllSecrets({ tags: { 'bad key!': 'x' } }))).code, 'InvalidSpec');
  tt.equal((await caught(c.getAllSecrets({ name: { regexp: '(' } }))).code, 'InvalidSpec');
  tt.equal((await caught(c.getAllSecrets({}))).code, 'InvalidSpec');
});

t.test('push / delete / exists work on one data key of a Secret', async (tt) => {
  const c = await client();
  tt.teardown(() => c.close());
  await c.pushSecret(Buffer.from(`${CANARY}-1`), { remoteKey: 'pushed', property: 'token' });
  const created = await core.readNamespacedSecret({ name: 'pushed', namespace: ns });
  tt.equal(created.type, 'Opaque', 'created as an Opaque Secret');
  tt.same(await readBack('pushed'), { token: `${CANARY}-1` });
  await c.pushSecret(Buffer.from('second'), { remoteKey: 'pushed', property: 'other' });
  tt.same(await readBack('pushed'), { token: `${CANARY}-1`, other: 'second' }, 'another key is added, the first kept');
  const rv = (await core.readNamespacedSecret({ name: 'pushed', namespace: ns })).metadata!.resourceVersion;
  await c.pushSecret(Buffer.from('second'), { remoteKey: 'pushed', property: 'other' });
  tt.equal((await core.readNamespacedSecret({ name: 'pushed', namespace: ns })).metadata!.resourceVersion, rv, 'pushing the same value writes nothing');
  tt.equal(await c.secretExists({ remoteKey: 'pushed' }), true);
  tt.equal(await c.secretExists({ remoteKey: 'pushed', property: 'token' }), true);
  tt.equal(await c.secretExists({ remoteKey: 'pushed', property: 'nope' }), false);
  await c.deleteSecret({ remoteKey: 'pushed', property: 'token' });
  tt.same(await readBack('pushed'), { other: 'second' }, 'delete removes one key');
  await c.deleteSecret({ remoteKey: 'pushed', property: 'token' });
  tt.pass('deleting an absent key is not an error');
  await c.deleteSecret({ remoteKey: 'pushed', property: 'other' });
  tt.equal(await readBack('pushed'), undefined, 'deleting the last key deletes the Secret');
  tt.equal(await c.secretExists({ remoteKey: 'pushed' }), false);
  await c.deleteSecret({ remoteKey: 'pushed', property: 'other' });
  tt.equal((await caught(c.pushSecret(Buffer.from('x'), { remoteKey: 'pushed' }))).code, 'InvalidSpec', 'push needs a property (the data key)');
  tt.equal((await caught(c.deleteSecret({ remoteKey: 'pushed' }))).code, 'InvalidSpec');
});

t.test('concurrent pushes of different keys to one Secret all land (409 → re-read)', async (tt) => {
  const c = await client();
  tt.teardown(() => c.close());
  const keys = Array.from({ length: 6 }, (_, i) => `k${i}`);
  await Promise.all(keys.map((k) => c.pushSecret(Buffer.from(k.toUpperCase()), { remoteKey: 'racy', property: k })));
  tt.same(await readBack('racy'), Object.fromEntries(keys.map((k) => [k, k.toUpperCase()])));
});

t.test('remoteNamespace: defaults to the namespace the store is used from', async (tt) => {
  const other = await createNamespace(cp.kc, 'k8s-remote', tt);
  await core.createNamespacedSecret({ namespace: other, body: { metadata: { name: 'there' }, data: { k: Buffer.from('remote').toString('base64') } } });
  const admin = async () => cp.token;
  const c = await client({ spec: spec({ remoteNamespace: other }), token: admin });
  tt.teardown(() => c.close());
  tt.equal(text(await c.getSecret({ key: 'there', property: 'k' })), 'remote', 'remoteNamespace is where Secrets are read');
  const d = await client({ namespace: other, token: admin });
  tt.teardown(() => d.close());
  tt.equal(text(await d.getSecret({ key: 'there', property: 'k' })), 'remote', 'no remoteNamespace: the context namespace');
});
