// Outbound proxies from the environment (src/egress/proxy.ts): the vault provider against
// the real OpenBao (http, forwarded) and the kubernetes provider against the real apiserver
// (https, a CONNECT tunnel with the store's CA verified end to end) go through a real forward
// proxy when HTTPS_PROXY/HTTP_PROXY name it, and straight to the store when NO_PROXY matches.
import t from 'tap';
import { commonConfig } from '../../../src/providers/aws/sdk.js';
import { provider as kubernetes } from '../../../src/providers/kubernetes/index.js';
import { proxyFor } from '../../../src/egress/proxy.js';
import { provider as vault } from '../../../src/providers/vault/index.js';
import { createToken, kvWrite, startVaultServer, writePolicy } from '../../support/platform/backends/openbao.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import { createNamespace, serviceAccountToken } from '../../support/kube.js';
import { startProxy, withProxyEnv } from '../../support/proxy-server.js';
import { testContext } from '../../support/provider-context.js';
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const CANARY = 'proxy-canary-4be1';

/** A CA certificate that signed nothing the tests talk to. */
function throwawayCa(): string {
  const dir = mkdtempSync(join(tmpdir(), 'esi-proxy-ca-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '1', '-subj', '/CN=esi-proxy-other-ca'], { cwd: dir, stdio: 'ignore' });
    return readFileSync(join(dir, 'ca.crt'), 'utf8');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

t.test('which addresses go through the proxy: scheme, NO_PROXY by host, suffix and port', async (t) => {
  await withProxyEnv({ HTTPS_PROXY: 'http://proxy.example:3128', HTTP_PROXY: 'http://plain.example:3128', NO_PROXY: 'vault.internal,.corp.example,10.0.0.1:8200' }, async () => {
    t.equal(proxyFor('https://secretsmanager.eu-west-1.amazonaws.com'), 'http://proxy.example:3128');
    t.equal(proxyFor('http://vault.example:8200'), 'http://plain.example:3128');
    t.equal(proxyFor('https://vault.internal:8200'), undefined);
    t.equal(proxyFor('https://kv.corp.example'), undefined);
    t.equal(proxyFor('http://10.0.0.1:8200'), undefined);
    t.equal(proxyFor('http://10.0.0.1:8201'), 'http://plain.example:3128');
  });
  await withProxyEnv({}, async () => t.equal(proxyFor('https://example.com'), undefined, 'no variable: direct'));
  await withProxyEnv({ HTTPS_PROXY: 'http://proxy.example:3128' }, async () => {
    const cfg = commonConfig({ region: 'eu-west-1', service: 'secretsmanager', credentials: async () => ({ accessKeyId: 'a', secretAccessKey: 'b' }), timeoutMs: 1000 });
    t.ok(cfg.requestHandler.httpsAgent, 'the AWS SDK gets a proxy agent for its https endpoint');
    const local = commonConfig({ region: 'eu-west-1', service: 'ssm', endpoint: 'http://127.0.0.1:5000', credentials: async () => ({ accessKeyId: 'a', secretAccessKey: 'b' }), timeoutMs: 1000 });
    t.notOk(local.requestHandler.httpAgent ?? local.requestHandler.httpsAgent, 'an http endpoint with only HTTPS_PROXY set: direct');
  });
});

t.test('vault through HTTP_PROXY (the real OpenBao), and direct under NO_PROXY', async (t) => {
  const server = await startVaultServer(t);
  await writePolicy(server, 'proxy-read', 'path "secret/*" { capabilities = ["read", "list"] }');
  const token = await createToken(server, ['proxy-read']);
  await kvWrite(server, 'secret', 2, 'proxied/db', { password: CANARY });
  const proxy = await startProxy(t);
  const spec = { server: server.addr, path: 'secret', version: 'v2', auth: { tokenSecretRef: { name: 'vault-token', key: 'token' } } };
  const read = async () => {
    const c = await vault.newClient(testContext({ storeId: 'SecretStore/proxy/vault', spec, credentials: { 'vault-token/token': token } }));
    try {
      return text(await c.getSecret({ key: 'proxied/db', property: 'password' }));
    } finally {
      await c.close();
    }
  };
  const host = new URL(server.addr).host;
  t.equal(await withProxyEnv({ HTTP_PROXY: proxy.url }, read), CANARY);
  t.ok(proxy.seen.some((s) => s.endsWith(host)), `the proxy forwarded the calls to ${host}: ${proxy.seen.join(', ')}`);
  const before = proxy.seen.length;
  t.equal(await withProxyEnv({ HTTP_PROXY: proxy.url, NO_PROXY: new URL(server.addr).hostname }, read), CANARY);
  t.equal(proxy.seen.length, before, 'NO_PROXY: straight to the store');
});

t.test('kubernetes over https through a CONNECT tunnel: the store CA still verifies the apiserver', async (t) => {
  const cp = await useControlPlane(t);
  const ns = await createNamespace(cp.kc, 'proxy-k8s', t);
  const core = cp.kc.makeApiClient(CoreV1Api);
  await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'db' }, stringData: { password: CANARY } } });
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'reader' } } });
  const rbac = cp.kc.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name: 'reader' }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }] } });
  await rbac.createNamespacedRoleBinding({ namespace: ns, body: {
    metadata: { name: 'reader' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
    subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns }],
  } });
  const token = await serviceAccountToken(cp.kc, ns, 'reader');
  const proxy = await startProxy(t);
  const client = (caBundle: string) => kubernetes.newClient(testContext({
    storeId: `SecretStore/${ns}/k8s`, namespace: ns, credentials: { 'sa-token/token': token },
    spec: { remoteNamespace: ns, server: { url: cp.server, caBundle }, auth: { token: { bearerToken: { name: 'sa-token', key: 'token' } } } },
  }));
  const good = Buffer.from(cp.caPem).toString('base64');
  const value = await withProxyEnv({ HTTPS_PROXY: proxy.url }, async () => {
    const c = await client(good);
    try {
      return text(await c.getSecret({ key: 'db', property: 'password' }));
    } finally {
      await c.close();
    }
  });
  t.equal(value, CANARY);
  t.ok(proxy.seen.includes(`CONNECT ${new URL(cp.server).host}`), `tunnelled: ${proxy.seen.join(', ')}`);
  // A CA that did not sign the apiserver's certificate is refused through the tunnel too.
  const wrongCa = Buffer.from(throwawayCa()).toString('base64');
  const err = await withProxyEnv({ HTTPS_PROXY: proxy.url }, async () => {
    const c = await client(wrongCa);
    try {
      await c.getSecret({ key: 'db', property: 'password' });
      return undefined;
    } catch (e) {
      return e as Error;
    } finally {
      await c.close();
    }
  });
  t.match(err?.message, /TLS verification of the Kubernetes API/);
  t.notMatch(err?.message ?? '', CANARY);
});
