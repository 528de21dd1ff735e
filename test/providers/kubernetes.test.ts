// The `kubernetes` provider against the real kube-apiserver of the test platform (RBAC
// on, TokenRequest): the conformance suite, then ESO's kubernetes semantics (whole data
// as JSON, data keys, JSON paths inside a key, metadata, find by name and labels, push
// and delete of single keys), auth (pod token with rotation, static token, kubeconfig,
// client certificate), RBAC denials that name the missing permission, and TLS.
import { CoreV1Api, RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import t, { type Test } from 'tap';
import type { KubernetesProvider } from '../../src/api/types.js';
import { provider, validateSpec } from '../../src/providers/kubernetes/index.js';
import { ProviderError, type SecretsClient } from '../../src/providers/types.js';
import { freePort } from '../platform/control-plane-process.js';
import { useControlPlane } from '../platform/controlPlane.js';
import { createNamespace, serviceAccountToken } from '../helpers/kube.js';
import { runConformance } from './conformance.js';
import { testContext } from './context.js';

const CANARY = 'k8s-canary-77d1';
const cp = await useControlPlane(t);
const core = cp.kc.makeApiClient(CoreV1Api);
const ns = await createNamespace(cp.kc, 'k8s-provider', t);
const storeId = `SecretStore/${ns}/k8s`;
const caBundle = Buffer.from(cp.caPem).toString('base64');

/** A ServiceAccount with a Role of `verbs` on Secrets of the namespace (none = no Role). */
async function serviceAccount(kc: KubeConfig, name: string, verbs: string[]): Promise<string> {
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } });
  if (verbs.length) {
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs }] } });
    await rbac.createNamespacedRoleBinding({ namespace: ns, body: {
      metadata: { name }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
    } });
  }
  return serviceAccountToken(kc, ns, name);
}

const rwToken = await serviceAccount(cp.kc, 'esi-rw', ['get', 'list', 'create', 'update', 'delete', 'patch']);
const noneToken = await serviceAccount(cp.kc, 'esi-none', []);
const getToken = await serviceAccount(cp.kc, 'esi-get', ['get']);

function spec(extra: Partial<KubernetesProvider> = {}): KubernetesProvider {
  return { server: { url: cp.server, caBundle }, auth: { serviceAccount: { name: 'esi-rw' } }, ...extra };
}

/** A client authenticated with the pod's own token (`token()` is the projected file). */
function client(opts: { spec?: KubernetesProvider; token?: () => Promise<string>; credentials?: Record<string, string>; timeoutMs?: number; namespace?: string } = {}): Promise<SecretsClient> {
  return provider.newClient(testContext({
    storeId, spec: opts.spec ?? spec(), namespace: opts.namespace ?? ns, credentials: opts.credentials,
    token: opts.token ?? (async () => rwToken), timeoutMs: opts.timeoutMs ?? 5000,
  }));
}

async function seedSecret(name: string, data: Record<string, string | Buffer>, meta: { labels?: Record<string, string>; annotations?: Record<string, string> } = {}): Promise<void> {
  const body = { metadata: { name, namespace: ns, ...meta }, data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) };
  await core.deleteNamespacedSecret({ name, namespace: ns }).catch(() => undefined);
  await core.createNamespacedSecret({ namespace: ns, body });
}

/** The Secret's data as read by the admin, or undefined when it does not exist. */
const readBack = (name: string): Promise<Record<string, string> | undefined> => core.readNamespacedSecret({ name, namespace: ns }).then(
  (s) => Object.fromEntries(Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')])),
  () => undefined);

/** The ProviderError `p` rejects with (anything else fails the test). */
const caught = (p: Promise<unknown>): Promise<ProviderError> => p.then(
  () => Promise.reject(new Error('expected a ProviderError')),
  (err: unknown) => (err instanceof ProviderError ? err : Promise.reject(err)));

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
const texts = (m: Record<string, Uint8Array>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, text(v)]));

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

// ---------------------------------------------------------------- RBAC and auth

t.test('Forbidden: RBAC denials name the identity, verb, resource and namespace', async (tt) => {
  await seedSecret('guarded', { password: `${CANARY}-guarded` });
  const c = await client({ token: async () => noneToken });
  tt.teardown(() => c.close());
  const get = await caught(c.getSecret({ key: 'guarded', property: 'password' }));
  tt.equal(get.code, 'Forbidden');
  tt.match(get.message, storeId);
  tt.match(get.message, `"system:serviceaccount:${ns}:esi-none"`);
  tt.match(get.message, `may not get secrets in namespace "${ns}"`);
  tt.match(get.message, `RBAC must allow "get" on secrets in namespace "${ns}" for the pod's service account`);
  tt.notMatch(get.message, CANARY);
  const list = await caught(c.getAllSecrets({ name: { regexp: '.' } }));
  tt.match(list.message, `RBAC must allow "list" on secrets in namespace "${ns}"`);
  const validate = await caught(c.validate());
  tt.equal(validate.code, 'Forbidden');
  tt.match(validate.message, `RBAC must allow "get" on secrets in namespace "${ns}"`);

  const g = await client({ token: async () => getToken });
  tt.teardown(() => g.close());
  tt.equal(text(await g.getSecret({ key: 'guarded', property: 'password' })), `${CANARY}-guarded`, 'get alone is enough to read');
  await g.validate();
  const push = await caught(g.pushSecret(Buffer.from('x'), { remoteKey: 'guarded-new', property: 'k' }));
  tt.equal(push.code, 'Forbidden');
  tt.match(push.message, `RBAC must allow "create" on secrets in namespace "${ns}"`);
  const update = await caught(g.pushSecret(Buffer.from('x'), { remoteKey: 'guarded', property: 'k' }));
  tt.match(update.message, `RBAC must allow "update" on secrets in namespace "${ns}"`);
});

t.test('AuthFailed: a garbage or expired token; the pod token is re-read after a 401', async (tt) => {
  const bad = await client({ token: async () => 'garbage' });
  tt.teardown(() => bad.close());
  const err = await caught(bad.getSecret({ key: 'db' }));
  tt.equal(err.code, 'AuthFailed');
  tt.match(err.message, /401 Unauthorized/);
  tt.match(err.message, /pod's projected token/);
  tt.notMatch(err.message, 'garbage');

  // A token signed for another audience is refused like an expired one.
  const foreign = await serviceAccountToken(cp.kc, ns, 'esi-rw', ['https://vault.example']);
  for (const token of [foreign, '']) {
    const c = await client({ token: async () => token });
    tt.equal((await caught(c.getSecret({ key: 'db' }))).code, 'AuthFailed', token ? 'foreign audience' : 'empty token: no anonymous request');
    await c.close();
  }

  // Rotation: the first read returns the old (now invalid) token, the next the new one.
  let reads = 0;
  const rotating = await client({ token: async () => (++reads === 1 ? 'rotated-away' : rwToken) });
  tt.teardown(() => rotating.close());
  tt.equal(text(await rotating.getSecret({ key: 'db', property: 'username' })), 'app', 'retried with the re-read token');
  tt.equal(reads, 2);
  tt.equal(text(await rotating.getSecret({ key: 'db', property: 'username' })), 'app');
  tt.equal(reads, 3, 'the token is read for every request');
});

t.test('auth.token.bearerToken: a static token read from the mounted credential', async (tt) => {
  const s = spec({ auth: { token: { bearerToken: { name: 'k8s-token', key: 'token' } } } });
  const c = await client({ spec: s, token: async () => { throw new Error('the pod token must not be used'); }, credentials: { 'k8s-token/token': `${rwToken}\n` } });
  tt.teardown(() => c.close());
  tt.equal(text(await c.getSecret({ key: 'db', property: 'username' })), 'app');
  const bad = await client({ spec: s, credentials: { 'k8s-token/token': 'nope' } });
  const err = await caught(bad.getSecret({ key: 'db' }));
  tt.equal(err.code, 'AuthFailed');
  tt.match(err.message, /token in Secret "k8s-token" \(key "token"\)/);
  await bad.close();
  tt.equal((await caught(client({ spec: s, credentials: {} }).then((x) => x.getSecret({ key: 'db' })))).code, 'AuthFailed', 'an unmounted credential');
});

function kubeconfig(token: string, extraCluster = '', extraUser = ''): string {
  return [
    'apiVersion: v1', 'kind: Config', 'current-context: c',
    'clusters:', '- name: k', '  cluster:', `    server: ${cp.server}`, `    certificate-authority-data: ${caBundle}`, extraCluster,
    'users:', '- name: u', '  user:', `    token: ${token}`, extraUser,
    'contexts:', '- name: c', '  context: {cluster: k, user: u}', '',
  ].filter((l) => l !== '').join('\n');
}

t.test('authRef: a kubeconfig from a mounted Secret', async (tt) => {
  const s: KubernetesProvider = { remoteNamespace: ns, authRef: { name: 'kc', key: 'config' } };
  const c = await client({ spec: s, token: async () => { throw new Error('unused'); }, credentials: { 'kc/config': kubeconfig(rwToken) } });
  tt.teardown(() => c.close());
  tt.equal(text(await c.getSecret({ key: 'db', property: 'username' })), 'app');
  const refused = async (cluster: string, user: string) => caught(client({ spec: s, credentials: { 'kc/config': kubeconfig(rwToken, cluster, user) } }));
  const insecure = await refused('    insecure-skip-tls-verify: true', '');
  tt.equal(insecure.code, 'Unsupported');
  tt.match(insecure.message, /insecure-skip-tls-verify turns TLS verification off/);
  const exec = await refused('', '    exec: {command: /bin/sh, apiVersion: client.authentication.k8s.io/v1}');
  tt.match(exec.message, /users\[u\]\.exec runs a program/);
  const garbage = await caught(client({ spec: s, credentials: { 'kc/config': `: [${rwToken}` } }));
  tt.equal(garbage.code, 'InvalidSpec');
  tt.notMatch(garbage.message, rwToken, 'a parse error does not quote the kubeconfig');
});

// ---------------------------------------------------------------- TLS and the network

function openssl(dir: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

/** A throwaway CA with a server cert for 127.0.0.1 and a client cert `CN=esi-client`. */
function pki(): { ca: string; serverCert: string; serverKey: string; clientCert: string; clientKey: string } {
  const dir = mkdtempSync(join(tmpdir(), 'esi-k8s-pki-'));
  openssl(dir, 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=esi-test-ca');
  for (const [name, subj, ext] of [['server', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1'], ['client', '/CN=esi-client', 'extendedKeyUsage=clientAuth']] as const) {
    writeFileSync(join(dir, `${name}.ext`), `${ext}\n`);
    openssl(dir, 'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subj);
    openssl(dir, 'x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '1', '-extfile', `${name}.ext`);
  }
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');
  try {
    return { ca: read('ca.crt'), serverCert: read('server.crt'), serverKey: read('server.key'), clientCert: read('client.crt'), clientKey: read('client.key') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

t.test('TLS: a CA that does not match is refused; caProvider Secret / ConfigMap', async (tt) => {
  const other = pki();
  const wrong = await client({ spec: spec({ server: { url: cp.server, caBundle: Buffer.from(other.ca).toString('base64') } }) });
  const err = await caught(wrong.getSecret({ key: 'db' }));
  tt.equal(err.code, 'Unreachable');
  tt.match(err.message, /TLS verification of the Kubernetes API at https:\/\/127\.0\.0\.1:\d+ failed/);
  await wrong.close();

  const viaSecret = spec({ server: { url: cp.server, caProvider: { type: 'Secret', name: 'api-ca', key: 'ca.crt' } } });
  const s = await client({ spec: viaSecret, credentials: { 'api-ca/ca.crt': cp.caPem } });
  tt.equal(text(await s.getSecret({ key: 'db', property: 'username' })), 'app', 'CA from a Secret');
  await s.close();

  const viaConfigMap = spec({ server: { url: cp.server, caProvider: { type: 'ConfigMap', name: 'kube-root-ca.crt', key: 'ca.crt' } } });
  const unsupported = await caught(client({ spec: viaConfigMap }));
  tt.equal(unsupported.code, 'Unsupported');
  tt.match(unsupported.message, /ConfigMap "kube-root-ca.crt"/);
  const ctx = testContext({ storeId, spec: viaConfigMap, namespace: ns, token: async () => rwToken });
  const withReader = Object.assign(ctx, { readConfigMap: async () => Buffer.from(cp.caPem) });
  const cm = await provider.newClient(withReader);
  tt.equal(text(await cm.getSecret({ key: 'db', property: 'username' })), 'app', 'CA from a ConfigMap, when the context can read one');
  await cm.close();
});

t.test('auth.cert: the client certificate is presented (TLS server requiring client certs)', async (tt) => {
  // The test apiserver has no client CA configured, so a local TLS server that demands
  // a client certificate stands in for the handshake; it answers like the API would.
  const p = pki();
  const seen: string[] = [];
  const srv = createHttpsServer({ cert: p.serverCert, key: p.serverKey, ca: p.ca, requestCert: true, rejectUnauthorized: true }, (req, res) => {
    seen.push((req.socket as TLSSocket).getPeerCertificate().subject.CN as string);
    tt.notOk(req.headers.authorization, 'no bearer token with cert auth');
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ kind: 'Secret', metadata: { name: 'x' }, data: { k: Buffer.from('via-cert').toString('base64') } }));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  tt.teardown(() => srv.close());
  const url = `https://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  const s = spec({ server: { url, caBundle: Buffer.from(p.ca).toString('base64') }, auth: { cert: { clientCert: { name: 'cc', key: 'tls.crt' }, clientKey: { name: 'cc', key: 'tls.key' } } } });
  const c = await client({ spec: s, credentials: { 'cc/tls.crt': p.clientCert, 'cc/tls.key': p.clientKey } });
  tt.equal(text(await c.getSecret({ key: 'x', property: 'k' })), 'via-cert');
  tt.same(seen, ['esi-client']);
  await c.close();
});

t.test('Unreachable and Timeout within the deadline', async (tt) => {
  const port = await freePort();
  const down = await client({ spec: spec({ server: { url: `https://127.0.0.1:${port}`, caBundle } }) });
  const refused = await caught(down.getSecret({ key: 'db' }));
  tt.equal(refused.code, 'Unreachable');
  tt.match(refused.message, /ECONNREFUSED/);
  await down.close();

  // Accepts TCP connections and never speaks TLS.
  const sockets = new Set<Socket>();
  const silent = createTcpServer((s) => sockets.add(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  tt.teardown(() => {
    for (const s of sockets) s.destroy();
    silent.close();
  });
  const hung = await client({ timeoutMs: 300, spec: spec({ server: { url: `https://127.0.0.1:${(silent.address() as AddressInfo).port}`, caBundle } }) });
  const started = Date.now();
  const timeout = await caught(hung.getSecret({ key: 'db' }));
  tt.equal(timeout.code, 'Timeout');
  tt.match(timeout.message, /within 300 ms/);
  tt.ok(Date.now() - started < 3000, 'gave up near its deadline');
  await hung.close();
});

t.test('validate(): allowed with the Role; closed clients refuse', async (tt) => {
  const c = await client();
  await c.validate();
  await c.close();
  tt.equal((await caught(c.getSecret({ key: 'db' }))).code, 'Unknown');
});

t.test('validateSpec', async (tt: Test) => {
  tt.same(validateSpec(spec()), []);
  tt.same(validateSpec({}), [], 'everything defaults (in-cluster, pod identity)');
  tt.match(validateSpec({ server: { url: 'http://x' } }).join(), /must use https/);
  tt.match(validateSpec({ remoteNamespace: 'Bad_NS' }).join(), /remoteNamespace/);
  tt.match(validateSpec({ auth: { token: { bearerToken: { name: 't' } } } }).join(), /bearerToken\.key/);
  tt.match(validateSpec({ auth: { token: { bearerToken: { name: 't', key: 'k' } }, serviceAccount: { name: 'x' } } }).join(), /one of token, serviceAccount, cert/);
  tt.match(validateSpec({ auth: { cert: { clientCert: { name: 'c', key: 'k' } } } }).join(), /clientKey/);
  tt.match(validateSpec({ server: { caProvider: { type: 'Other' as 'Secret', name: 'x', key: 'k' } } }).join(), /Secret or ConfigMap/);
  tt.match(validateSpec({ authRef: { name: 'kc', key: 'c' }, auth: { serviceAccount: { name: 'a' } } }).join(), /exclusive/);
  tt.match(validateSpec('nope').join(), /must be an object/);
  const err = await caught(provider.newClient(testContext({ storeId, spec: { server: { url: 'http://x' } } })));
  tt.equal(err.code, 'InvalidSpec');
});
