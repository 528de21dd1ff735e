// The stores reached over HTTP (their documented APIs) in an injected pod on the real node (kubelet +
// containerd, test/platform/node/): one pod annotated as a user writes it reads six
// ExternalSecrets, one per store, each store ESO's documented manifest (only the address
// pointed at the stand-in): the generic webhook provider, 1Password Connect, Doppler,
// Bitwarden Secrets Manager (TLS, its CA in caBundle), Infisical, Akeyless and CyberArk
// Conjur. The stand-ins
// run on this host and pods reach them through forwarders into the node's network
// (reachableFromPods), as a private address: the agent calls from the pod's own network
// position, so no address policy applies to it (docs/providers/webhook.md). Doppler's API
// host is the operator's, given to every agent with `esi webhook --agent-env
// DOPPLER_BASE_URL=…` (docs/providers/doppler.md). What a user checks: the app's own process
// reads each file in the pod; no value in the agent's or the webhook's log.
import { CoreV1Api, CustomObjectsApi, type V1Container, type V1Pod } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { startAkeylessStandIn } from '../../support/standins/akeyless.js';
import { startBitwardenStandIn } from '../../support/standins/bitwarden.js';
import { startConjurStandIn } from '../../support/standins/conjur.js';
import { startDopplerStandIn } from '../../support/standins/doppler.js';
import { json, serve } from '../../support/standins/http.js';
import { startInfisicalStandIn } from '../../support/standins/infisical.js';
import { startOnePasswordStandIn } from '../../support/standins/onepassword.js';
import { hashOf, logOf, nodeWithWebhook, reachableFromPods, SECRETS_DIR, until } from '../../support/fixtures/node.js';

// The first node file of a run waits for the node and the image build (see pods.test.ts).
t.setTimeout(900_000);
const CANARY = `http-node-canary-${randomBytes(4).toString('hex')}`;

// Doppler's address is the operator's, so it is known before the webhook starts.
const DP_TOKEN = `dp.st.prd.${CANARY}`;
const doppler = await startDopplerStandIn(t, DP_TOKEN, { project: 'auth-api', config: 'prd', secrets: { DB_USER: 'orders', DB_PASSWORD: `${CANARY}-dp-pw`, OTHER: 'x' } });
const { cp, node, run: RUN, webhook } = await nodeWithWebhook(t, (n) => ['--agent-env', `DOPPLER_BASE_URL=http://${n.ip}:${doppler.port}`]);
await reachableFromPods(t, node, doppler.port);
const kc = cp.kc;
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
/** The stand-in's address as pods see it. */
const inPods = async (port: number, scheme = 'http') => {
  const at = await reachableFromPods(t, node, port);
  return `${scheme}://${at.host}:${at.port}`;
};

const httpbin = await serve(t, (req, res) => {
  const u = new URL(req.url!, 'http://x');
  if (req.headers.authorization !== `Basic ${Buffer.from(`test:${CANARY}`).toString('base64')}`) return json(res, 401, {});
  if (u.pathname === '/get') return json(res, 200, { args: Object.fromEntries(u.searchParams) });
  json(res, 404, { error: 'no such path' });
});
const OP_TOKEN = `${CANARY}-op-token`;
const op = await startOnePasswordStandIn(t, OP_TOKEN, {
  staging: [{ title: 'my-item', fields: [{ label: 'username', value: 'orders' }, { label: 'password', value: `${CANARY}-op-pw` }] }],
  production: [],
});
const BW_TOKEN = `0.machine.${CANARY}`;
const BW_ORG = '3f9c8e2a-1b7d-4c5e-9a6f-0d2e4b6c8a10';
const BW_PROJECT = '7a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
const bw = await startBitwardenStandIn(t, BW_TOKEN, BW_ORG, [{ key: 'db-password', value: `${CANARY}-bw`, projectId: BW_PROJECT }], [node.ip]);
const INF_SECRET = `${CANARY}-inf-client-secret`;
const inf = await startInfisicalStandIn(t, { universal: { clientId: 'machine-id', clientSecret: INF_SECRET } }, {
  slug: 'first-project-fujh', environment: 'dev',
  folders: { '/': { API_KEY: `${CANARY}-inf-api`, JSON_BLOB: JSON.stringify({ key: 'json-value' }) }, '/nested': { PASSWORD: `${CANARY}-inf-pw` } },
});
const AK_KEY = `${CANARY}-ak-access-key`;
const ak = await startAkeylessStandIn(t, { accessKey: { accessId: 'p-abc123', accessKey: AK_KEY } }, {
  'database-credentials': { type: 'STATIC_SECRET', versions: [`${CANARY}-ak-pw`] },
  'database-credentials-json': { type: 'STATIC_SECRET', versions: [JSON.stringify({ username: 'orders', host: 'db.example' })] },
});
const CJ_KEY = `${CANARY}-cj-api-key`;
const cj = await startConjurStandIn(t, 'conjur', { apiKey: { login: 'host/eso/app1', key: CJ_KEY } }, { 'data/app1/secret00': { value: `${CANARY}-cj-s00` } });

/** The file each ExternalSecret key lands in, and its value. */
const EXPECTED: Record<string, string> = {
  'webhook-example/foobar': 'secret',
  'op-item/key': `${CANARY}-op-pw`,
  'op-item/username': 'orders',
  'auth-api-db-url/DB_PASSWORD': `${CANARY}-dp-pw`,
  'auth-api-db-url/DB_USER': 'orders',
  'bitwarden/test': `${CANARY}-bw`,
  'infisical-managed-secrets/API_KEY': `${CANARY}-inf-api`,
  'infisical-managed-secrets/JSON_KEY': 'json-value',
  'infisical-managed-secrets/PASSWORD': `${CANARY}-inf-pw`,
  'database-credentials/password': `${CANARY}-ak-pw`,
  'database-credentials/host': 'db.example',
  'conjur/secret00': `${CANARY}-cj-s00`,
};

/** Prints `<file> <hash>` for each file it reads (`missing:<code>` if it cannot), then exits. */
function filesApp(image: string): V1Container {
  const script = [
    "const fs = require('fs'), crypto = require('crypto');",
    `for (const f of ${JSON.stringify(Object.keys(EXPECTED))}) {`,
    `  let h; try { h = crypto.createHash('sha256').update(fs.readFileSync('${SECRETS_DIR}/' + f)).digest('hex').slice(0, 16); } catch (e) { h = 'missing:' + e.code; }`,
    "  console.log(f + ' ' + h);",
    '}',
  ].join('\n');
  return {
    name: 'app', image, imagePullPolicy: 'Never', command: ['/nodejs/bin/node', '-e', script],
    securityContext: { runAsNonRoot: true, runAsUser: 65532, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
  };
}

t.test('one pod reads the webhook, 1Password, Doppler, Bitwarden, Infisical, Akeyless and Conjur stores of ESO\'s documented manifests', async (t) => {
  const ns = await createNamespace(kc, 'node-http', t, RUN);
  const secret = (name: string, stringData: Record<string, string>, labels?: Record<string, string>) =>
    core.createNamespacedSecret({ namespace: ns, body: { metadata: { name, ...(labels ? { labels } : {}) }, stringData } });
  const create = (plural: string, kind: string, name: string, spec: object) =>
    custom.createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural, body: { apiVersion: 'external-secrets.io/v1', kind, metadata: { name }, spec } });
  const store = (name: string, provider: object) => create('secretstores', 'SecretStore', name, { provider });
  const es = (name: string, storeName: string, spec: object) =>
    create('externalsecrets', 'ExternalSecret', name, { refreshInterval: '15s', secretStoreRef: { kind: 'SecretStore', name: storeName }, ...spec });
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'app' } } });

  await secret('webhook-credentials', { username: 'test', password: CANARY }, { 'external-secrets.io/type': 'webhook' });
  await store('webhook-backend', { webhook: {
    url: `${await inPods(httpbin.port)}/get?parameter={{ .remoteRef.key }}`, result: { jsonPath: '$.args.parameter' },
    headers: { 'Content-Type': 'application/json', Authorization: 'Basic {{ print .auth.username ":" .auth.password | b64enc }}' },
    secrets: [{ name: 'auth', secretRef: { name: 'webhook-credentials' } }],
  } });
  await es('webhook-example', 'webhook-backend', { target: { name: 'example-sync' }, data: [{ secretKey: 'foobar', remoteRef: { key: 'secret' } }] });

  await secret('onepassword-connect-token-staging', { token: OP_TOKEN });
  await store('onepassword', { onepassword: { connectHost: await inPods(op.port), vaults: { staging: 1, production: 2 }, auth: { secretRef: { connectTokenSecretRef: { name: 'onepassword-connect-token-staging', key: 'token' } } } } });
  await es('op-item', 'onepassword', { target: { creationPolicy: 'Owner' }, data: [{ secretKey: 'key', remoteRef: { key: 'my-item', property: 'password' } }], dataFrom: [{ extract: { key: 'my-item' } }] });

  await secret('doppler-token-auth-api', { dopplerToken: DP_TOKEN });
  await store('doppler-auth-api', { doppler: { auth: { secretRef: { dopplerToken: { name: 'doppler-token-auth-api' } } } } });
  await es('auth-api-db-url', 'doppler-auth-api', { target: { name: 'auth-api-db-url' }, data: [{ secretKey: 'DB_PASSWORD', remoteRef: { key: 'DB_PASSWORD' } }], dataFrom: [{ find: { path: 'DB_' } }] });

  await secret('bitwarden-access-token', { token: BW_TOKEN });
  await store('bitwarden-secretsmanager', { bitwardensecretsmanager: {
    apiURL: 'https://api.bitwarden.com', identityURL: 'https://identity.bitwarden.com', bitwardenServerSDKURL: await inPods(bw.port, 'https'),
    caBundle: Buffer.from(bw.caPem).toString('base64'), organizationID: BW_ORG, projectID: BW_PROJECT,
    auth: { secretRef: { credentials: { name: 'bitwarden-access-token', key: 'token' } } },
  } });
  await es('bitwarden', 'bitwarden-secretsmanager', { data: [{ secretKey: 'test', remoteRef: { key: 'db-password' } }] });

  await secret('universal-auth-credentials', { clientId: 'machine-id', clientSecret: INF_SECRET });
  await store('infisical', { infisical: {
    auth: { universalAuthCredentials: { clientId: { key: 'clientId', name: 'universal-auth-credentials' }, clientSecret: { key: 'clientSecret', name: 'universal-auth-credentials' } } },
    secretsScope: { projectSlug: 'first-project-fujh', environmentSlug: 'dev' }, hostAPI: `${await inPods(inf.port)}/api`,
  } });
  await es('infisical-managed-secrets', 'infisical', { target: { name: 'auth-api' }, data: [
    { secretKey: 'API_KEY', remoteRef: { key: 'API_KEY' } },
    { secretKey: 'JSON_KEY', remoteRef: { key: 'JSON_BLOB', property: 'key' } },
    { secretKey: 'PASSWORD', remoteRef: { key: '/nested/PASSWORD' } },
  ] });

  await secret('akeylss-secret-creds', { accessId: 'p-abc123', accessType: 'api_key', accessTypeParam: AK_KEY });
  const akRef = (key: string) => ({ name: 'akeylss-secret-creds', key });
  await store('akeyless-secret-store', { akeyless: { akeylessGWApiURL: await inPods(ak.port), authSecretRef: { secretRef: { accessID: akRef('accessId'), accessType: akRef('accessType'), accessTypeParam: akRef('accessTypeParam') } } } });
  await es('database-credentials', 'akeyless-secret-store', { target: { name: 'database-credentials', creationPolicy: 'Owner' },
    data: [{ secretKey: 'password', remoteRef: { key: 'database-credentials' } }], dataFrom: [{ extract: { key: 'database-credentials-json' } }] });

  await secret('user', { 'conjur-hostid': 'host/eso/app1' });
  await secret('apikey', { 'conjur-apikey': CJ_KEY });
  await store('conjur', { conjur: { url: await inPods(cj.port), auth: { apikey: { account: 'conjur', userRef: { name: 'user', key: 'conjur-hostid' }, apiKeyRef: { name: 'apikey', key: 'conjur-apikey' } } } } });
  await es('conjur', 'conjur', { data: [{ secretKey: 'secret00', remoteRef: { key: 'data/app1/secret00' } }] });

  const names = [...new Set(Object.keys(EXPECTED).map((f) => f.split('/')[0]!))];
  const body: V1Pod = {
    metadata: { name: 'reader', labels: { 'esi.dev/inject': 'true' }, annotations: { 'esi.dev/secrets': names.join(','), 'esi.dev/mode': 'init-only' } },
    spec: { serviceAccountName: 'app', restartPolicy: 'Never', terminationGracePeriodSeconds: 1, containers: [filesApp(node.esiImage)] },
  };
  // The webhook resolves the stores and ExternalSecrets from its watch: retry until it has seen them.
  await until('the pod admitted', async () => core.createNamespacedPod({ namespace: ns, body }).then(() => true, () => undefined), 30_000);
  let last: V1Pod | undefined;
  await until('the pod Succeeded', async () => {
    last = await core.readNamespacedPod({ namespace: ns, name: 'reader' });
    if (last.status?.phase === 'Failed') throw new Error('the pod failed');
    return last.status?.phase === 'Succeeded' ? last : undefined;
  }, 180_000).catch(async (err: Error) => {
    const agentLog = (await logOf(kc, ns, 'reader', 'esi-agent')).split('\n').slice(-8).join('\n');
    throw new Error(`${err.message}; statuses: ${JSON.stringify([...(last?.status?.initContainerStatuses ?? []), ...(last?.status?.containerStatuses ?? [])])}; agent log tail: ${agentLog}`);
  });
  const log = await until('the app log', async () => (await logOf(kc, ns, 'reader', 'app')) || undefined);
  const seen = Object.fromEntries(log.trim().split('\n').map((l) => l.split(' ') as [string, string]));
  t.same(seen, Object.fromEntries(Object.entries(EXPECTED).map(([f, v]) => [f, hashOf(v)])), "the app's own process read each store's value from its file");
  for (const [what, s] of [['webhook', httpbin], ['1Password', op], ['Doppler', doppler], ['Bitwarden', bw], ['Infisical', inf], ['Akeyless', ak], ['Conjur', cj]] as const) {
    t.ok(s.seen.length > 0, `the pod's agent called the ${what} stand-in`);
  }
  const agentLog = await logOf(kc, ns, 'reader', 'esi-agent');
  t.notOk(`${log}${agentLog}${webhook.output()}`.includes(CANARY), 'no value or credential in the app, agent or webhook log');
});
