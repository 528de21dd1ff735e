// ESO's generators in the reconciler, on the real apiserver, as a tenant: ESO's documented
// manifests (examples/generators.yaml) apply unchanged and produce their Secrets — Password
// with its rules, UUID, Fake, ECRAuthorizationToken against moto's ECR — with no store;
// VaultDynamicSecret against a real OpenBao (PKI; resultType Auth and Raw of a token from
// auth/token/create); values are new at each refresh; a generatorRef reaches only the
// tenant's own namespace (and ClusterGenerators); PushSecret pushes a generated password
// (IfNotExists: once; Replace: rotated at each refresh); no generated value in logs, Events
// or status.
import t from 'tap';
import { randomBytes, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { GENERATORS_GROUP } from '../../../src/api/types.js';
import { controllerEnv, decoded, getES, GROUP, ready, startController, until } from '../../support/fixtures/controller.js';
import { kubernetesStore, remoteData } from '../../support/fixtures/push.js';
import { createNamespace } from '../../support/kube.js';
import { createTenant, type Tenant } from '../../support/tenant.js';
import { ROOT } from '../../support/webhook.js';
import { startMoto, useMotoEndpoint } from '../../support/platform/backends/moto.js';
import { createToken, startVaultServer, writePolicy } from '../../support/platform/backends/openbao.js';

const CANARY = `gen-canary-${randomBytes(4).toString('hex')}`;
const env = await controllerEnv(t);
const run = randomBytes(3).toString('hex');
// Generator-only ExternalSecrets have no store, so no store class: this controller serves the
// unclassed ones, in this test's namespaces only (the others' controllers never see them).
const tenant = await createTenant(env.kc, 'ctl-gen', t, { 'esi-gen-run': run });
const other = await createNamespace(env.kc, 'ctl-gen-other', t, { 'esi-gen-run': run });
const ns = tenant.namespace;
const moto = await startMoto(t);
useMotoEndpoint(t, moto); // inherited by the controller
// Raw and Auth results of the tenant's own VaultDynamicSecrets are an operator's choice (off
// by default, shown in test/e2e/adversarial/controller-generator-bounds.test.ts); this operator allows them.
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--leader-elect=false', '--coalesce-window', '0s', '--namespace-selector', `esi-gen-run=${run}`,
  '--allow-generator-raw-results=true'], t);

interface Doc {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: Record<string, unknown>;
}

const plural = (kind: string) => ({ ExternalSecret: 'externalsecrets', Password: 'passwords', UUID: 'uuids', Fake: 'fakes', ECRAuthorizationToken: 'ecrauthorizationtokens', VaultDynamicSecret: 'vaultdynamicsecrets', PushSecret: 'pushsecrets' })[kind]!;

/** Creates `doc` as `who` (the tenant unless said otherwise) and returns what the apiserver stored. */
async function createAs(who: { custom: CustomObjectsApi }, namespace: string, doc: Doc): Promise<Doc> {
  const [group, version] = doc.apiVersion.split('/') as [string, string];
  return (await who.custom.createNamespacedCustomObject({ group, version, namespace, plural: plural(doc.kind), body: doc })) as Doc;
}

const gen = (kind: string, name: string, spec: object): Doc => ({ apiVersion: `${GENERATORS_GROUP}/v1alpha1`, kind, metadata: { name }, spec: spec as Record<string, unknown> });
const ref = (kind: string, name: string) => ({ sourceRef: { generatorRef: { apiVersion: `${GENERATORS_GROUP}/v1alpha1`, kind, name } } });
const es = (name: string, spec: object): Doc => ({ apiVersion: `${GROUP}/v1`, kind: 'ExternalSecret', metadata: { name }, spec: { refreshInterval: '1h', ...spec } });
const secretOf = async (tn: Tenant, name: string) => tn.core.readNamespacedSecret({ namespace: tn.namespace, name }).catch(() => undefined);

const examples = parseAllDocuments(await readFile(join(ROOT, 'examples', 'generators.yaml'), 'utf8')).map((d) => d.toJS() as Doc);

t.test('ESO\'s documented generator manifests apply unchanged and produce their Secrets (no store)', async (t) => {
  await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'aws-creds' }, stringData: { 'access-key': 'AKIAGENTEST', 'secret-access-key': 'gen-test-secret' } } });
  for (const doc of examples) {
    const stored = await createAs(tenant, ns, doc);
    t.strictSame(stored.spec, doc.spec, `${doc.kind}/${doc.metadata.name} stored exactly as written`);
  }
  for (const name of ['password', 'uuid', 'fake', 'ecr-secret']) await ready(env, ns, name, 'True', 'SecretSynced');

  const pw = decoded(await secretOf(tenant, 'password-secret')).password ?? '';
  t.equal(pw.length, 42, 'length 42');
  t.equal([...pw].filter((c) => '0123456789'.includes(c)).length, 5, '5 digits');
  t.equal([...pw].filter((c) => '-_$@'.includes(c)).length, 5, '5 of the given symbols');
  t.match(pw, /^[A-Za-z0-9\-_$@]+$/, 'nothing else');
  t.match(decoded(await secretOf(tenant, 'uuid-secret')).uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  t.same(decoded(await secretOf(tenant, 'fake-secret')), { foo: 'bar', baz: 'bang' });

  const ecr = await secretOf(tenant, 'ecr-secret');
  t.equal(ecr?.type, 'kubernetes.io/dockerconfigjson');
  const config = JSON.parse(decoded(ecr)['.dockerconfigjson'] ?? '{}') as { auths: Record<string, { username: string; password: string }> };
  const [registry, auth] = Object.entries(config.auths)[0] ?? [];
  t.match(registry, /^https:\/\/\d{12}\.dkr\.ecr\.eu-west-1\.amazonaws\.com$/, 'moto\'s registry for the generator\'s region');
  t.equal(auth?.username, 'AWS');
  t.ok((auth?.password ?? '').length > 10, 'a registry password');
  const status = (await getES(env, ns, 'password')).status;
  t.match(status?.conditions?.[0]?.message, /in sync with generator Password "my-password"/);
  t.notMatch(JSON.stringify(status), pw, 'no password in status');
});

t.test('each refresh produces new values (ESO: generators keep no state)', async (t) => {
  await createAs(tenant, ns, gen('Password', 'rotating', { length: 16 }));
  await createAs(tenant, ns, es('rotating', { refreshInterval: '2s', dataFrom: [ref('Password', 'rotating')] }));
  await ready(env, ns, 'rotating', 'True');
  const first = decoded(await secretOf(tenant, 'rotating')).password;
  t.equal(first?.length, 16);
  const next = await until('a new password at a refresh', async () => {
    const p = decoded(await secretOf(tenant, 'rotating')).password;
    return p && p !== first ? p : undefined;
  }, 60_000);
  t.equal(next.length, 16);
});

t.test('a ClusterGenerator is found from every namespace; its values are made for the referring one', async (t) => {
  const name = `gen-${run}`;
  const cluster = env.kc.makeApiClient(CustomObjectsApi);
  await cluster.createClusterCustomObject({ group: GENERATORS_GROUP, version: 'v1alpha1', plural: 'clustergenerators', body: {
    apiVersion: `${GENERATORS_GROUP}/v1alpha1`, kind: 'ClusterGenerator', metadata: { name },
    spec: { kind: 'Password', generator: { passwordSpec: { length: 42, digits: 5, symbols: 5, symbolCharacters: '-_$@', noUpper: false, allowRepeat: true } } },
  } });
  t.teardown(() => cluster.deleteClusterCustomObject({ group: GENERATORS_GROUP, version: 'v1alpha1', plural: 'clustergenerators', name }).catch(() => undefined));
  await createAs(tenant, ns, es('from-cluster', { dataFrom: [ref('ClusterGenerator', name)] }));
  await ready(env, ns, 'from-cluster', 'True');
  t.equal(decoded(await secretOf(tenant, 'from-cluster')).password?.length, 42);
});

t.test('tenant boundary: a generator in another namespace is not found; ECR credentials only from the own namespace', async (t) => {
  const admin = { custom: env.custom };
  await createAs(admin, other, gen('Fake', 'theirs', { data: { stolen: CANARY } }));
  await createAs(tenant, ns, es('cross', { dataFrom: [ref('Fake', 'theirs')] }));
  const crossEs = await ready(env, ns, 'cross', 'False', 'SecretSyncedError');
  t.match(crossEs.status?.conditions?.[0]?.message, new RegExp(`Fake "${ns}/theirs" not found`), 'looked up in the tenant\'s namespace only');
  t.notOk(await secretOf(tenant, 'cross'), 'no Secret');

  const core = env.kc.makeApiClient(CoreV1Api);
  await core.createNamespacedSecret({ namespace: other, body: { metadata: { name: 'their-aws' }, stringData: { id: 'AKIATHEIRS', secret: CANARY } } });
  await createAs(tenant, ns, gen('ECRAuthorizationToken', 'borrowed', { region: 'us-east-1', auth: { secretRef: {
    accessKeyIDSecretRef: { name: 'their-aws', key: 'id', namespace: other }, secretAccessKeySecretRef: { name: 'their-aws', key: 'secret', namespace: other },
  } } }));
  await createAs(tenant, ns, es('borrowed', { dataFrom: [ref('ECRAuthorizationToken', 'borrowed')] }));
  const borrowed = await ready(env, ns, 'borrowed', 'False');
  t.match(borrowed.status?.conditions?.[0]?.message, new RegExp(`references Secret "${other}/their-aws" in another namespace; ESI reads store credentials only from namespace "${ns}"`));

  // The ECR generator never lends the controller's own identity (no auth: web identity).
  await createAs(tenant, ns, gen('ECRAuthorizationToken', 'ambient', { region: 'us-east-1' }));
  await createAs(tenant, ns, es('ambient', { dataFrom: [ref('ECRAuthorizationToken', 'ambient')] }));
  t.match((await ready(env, ns, 'ambient', 'False')).status?.conditions?.[0]?.message, /never lends its own|names no ServiceAccount|aws\.role is required/);
});

t.test('VaultDynamicSecret: a certificate minted by OpenBao\'s PKI engine through the provider\'s leases.generate', async (t) => {
  const vault = await startVaultServer(t);
  await vault.api('POST', 'sys/mounts/pki', { type: 'pki', config: { max_lease_ttl: '87600h' } });
  await vault.api('POST', 'pki/root/generate/internal', { common_name: 'esi-gen-root', ttl: '8760h' });
  await vault.api('POST', 'pki/roles/web', { allowed_domains: 'example.test', allow_subdomains: true, max_ttl: '72h', generate_lease: true });
  await writePolicy(vault, 'gen-pki', 'path "pki/issue/web" { capabilities = ["update"] }');
  const token = await createToken(vault, ['gen-pki']);
  await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'bao-token' }, stringData: { token } } });
  // ESO's documented shape (a path, a method, the vault provider), for the PKI engine.
  await createAs(tenant, ns, gen('VaultDynamicSecret', 'cert', {
    path: '/pki/issue/web', method: 'POST', parameters: { common_name: 'app.example.test', ttl: '1h' },
    provider: { server: vault.addr, auth: { tokenSecretRef: { name: 'bao-token', key: 'token' } } },
  }));
  await createAs(tenant, ns, es('cert', { dataFrom: [ref('VaultDynamicSecret', 'cert')] }));
  await ready(env, ns, 'cert', 'True');
  const data = decoded(await secretOf(tenant, 'cert'));
  t.match(data.certificate, /^-----BEGIN CERTIFICATE-----/);
  t.match(data.private_key, /PRIVATE KEY-----/);
  t.equal(new X509Certificate(data.certificate!).subject.includes('CN=app.example.test'), true, 'the certificate asked for');
  t.notOk(ctl.output().includes(data.private_key!.split('\n')[1]!), 'no key material in the logs');
});

t.test('VaultDynamicSecret resultType Auth (a token from auth/token/create) and Raw (the whole response), as ESO converts them', async (t) => {
  const vault = await startVaultServer(t);
  await writePolicy(vault, 'gen-child', 'path "auth/token/lookup-self" { capabilities = ["read"] }');
  await writePolicy(vault, 'gen-tokens', 'path "auth/token/create" { capabilities = ["update"] }');
  await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'bao-minter' }, stringData: { token: await createToken(vault, ['gen-tokens', 'gen-child']) } } });
  const spec = (resultType: string) => ({ path: 'auth/token/create', method: 'POST', parameters: { policies: ['gen-child'], ttl: '10m' }, resultType,
    provider: { server: vault.addr, auth: { tokenSecretRef: { name: 'bao-minter', key: 'token' } } } });
  for (const kind of ['Auth', 'Raw']) {
    await createAs(tenant, ns, gen('VaultDynamicSecret', `token-${kind.toLowerCase()}`, spec(kind)));
    await createAs(tenant, ns, es(`token-${kind.toLowerCase()}`, { dataFrom: [ref('VaultDynamicSecret', `token-${kind.toLowerCase()}`)] }));
  }
  await ready(env, ns, 'token-auth', 'True');
  await ready(env, ns, 'token-raw', 'True');
  const policiesOf = async (token: string) => ((await vault.api('GET', 'auth/token/lookup-self', undefined, token)).body!.data as { policies: string[] }).policies;

  const auth = decoded(await secretOf(tenant, 'token-auth'));
  t.same(await policiesOf(auth.client_token!), ['default', 'gen-child'], 'Auth: the Secret\'s client_token is a working token with the asked policies');
  t.same(JSON.parse(auth.policies!), ['default', 'gen-child'], 'lists as JSON');
  t.match(auth, { lease_duration: '600', renewable: 'true', orphan: 'false' }, 'numbers and booleans as written');

  const raw = decoded(await secretOf(tenant, 'token-raw'));
  t.match(raw, { request_id: /^[0-9a-f-]{36}$/, lease_duration: '0', renewable: 'false', data: '' }, 'Raw: the response\'s fields; its null data as an empty value');
  const rawAuth = JSON.parse(raw.auth!) as { client_token: string; lease_duration: number };
  t.equal(rawAuth.lease_duration, 600, 'the auth section as JSON');
  t.same(await policiesOf(rawAuth.client_token), ['default', 'gen-child'], 'with a working token');
  const logs = ctl.output();
  t.notOk(logs.includes(auth.client_token!) || logs.includes(rawAuth.client_token), 'no minted token in the controller\'s logs');
});

t.test('refused generator specs say what to fix', async (t) => {
  await createAs(tenant, ns, gen('Password', 'impossible', { length: 8, digits: 6, symbols: 6 }));
  await createAs(tenant, ns, es('impossible', { dataFrom: [ref('Password', 'impossible')] }));
  t.match((await ready(env, ns, 'impossible', 'False')).status?.conditions?.[0]?.message,
    new RegExp(`Password "${ns}/impossible": spec.digits \\(6\\) \\+ spec.symbols \\(6\\) exceed spec.length \\(8\\)`));
  // Generators are not watched: the failed sync is retried, and sees the fixed generator.
  await tenant.custom.patchNamespacedCustomObject({ group: GENERATORS_GROUP, version: 'v1alpha1', namespace: ns, plural: 'passwords', name: 'impossible', body: [{ op: 'replace', path: '/spec/length', value: 20 }] });
  await ready(env, ns, 'impossible', 'True', 'SecretSynced', 120_000);
  t.equal(decoded(await secretOf(tenant, 'impossible')).password?.length, 20, 'the fixed rules');
  await createAs(tenant, ns, es('unserved-kind', { dataFrom: [ref('Grafana', 'g')] }));
  t.match((await ready(env, ns, 'unserved-kind', 'False', 'InvalidSpec')).status?.conditions?.[0]?.message, /generatorRef\.kind "Grafana" is not a generator ESI runs/);
});

t.test('VaultDynamicSecret: a sys/ path behind a Vault namespace prefix is InvalidSpec before any request (docs/dynamic-secrets.md#engine-paths)', async (t) => {
  // A listener that records every connection: the refused path must open none.
  const { createServer } = await import('node:http');
  let requests = 0;
  const server = createServer((_req, res) => {
    requests++;
    res.end('{}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const addr = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'bao-lookup' }, stringData: { token: 'not-a-real-token' } } });
  for (const [name, path] of [['lookup', 'ns1/sys/leases/lookup'], ['climb', 'database/%2e%2e/sys/leases/lookup']] as const) {
    await createAs(tenant, ns, gen('VaultDynamicSecret', name, {
      path, method: 'POST', resultType: 'Raw', parameters: { lease_id: 'x' },
      provider: { server: addr, auth: { tokenSecretRef: { name: 'bao-lookup', key: 'token' } } },
    }));
    await createAs(tenant, ns, es(name, { dataFrom: [ref('VaultDynamicSecret', name)] }));
    const message = (await ready(env, ns, name, 'False')).status?.conditions?.[0]?.message ?? '';
    t.ok(message.includes(`dynamic secret path ${JSON.stringify(path)}`), `${path}: the message names the path (${message})`);
    t.match(message, /(has a "sys" segment|contains percent-encoding).*\[InvalidSpec\]/, 'and says why: InvalidSpec');
  }
  t.equal(requests, 0, 'no request reached the server');
});

t.test('PushSecret selector.generatorRef: IfNotExists pushes once, Replace rotates at each refresh', async (t) => {
  const { store, remote } = await kubernetesStore(env, t, ns, 'sink');
  await tenant.custom.createNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'secretstores', body: { apiVersion: `${GROUP}/v1`, ...store } });
  await createAs(tenant, ns, gen('Password', 'seed', { length: 20, digits: 4, symbols: 0 }));
  const push = (name: string, updatePolicy: string): Doc => ({
    apiVersion: `${GROUP}/v1alpha1`, kind: 'PushSecret', metadata: { name },
    spec: {
      refreshInterval: '2s', updatePolicy, secretStoreRefs: [{ name: 'sink', kind: 'SecretStore' }],
      selector: { generatorRef: { apiVersion: `${GENERATORS_GROUP}/v1alpha1`, kind: 'Password', name: 'seed' } },
      data: [{ match: { secretKey: 'password', remoteRef: { remoteKey: name, property: 'password' } } }],
    },
  });
  await createAs(tenant, ns, push('once', 'IfNotExists'));
  await createAs(tenant, ns, push('rotated', 'Replace'));
  const value = (name: string) => remoteData(env, remote, name).then((d) => d?.password);
  const once = await until('the generated password pushed (IfNotExists)', () => value('once'), 60_000);
  t.equal(once.length, 20);
  const rotated0 = await until('the generated password pushed (Replace)', () => value('rotated'), 60_000);
  const rotated1 = await until('a new password pushed at a refresh (Replace)', async () => {
    const v = await value('rotated');
    return v && v !== rotated0 ? v : undefined;
  }, 60_000);
  t.equal(rotated1.length, 20);
  t.equal(await value('once'), once, 'IfNotExists: the first password stays');
});

t.test('no generated value or canary in the controller\'s logs, Events or status', async (t) => {
  await createAs(tenant, ns, gen('Fake', 'canary', { data: { token: CANARY } }));
  await createAs(tenant, ns, es('canary', { dataFrom: [ref('Fake', 'canary')] }));
  await ready(env, ns, 'canary', 'True');
  t.equal(decoded(await secretOf(tenant, 'canary')).token, CANARY, 'the value reached the Secret');
  const pw = decoded(await secretOf(tenant, 'password-secret')).password!;
  const events = JSON.stringify(await env.core.listNamespacedEvent({ namespace: ns }));
  const statuses = JSON.stringify((await env.custom.listNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets' })) as object);
  for (const [what, text] of [['logs', ctl.output()], ['Events', events], ['ExternalSecret objects', statuses]] as const) {
    t.notOk(text.includes(CANARY), `no canary in ${what}`);
    t.notOk(text.includes(pw), `no generated password in ${what}`);
  }
});
