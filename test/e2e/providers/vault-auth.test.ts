// The vault provider's auth methods, token lifecycle, errors and TLS against a real
// Vault-API dev server (OpenBao when built, else HashiCorp Vault;
// test/platform/backends/openbao-install.sh) and, for kubernetes and jwt auth, the real
// kube-apiserver of the shared control plane (logins go through its TokenReview). KV
// semantics are in vault.test.ts; the set-up is in vault-fixture.ts.
// Run: `npx tap test/e2e/providers/vault-auth.test.ts`.
import t from 'tap';
import { CoreV1Api } from '@kubernetes/client-node';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createNamespace, serviceAccountToken } from '../../support/kube.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import { freePort } from '../../support/platform/processes.js';
import { createToken, enableKubernetesAuth, startVaultServer, tokenCount } from '../../support/platform/backends/openbao.js';
import { provider, validateSpec } from '../../../src/providers/vault/index.js';
import { testContext } from '../../support/provider-context.js';
import { CANARY, STORE, caught, isError, run, text, vaultFixture, type Spec } from '../../support/fixtures/vault.js';

const { server, rwToken, roleId, newSecretId, approleSecretId, tokenSpec, newClient, seed } = await vaultFixture(t);

// ---------------------------------------------------------------- auth and errors

await t.test('token auth: a static token works, is not revoked on close, a wrong one is AuthFailed', async (tt) => {
  await seed('v2', `${run}-auth/plain`, { v: CANARY });
  const mine = await createToken(server, ['esi-rw']);
  const c = await newClient(tokenSpec('v2'), { credentials: { 'vault-token/token': mine } });
  tt.equal(text(await c.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY);
  await c.validate();
  await c.close();
  await server.api('GET', 'auth/token/lookup-self', undefined, mine);
  tt.pass('the user-supplied token is still valid after close()');
  isError(tt, await caught(c.getSecret({ key: `${run}-auth/plain` })), 'Unknown', { match: /closed/ });

  const bad = await newClient(tokenSpec('v2'), { credentials: { 'vault-token/token': 'hvs.CAESIwrongwrongwrongwrong' } });
  isError(tt, await caught(bad.getSecret({ key: `${run}-auth/plain` })), 'AuthFailed', { notContain: ['hvs.CAESIwrong'] });
  isError(tt, await caught(bad.validate()), 'AuthFailed');
  const missing = await newClient({ ...tokenSpec('v2'), auth: { tokenSecretRef: { name: 'absent', key: 'token' } } });
  isError(tt, await caught(missing.getSecret({ key: `${run}-auth/plain` })), 'AuthFailed', { match: /absent\/token/ });
});

await t.test('a policy that denies the path is Forbidden (not AuthFailed)', async (tt) => {
  await seed('v2', 'allowed/ok', { v: 'fine' });
  await seed('v2', `${run}-auth/denied`, { v: CANARY });
  const narrow = await createToken(server, ['esi-narrow']);
  const c = await newClient(tokenSpec('v2'), { credentials: { 'vault-token/token': narrow } });
  tt.equal(text(await c.getSecret({ key: 'allowed/ok', property: 'v' })), 'fine');
  isError(tt, await caught(c.getSecret({ key: `${run}-auth/denied` })), 'Forbidden', { key: `${run}-auth/denied`, match: /policy/ });
  isError(tt, await caught(c.getAllSecrets({ path: 'allowed' })), 'Forbidden');
  await c.close();
});

await t.test('appRole auth: roleId or roleRef; a wrong secret id is AuthFailed without echoing it', async (tt) => {
  const spec = (appRole: Spec) => ({ ...tokenSpec('v2'), auth: { appRole } });
  const creds = { 'approle/secret-id': approleSecretId, 'approle/role-id': roleId };
  const a = await newClient(spec({ roleId, secretRef: { name: 'approle', key: 'secret-id' } }), { credentials: creds });
  tt.equal(text(await a.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY);
  const b = await newClient(spec({ path: 'approle', roleRef: { name: 'approle', key: 'role-id' }, secretRef: { name: 'approle', key: 'secret-id' } }), { credentials: creds });
  tt.equal(text(await b.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY);
  const wrongSecret = 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee';
  const bad = await newClient(spec({ roleId, secretRef: { name: 'approle', key: 'secret-id' } }), { credentials: { 'approle/secret-id': wrongSecret } });
  isError(tt, await caught(bad.getSecret({ key: `${run}-auth/plain` })), 'AuthFailed', { match: /appRole login/, notContain: [wrongSecret, roleId] });
  await Promise.all([a.close(), b.close(), bad.close()]);
});

await t.test('token lifecycle: one token per client across renewals and re-logins, revoked on close', async (tt) => {
  // A role whose tokens live 3 s and at most 9 s: over 12 s of reads the client must
  // renew several times and log in again once renewal hits the max TTL.
  await server.api('POST', 'auth/approle/role/short', { token_policies: ['esi-rw'], token_ttl: '3s', token_max_ttl: '9s' });
  const rid = ((await server.api('GET', 'auth/approle/role/short/role-id')).body!.data as { role_id: string }).role_id;
  const sid = await newSecretId('short');
  const before = await tokenCount(server);
  const c = await newClient({ ...tokenSpec('v2'), auth: { appRole: { roleId: rid, secretRef: { name: 'short', key: 'sid' } } } }, { credentials: { 'short/sid': sid } });
  let [reads, wrong, most] = [0, 0, 0];
  const end = Date.now() + 12_000;
  while (Date.now() < end) {
    if (text(await c.getSecret({ key: `${run}-auth/plain`, property: 'v' })) !== CANARY) wrong++;
    reads++;
    if (reads % 10 === 0) most = Math.max(most, (await tokenCount(server)) - before);
    await new Promise((r) => setTimeout(r, 100));
  }
  await new Promise((r) => setTimeout(r, 300));
  const during = (await tokenCount(server)) - before;
  const stats = c.tokenStats;
  tt.comment(`${reads} reads, ${stats.logins} logins, ${stats.renewals} renewals, at most ${most} extra tokens`);
  tt.ok(reads > 50, 'many reads');
  tt.equal(wrong, 0, 'every read returned the value');
  tt.equal(during, 1, 'exactly one live token for the client after all those reads');
  tt.ok(most <= 2, 'never more than the current token plus one being replaced');
  tt.ok(stats.renewals >= 2, 'the token was renewed before its TTL ended');
  // How many cycles fit in 12 s depends on the machine's speed; what must hold is that each
  // login's token was renewed before the next login (a client that logs in again at every TTL
  // instead of renewing, or at every read, fails this), and that the max TTL forced one.
  tt.ok(stats.logins >= 2 && stats.logins <= stats.renewals + 1, 'a new login only when renewal hit the max TTL');
  await c.close();
  tt.equal(await tokenCount(server), before, 'close() revoked it');
});

await t.test('a token revoked behind the client is replaced by a new login', async (tt) => {
  const c = await newClient({ ...tokenSpec('v2'), auth: { appRole: { roleId, secretRef: { name: 'a', key: 's' } } } }, { credentials: { 'a/s': approleSecretId } });
  await c.getSecret({ key: `${run}-auth/plain`, property: 'v' });
  const keys = ((await server.api('LIST', 'auth/token/accessors')).body!.data as { keys: string[] }).keys;
  // Revoke every approle token of role "esi" (the one this client holds among them).
  for (const accessor of keys) {
    const info = (await server.api('POST', 'auth/token/lookup-accessor', { accessor })).body!.data as { path: string; meta?: Record<string, string> };
    if (info.path === 'auth/approle/login' && info.meta?.role_name === 'esi') await server.api('POST', 'auth/token/revoke-accessor', { accessor });
  }
  tt.equal(text(await c.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY, 'the next read logs in again');
  tt.equal(c.tokenStats.logins, 2);
  await c.close();
});

await t.test('unreachable, slow, and TLS failures', async (tt) => {
  const down = await newClient({ ...tokenSpec('v2'), server: `http://127.0.0.1:${await freePort()}` });
  isError(tt, await caught(down.getSecret({ key: 'x' })), 'Unreachable', { match: /ECONNREFUSED/ });
  const approleDown = await newClient({ ...tokenSpec('v2'), server: `http://127.0.0.1:${await freePort()}`, auth: { appRole: { roleId, secretRef: { name: 'a', key: 's' } } } }, { credentials: { 'a/s': 'x' } });
  isError(tt, await caught(approleDown.getSecret({ key: 'x' })), 'Unreachable', { match: /appRole login/ });

  // A server that accepts connections and never answers.
  const sockets: Socket[] = [];
  const hang = createTcpServer((s) => void sockets.push(s));
  await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
  tt.teardown(() => new Promise((r) => {
    sockets.forEach((s) => s.destroy());
    hang.close(r);
  }));
  const port = (hang.address() as { port: number }).port;
  const slow = await newClient({ ...tokenSpec('v2'), server: `http://127.0.0.1:${port}` }, { timeoutMs: 400 });
  const started = Date.now();
  isError(tt, await caught(slow.getSecret({ key: 'x' })), 'Timeout', { match: /400 ms/ });
  tt.ok(Date.now() - started < 3000, 'gives up at its deadline');
  for (const c of [down, approleDown, slow]) await c.close();
});

await t.test('TLS: caBundle and caProvider verify the server; no CA fails as Unreachable', async (tt) => {
  const tls = await startVaultServer(tt, { tls: true });
  await tls.api('POST', 'secret/data/tls/one', { data: { v: 'over-tls' } });
  const spec = { ...tokenSpec('v2'), server: tls.addr };
  const creds = { 'vault-token/token': tls.rootToken, 'vault-ca/ca.crt': tls.caPem! };
  const withBundle = await newClient({ ...spec, caBundle: Buffer.from(tls.caPem!).toString('base64') }, { credentials: creds });
  tt.equal(text(await withBundle.getSecret({ key: 'tls/one', property: 'v' })), 'over-tls');
  const withProvider = await newClient({ ...spec, caProvider: { type: 'Secret', name: 'vault-ca', key: 'ca.crt' } }, { credentials: creds });
  tt.equal(text(await withProvider.getSecret({ key: 'tls/one', property: 'v' })), 'over-tls', 'caProvider Secret');
  const cmCtx = testContext({ storeId: STORE, spec: { ...spec, caProvider: { type: 'ConfigMap', name: 'vault-ca', key: 'ca.crt' } }, credentials: creds });
  const fromCm = await provider.newClient({ ...cmCtx, readConfigMap: async (ref) => Buffer.from(ref.name === 'vault-ca' && ref.key === 'ca.crt' ? tls.caPem! : '') });
  tt.equal(text(await fromCm.getSecret({ key: 'tls/one', property: 'v' })), 'over-tls', 'caProvider ConfigMap');
  const noCa = await newClient(spec, { credentials: creds });
  isError(tt, await caught(noCa.getSecret({ key: 'tls/one' })), 'Unreachable', { match: /TLS/ });
  for (const c of [withBundle, withProvider, fromCm, noCa]) await c.close();
});

await t.test('namespace, custom headers and forwardInconsistent are sent on every request', async (tt) => {
  // Vault OSS has no namespaces (Enterprise / OpenBao feature): what can be checked here
  // is the wire, so a loopback server records what the provider sends.
  const seen: Record<string, string | string[] | undefined>[] = [];
  const http: Server = createServer((req, res) => {
    seen.push(req.headers);
    res.setHeader('content-type', 'application/json').end('{"data":{"data":{"v":"ns"}}}');
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  tt.teardown(() => new Promise((r) => http.close(r)));
  const c = await newClient({ ...tokenSpec('v2'), server: `http://127.0.0.1:${(http.address() as { port: number }).port}`, namespace: 'team-a/apps', headers: { 'X-Team': 'a' }, forwardInconsistent: true });
  tt.equal(text(await c.getSecret({ key: 'k', property: 'v' })), 'ns');
  tt.match(seen[0], { 'x-vault-namespace': 'team-a/apps', 'x-team': 'a', 'x-vault-inconsistent': 'forward-active-node', 'x-vault-token': rwToken });
  await c.close();
  // The real server with a namespace header. Vault OSS ignores it (namespaces are an
  // Enterprise feature) and serves the root namespace; OpenBao would scope the request.
  const real = await newClient({ ...tokenSpec('v2'), namespace: 'team-a' });
  const err = await caught(real.getSecret({ key: `${run}-auth/plain` }));
  tt.comment(`${server.impl} ${server.version} with namespace "team-a": ${err ? (err as Error).message : 'served from the root namespace'}`);
  await real.close();
});

await t.test('validateSpec', async (tt) => {
  tt.same(validateSpec(tokenSpec('v2')), []);
  tt.match(validateSpec({}).join('\n'), /server[\s\S]*auth/);
  tt.match(validateSpec({ ...tokenSpec('v2'), version: 'v3' }), [/v1 or v2/]);
  tt.match(validateSpec({ ...tokenSpec('v2'), auth: { ldap: { username: 'x' } } }), [/ldap is not supported/]);
  tt.match(validateSpec({ ...tokenSpec('v2'), auth: { appRole: { secretRef: { name: 'a', key: 'b' } } } }), [/roleId or roleRef/]);
  tt.match(validateSpec({ ...tokenSpec('v2'), auth: { tokenSecretRef: { name: 't', key: 'k' }, kubernetes: { role: 'r' } } }), [/exactly one/]);
  tt.match(validateSpec({ ...tokenSpec('v2'), caBundle: 'bm90IHBlbQ==' }), [/caBundle/]);
  tt.match(validateSpec({ ...tokenSpec('v2'), headers: { 'X-Vault-Token': 'x' } }), [/may not set/]);
  tt.match(validateSpec({ ...tokenSpec('v2'), auth: { jwt: { role: 'r' } } }), [/secretRef or kubernetesServiceAccountToken/]);
  isError(tt, await caught(provider.newClient(testContext({ storeId: STORE, spec: { server: 'nope' } }))), 'InvalidSpec');
});

// ---------------------------------------------------------------- kubernetes and jwt auth

await t.test('kubernetes auth against the real apiserver (TokenReview)', async (tt) => {
  const cp = await useControlPlane(tt);
  const ns = await createNamespace(cp.kc, 'vault-k8s', tt);
  for (const sa of ['app', 'intruder']) await cp.kc.makeApiClient(CoreV1Api).createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: sa } } });
  await enableKubernetesAuth(server, cp, { mount: 'kubernetes', reviewerNamespace: ns });
  await server.api('POST', 'auth/kubernetes/role/app', {
    bound_service_account_names: ['app'], bound_service_account_namespaces: [ns], audience: 'vault',
    token_policies: ['esi-rw'], token_ttl: '60s',
  });
  const spec = (k8s: Spec) => ({ ...tokenSpec('v2'), auth: { kubernetes: k8s } });
  let tokenCalls = 0;
  const podToken = async () => {
    tokenCalls++;
    return serviceAccountToken(cp.kc, ns, 'app', ['vault']);
  };

  const before = await tokenCount(server);
  const c = await newClient(spec({ mountPath: 'kubernetes', role: 'app' }), { token: podToken });
  for (let i = 0; i < 5; i++) tt.equal(text(await c.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY);
  tt.equal(tokenCalls, 1, 'the pod token is read once per login, not per read');
  tt.equal(await tokenCount(server), before + 1, 'one Vault token');
  await c.close();
  tt.equal(await tokenCount(server), before, 'revoked on close');

  const jwt = await serviceAccountToken(cp.kc, ns, 'app', ['vault']);
  const viaSecret = await newClient(spec({ role: 'app', secretRef: { name: 'sa-token', key: 'token' } }), { credentials: { 'sa-token/token': jwt } });
  tt.equal(text(await viaSecret.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY, 'a static JWT from secretRef');
  await viaSecret.close();

  const wrongAudience = await newClient(spec({ role: 'app' }), { token: () => serviceAccountToken(cp.kc, ns, 'app', ['not-vault']) });
  isError(tt, await caught(wrongAudience.getSecret({ key: `${run}-auth/plain` })), 'AuthFailed', { match: /kubernetes login/ });
  const intruder = await serviceAccountToken(cp.kc, ns, 'intruder', ['vault']);
  const wrongSa = await newClient(spec({ role: 'app' }), { token: async () => intruder });
  isError(tt, await caught(wrongSa.getSecret({ key: `${run}-auth/plain` })), 'AuthFailed', { notContain: [intruder] });
  const deletedSa = await serviceAccountToken(cp.kc, ns, 'app', ['vault']);
  await cp.kc.makeApiClient(CoreV1Api).deleteNamespacedServiceAccount({ name: 'app', namespace: ns });
  // The token is well-formed and bound correctly: only the apiserver's TokenReview knows
  // its ServiceAccount is gone, so this refusal proves the login went through it.
  const gone = await newClient(spec({ role: 'app' }), { token: async () => deletedSa });
  isError(tt, await caught(gone.getSecret({ key: `${run}-auth/plain` })), 'AuthFailed', { match: /refused/ });
  for (const x of [wrongAudience, wrongSa, gone]) await x.close();
});

await t.test('jwt auth with a service-account token, verified with the apiserver signing key', async (tt) => {
  const cp = await useControlPlane(tt);
  const ns = await createNamespace(cp.kc, 'vault-jwt', tt);
  await cp.kc.makeApiClient(CoreV1Api).createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'app' } } });
  await server.api('POST', 'sys/auth/jwt', { type: 'jwt' });
  await server.api('POST', 'auth/jwt/config', {
    jwt_validation_pubkeys: [await readFile(join(cp.dir, 'sa.pub'), 'utf8')],
    bound_issuer: 'https://kubernetes.default.svc.cluster.local',
  });
  await server.api('POST', 'auth/jwt/role/app', {
    role_type: 'jwt', bound_audiences: ['vault'], user_claim: 'sub', bound_subject: `system:serviceaccount:${ns}:app`,
    token_policies: ['esi-rw'], token_ttl: '60s',
  });
  const jwtSpec = (jwt: Spec) => ({ ...tokenSpec('v2'), auth: { jwt } });
  const c = await newClient(jwtSpec({ path: 'jwt', role: 'app', kubernetesServiceAccountToken: { serviceAccountRef: { name: 'app' }, audiences: ['vault'] } }), {
    token: () => serviceAccountToken(cp.kc, ns, 'app', ['vault']),
  });
  tt.equal(text(await c.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY);
  await c.close();
  const token = await serviceAccountToken(cp.kc, ns, 'app', ['vault']);
  const viaSecret = await newClient(jwtSpec({ role: 'app', secretRef: { name: 'jwt', key: 'token' } }), { credentials: { 'jwt/token': token } });
  tt.equal(text(await viaSecret.getSecret({ key: `${run}-auth/plain`, property: 'v' })), CANARY);
  await viaSecret.close();
  const other = await newClient(jwtSpec({ role: 'app', secretRef: { name: 'jwt', key: 'token' } }), { credentials: { 'jwt/token': await serviceAccountToken(cp.kc, ns, 'app', ['other']) } });
  isError(tt, await caught(other.getSecret({ key: `${run}-auth/plain` })), 'AuthFailed', { match: /jwt login/ });
  await other.close();
});
