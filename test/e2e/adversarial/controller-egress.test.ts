// The controller as a confused deputy on the network (SECURITY.md, "The controller's network
// boundary"), probed as a tenant (tenant RBAC, the real apiserver): a tenant's stores and
// generators aim the controller at loopback services it may reach and the tenant may not.
// "Internal" services here are loopback stand-ins that count requests; each answers the
// way a naive vault client would take as a KV v1 read (a `data` object with a canary).
// - strict controller (the default policy): vault/openBao, VaultDynamicSecret, kubernetes
//   and grpc stores at 127.0.0.1 are refused, nothing reaches the services, no Secret;
// - a tenant-shaped URL (query, fragment) is InvalidSpec before any request;
// - with the operator's allow-list naming 127.0.0.1: a redirect to another origin is not
//   followed (the token never reaches it), and a failing store's own text is not quoted
//   into status or Events (a class and the HTTP status only); the allowed store works.
import t from 'tap';
import { createTenant } from '../../support/tenant.js';
import { json, serve } from '../../support/standins/http.js';
import { controllerEnv, getES, getSecret, ready, startController, until } from '../../support/fixtures/controller.js';

const CANARY = 'egress-canary-7d31c9';
const env = await controllerEnv(t);
const tenant = await createTenant(env.kc, 'ctl-egress', t);
const ns = tenant.namespace;

// The "internal service": any JSON with a data object, as a metadata server or an in-cluster
// API might answer.
const internal = await serve(t, (_req, res) => json(res, 200, { data: { password: `${CANARY}-internal` }, auth: { client_token: `${CANARY}-tok` } }));
// A server that redirects every request to another origin (localhost is not 127.0.0.1 as an origin).
const elsewhere = await serve(t, (_req, res) => json(res, 200, { data: { password: `${CANARY}-elsewhere` } }));
const redirector = await serve(t, (req, res) => {
  res.writeHead(307, { Location: `http://localhost:${elsewhere.port}${req.url}` });
  res.end();
});
// A server that fails with its own text: an exfiltration channel if quoted into status.
const chatty = await serve(t, (_req, res) => json(res, 500, { errors: [`${CANARY}-quoted-text`] }));

const custom = (plural: string, body: object, group = 'external-secrets.io', version = 'v1') =>
  tenant.custom.createNamespacedCustomObject({ group, version, namespace: ns, plural, body: { apiVersion: `${group}/${version}`, ...body } });

await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'vault-token' }, stringData: { token: `${CANARY}-token` } } });
const vaultAt = (server: string) => ({ server, path: 'secret', version: 'v1', auth: { tokenSecretRef: { name: 'vault-token', key: 'token' } } });
const stores: Record<string, object> = {
  'vault-internal': { vault: vaultAt(`${internal.url}/x`) },
  'openbao-internal': { openBao: vaultAt(internal.url) },
  'vault-query': { vault: vaultAt(`${internal.url}/x?`) },
  'vault-fragment': { vault: vaultAt(`${internal.url}/#`) },
  'vault-redirect': { vault: vaultAt(redirector.url) },
  'vault-chatty': { vault: vaultAt(chatty.url) },
  'kube-internal': { kubernetes: { server: { url: internal.url.replace('http:', 'https:'), caBundle: Buffer.from('-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n').toString('base64') }, remoteNamespace: 'default', auth: { token: { bearerToken: { name: 'vault-token', key: 'token' } } } } },
  'grpc-internal': { grpc: { url: internal.url } },
};
for (const [name, provider] of Object.entries(stores)) {
  await custom('secretstores', { kind: 'SecretStore', metadata: { name }, spec: { controller: env.cls, provider } });
  await custom('externalsecrets', {
    kind: 'ExternalSecret', metadata: { name },
    spec: { refreshInterval: '1h', secretStoreRef: { name, kind: 'SecretStore' }, target: { name: `${name}-out` }, data: [{ secretKey: 'password', remoteRef: { key: 'db', property: 'password' } }] },
  });
}
// A VaultDynamicSecret that hands the tenant the whole URL (`?` swallows the path ESI appends).
await custom('vaultdynamicsecrets', {
  kind: 'VaultDynamicSecret', metadata: { name: 'dyn-internal' },
  spec: { controller: env.cls, path: 'database/creds/app', provider: vaultAt(internal.url) },
}, 'generators.external-secrets.io', 'v1alpha1');
await custom('vaultdynamicsecrets', {
  kind: 'VaultDynamicSecret', metadata: { name: 'dyn-query' },
  spec: { controller: env.cls, path: 'database/creds/app', method: 'POST', parameters: { any: 'body' }, provider: vaultAt(`${internal.url}/steal?x=`) },
}, 'generators.external-secrets.io', 'v1alpha1');
for (const gen of ['dyn-internal', 'dyn-query']) {
  await custom('externalsecrets', {
    kind: 'ExternalSecret', metadata: { name: gen },
    spec: { refreshInterval: '1h', target: { name: `${gen}-out` }, dataFrom: [{ sourceRef: { generatorRef: { apiVersion: 'generators.external-secrets.io/v1alpha1', kind: 'VaultDynamicSecret', name: gen } } }] },
  });
}

const args = ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false'];
const message = (es: { status?: { conditions?: { type: string; message?: string }[] } }) => es.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';
const logs: string[] = [];
/** The ExternalSecret once its Ready message matches `re` (a later controller's verdict). */
const saying = (name: string, re: RegExp) => until(`ExternalSecret ${name} saying ${re}`, async () => {
  const es = await getES(env, ns, name);
  return re.test(message(es)) ? es : undefined;
}, 120_000);

t.test('strict (the default): loopback is refused for every provider and generator; nothing reaches it', async (t) => {
  const ctl = await startController(env.cp.kubeconfigPath, [...args, '--egress-allow='], t);
  for (const name of ['vault-internal', 'openbao-internal', 'kube-internal', 'grpc-internal', 'dyn-internal']) {
    const es = await ready(env, ns, name, 'False', undefined, 120_000);
    t.match(message(es), /127\.0\.0\.1 is a loopback or private address; .*--egress-allow/, `${name}: the reason and the switch`);
    t.notOk(await getSecret(env, ns, `${name}-out`), `${name}: no Secret`);
  }
  for (const name of ['vault-query', 'vault-fragment', 'dyn-query']) {
    const es = await ready(env, ns, name, 'False', undefined, 120_000);
    t.match(message(es), /must not have a query or fragment/, `${name}: a tenant-shaped URL is InvalidSpec`);
  }
  t.equal(internal.seen.length, 0, 'no request reached the internal service');
  await ctl.stop();
  logs.push(ctl.output());
});

t.test('opened by the operator: same-origin only, store text never quoted, the allowed store works', async (t) => {
  const ctl = await startController(env.cp.kubeconfigPath, [...args, '--egress-allow=127.0.0.1', '--provider-timeout', '5s'], t);
  const redirected = await saying('vault-redirect', /a redirect/);
  t.match(message(redirected), /refused a redirect from http:\/\/127\.0\.0\.1:\d+ to another origin/, 'the redirect is named');
  t.equal(elsewhere.seen.length, 0, 'the other origin saw nothing (no token)');
  const chattyEs = await saying('vault-chatty', /answered/);
  t.match(message(chattyEs), /Vault answered 500/, 'the class and the status');
  t.notMatch(message(chattyEs), /quoted-text/, "the store's own text is not quoted");
  const events = await tenant.core.listNamespacedEvent({ namespace: ns });
  t.notMatch(JSON.stringify(events.items.map((e) => e.message)), /quoted-text/, 'nor in Events');
  // Still refused: the tenant-shaped URLs, whatever is opened.
  t.match(message(await ready(env, ns, 'vault-query', 'False', undefined, 60_000)), /must not have a query or fragment/);
  // The opened address is served (here: the stand-in's KV v1 answer).
  await ready(env, ns, 'vault-internal', 'True', 'SecretSynced', 120_000);
  t.ok(internal.seen.some((r) => r.url === '/x/v1/secret/db'), 'the opened store was read at its own path');
  await ctl.stop();
  logs.push(ctl.output());
});

t.test('no canary in the controller logs', async (t) => {
  const out = logs.join('\n');
  t.ok(out.length > 0);
  t.notMatch(out, new RegExp(`${CANARY}-(internal|elsewhere|token|tok|quoted-text)`), 'no value, token or store text in the logs');
});
