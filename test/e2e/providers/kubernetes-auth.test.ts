// The `kubernetes` provider against the real kube-apiserver of the test platform (RBAC
// on, TokenRequest): auth (pod token with rotation, static token, kubeconfig, client
// certificate), RBAC denials that name the missing permission, TLS, the network, and
// spec validation. The conformance suite and ESO's read/find/push semantics are in
// kubernetes.test.ts; shared set-up in kubernetes-fixture.ts.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { createServer as createHttpsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import t, { type Test } from 'tap';
import type { KubernetesProvider } from '../../../src/api/types.js';
import { provider, validateSpec } from '../../../src/providers/kubernetes/index.js';
import { freePort } from '../../support/platform/processes.js';
import { serviceAccountToken } from '../../support/kube.js';
import { testContext } from '../../support/provider-context.js';
import {
  CANARY, caBundle, caught, client, cp, getToken, noneToken, ns, rwToken, seedSecret, spec, storeId, text,
} from '../../support/fixtures/kubernetes.js';

// The tests below read Secret "db" (username "app"), as kubernetes.test.ts's read test
// leaves it in its own namespace.
await seedSecret('db', { username: 'app' });

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
