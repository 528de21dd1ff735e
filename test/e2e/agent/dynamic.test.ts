// Dynamic secrets in the agent (docs/dynamic-secrets.md), in-process (startAgent) against a
// real OpenBao whose database engine manages a real PostgreSQL: what a user checks is the
// database — the pod's credentials log in, exactly one database user exists for one agent
// across refreshes, renewals are seen on the server, a rotation reaches the files and the
// app (notified) before the old user is dropped, and after the agent stops the lease is
// revoked and the user is gone (or kept, when the entry opts out).
// The last case runs the bundled `esi agent` (bin/esi.js: `npm run build` first) and stops
// it with SIGTERM, as the kubelet stops a native sidecar at the pod's end.
// Run: `npx tap test/e2e/agent/dynamic.test.ts` (ESI_NO_PLATFORM=1 is enough).
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startAgent } from '../../../injector/agent.js';
import type { AgentConfig, AgentDynamicSecret } from '../../../src/agent-config/types.js';
import { validateAgentConfig } from '../../../src/agent-config/check.js';
import { dynamicFixture } from '../../support/fixtures/dynamic.js';
import { captureLogger, fakeConfig, httpGet, tempRoot } from '../../support/fixtures/agent.js';
import { until } from '../../support/platform/until.js';

const f = await dynamicFixture(t, { defaultTtl: '6s', maxTtl: '1h' });
const STORE = 'SecretStore/team-a/bao';
const CREDS = '/var/run/esi/credentials';

async function configFor(tt: Test, dynamic: AgentDynamicSecret[], extra: Partial<AgentConfig> = {}): Promise<{ root: string; config: AgentConfig }> {
  const root = await tempRoot(tt);
  await mkdir(join(root, CREDS, 'approle'), { recursive: true });
  await writeFile(join(root, CREDS, 'approle', 'secret-id'), await f.newSecretId(), { mode: 0o600 });
  const config = validateAgentConfig({
    ...fakeConfig(),
    refreshSeconds: 1,
    stores: { [STORE]: { kind: 'SecretStore', name: 'bao', credentialsDir: CREDS, provider: { vault: {
      server: f.vault.addr, auth: { appRole: { roleId: f.roleId, secretRef: { name: 'approle', key: 'secret-id' } } },
    } } } },
    secrets: [],
    templates: [{ file: 'db.url', template: `postgresql://{{db.username}}:{{db.password}}@127.0.0.1:${f.pg.port}/postgres` }],
    dynamicSecrets: dynamic,
    ...extra,
  });
  return { root, config };
}

const file = (root: string, rel: string) => readFile(join(root, 'var/run/esi/secrets', rel), 'utf8');
const loginOf = async (root: string) => ({ user: await file(root, 'db/username'), password: await file(root, 'db/password') });
const metric = (body: string, re: RegExp): number => Number(re.exec(body)?.[1] ?? NaN);

t.test('one credential per pod: accepted by PostgreSQL, kept across refreshes, renewed, revoked when the agent stops', async (tt) => {
  const rolesBefore = await f.pg.roles();
  const { logger, text } = captureLogger();
  const { root, config } = await configFor(tt, [{ name: 'db', store: STORE, path: 'database/creds/app' }]);
  const agent = await startAgent({ config, root, logger, host: '127.0.0.1' });
  tt.teardown(() => agent.stop());
  await agent.ready;

  const login = await loginOf(root);
  tt.equal(await f.pg.psql('SELECT current_user', login), login.user, 'the database accepts the pod\'s credentials');
  tt.equal(await file(root, 'db.url'), `postgresql://${login.user}:${login.password}@127.0.0.1:${f.pg.port}/postgres`, 'templates see the dynamic secret');
  const [leaseId] = await f.dbLeases();

  // Refreshes (every second) and renewals (every ~4 s for a 6 s TTL) go by.
  await until('two renewals', async () => {
    const m = (await httpGet(agent.port!, '/metrics')).body;
    return metric(m, /esi_agent_lease_renewals_total\{secret="db",result="success"\} (\d+)/) >= 2 || undefined;
  });
  const m = (await httpGet(agent.port!, '/metrics')).body;
  tt.ok(metric(m, /esi_agent_refresh_total\{result="success"\} (\d+)/) >= 3, 'several refreshes ran');
  const ttl = metric(m, /esi_agent_lease_ttl_seconds\{secret="db"\} (\d+)/);
  tt.ok(ttl >= 0 && ttl <= 6, `the TTL left is exported (${ttl}s)`);
  tt.ok((await f.lookup(`database/creds/app/${leaseId}`))?.lastRenewal, 'the server recorded renewals');
  tt.same((await f.pg.roles()).filter((r) => !rolesBefore.includes(r)), [login.user], 'exactly one database user for one agent');
  tt.equal((await f.dbLeases()).length, 1, 'exactly one lease');
  tt.same(await loginOf(root), login, 'refreshes did not mint again');
  tt.equal(await f.pg.psql('SELECT current_user', login), login.user, 'renewals kept the credentials valid past their first TTL');

  agent.stop();
  tt.equal(await agent.done, 0);
  tt.same(await f.dbLeases(), [], 'the lease is revoked when the agent stops');
  tt.notOk((await f.pg.roles()).includes(login.user), 'the database user is gone');
  const logs = text();
  tt.notOk(logs.includes(leaseId!) || m.includes(leaseId!), 'no lease id in logs or metrics');
  tt.notOk(logs.includes(login.password), 'no password in logs');
});

/** The app's reload endpoint on loopback: records the time of each call. */
async function reloadEndpoint(tt: Test) {
  const reloads: number[] = [];
  const app = createServer((_req, res) => {
    reloads.push(Date.now());
    res.end('ok');
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  tt.teardown(() => app.close());
  const onChange = { type: 'http' as const, url: `http://127.0.0.1:${(app.address() as AddressInfo).port}/reload`, method: 'POST' as const };
  return { reloads, onChange };
}

t.test('near the max TTL: a new credential is minted, published and notified; the old one is then revoked', async (tt) => {
  const { reloads, onChange } = await reloadEndpoint(tt);
  const { logger } = captureLogger();
  const { root, config } = await configFor(tt, [{ name: 'db', store: STORE, path: 'database/creds/short', overlapSeconds: 1 }], { onChange, refreshSeconds: 3600 });
  const agent = await startAgent({ config, root, logger, host: '127.0.0.1' });
  tt.teardown(() => agent.stop());
  await agent.ready;
  const first = await loginOf(root);

  // The role's max TTL is 12 s: the agent rotates ahead of it.
  await until('a rotated credential in the files', async () => ((await loginOf(root)).user !== first.user) || undefined, 60_000);
  const second = await loginOf(root);
  tt.equal(await f.pg.psql('SELECT current_user', second), second.user, 'the new credentials log in');
  await until('the app notified', async () => reloads.length >= 1 || undefined);
  await until('the old user dropped after the overlap', async () => !(await f.pg.roles()).includes(first.user) || undefined, 60_000);
  tt.pass('the old database user is dropped');
  agent.stop();
  tt.equal(await agent.done, 0);
  tt.same(await f.dbLeases('short'), [], 'no lease left after the agent stopped');
});

t.test('a lease revoked behind the agent\'s back is replaced at the next renewal', async (tt) => {
  const { logger } = captureLogger();
  const { root, config } = await configFor(tt, [{ name: 'db', store: STORE, path: 'database/creds/app' }], { refreshSeconds: 3600 });
  const agent = await startAgent({ config, root, logger, host: '127.0.0.1' });
  tt.teardown(() => agent.stop());
  await agent.ready;
  const first = await loginOf(root);
  const [id] = await f.dbLeases();
  await f.vault.api('PUT', 'sys/leases/revoke', { lease_id: `database/creds/app/${id}` });
  await until('a new credential in the files', async () => ((await loginOf(root)).user !== first.user) || undefined, 60_000);
  const second = await loginOf(root);
  tt.equal(await f.pg.psql('SELECT current_user', second), second.user, 'the new credentials log in');
  tt.equal((await f.dbLeases()).length, 1, 'one lease again');
  agent.stop();
  tt.equal(await agent.done, 0);
  tt.same(await f.dbLeases(), [], 'revoked at exit');
});

t.test('a certificate (PKI, no lease) is re-issued from its own validity, published and notified', async (tt) => {
  const { reloads, onChange } = await reloadEndpoint(tt);
  const { logger } = captureLogger();
  const { root, config } = await configFor(tt, [{ name: 'tls', store: STORE, path: 'pki/issue/web', method: 'POST', parameters: { common_name: 'app.example.test', ttl: '6s' } }],
    { onChange, refreshSeconds: 3600, templates: [] });
  const agent = await startAgent({ config, root, logger, host: '127.0.0.1' });
  tt.teardown(() => agent.stop());
  await agent.ready;
  const first = new X509Certificate(await file(root, 'tls/certificate'));
  tt.equal(first.subject, 'CN=app.example.test');
  tt.match(await file(root, 'tls/private_key'), /PRIVATE KEY/);
  await until('a re-issued certificate', async () => new X509Certificate(await file(root, 'tls/certificate')).serialNumber !== first.serialNumber || undefined, 60_000);
  const second = new X509Certificate(await file(root, 'tls/certificate'));
  tt.ok(new Date(second.validTo) > new Date(first.validTo), 'the new certificate ends later');
  await until('the app notified', async () => reloads.length >= 1 || undefined);
  agent.stop();
  tt.equal(await agent.done, 0);
});

t.test('revokeOnExit: false leaves the credential alive after the agent stops', async (tt) => {
  const { logger } = captureLogger();
  const { root, config } = await configFor(tt, [{ name: 'db', store: STORE, path: 'database/creds/long', revokeOnExit: false }], { refreshSeconds: 3600 });
  const agent = await startAgent({ config, root, logger, host: '127.0.0.1' });
  await agent.ready;
  const login = await loginOf(root);
  agent.stop();
  tt.equal(await agent.done, 0);
  tt.equal(await f.pg.psql('SELECT current_user', login), login.user, 'the credentials still log in');
  const leases = await f.dbLeases('long');
  tt.equal(leases.length, 1, 'the lease is kept');
  for (const id of leases) await f.vault.api('PUT', 'sys/leases/revoke', { lease_id: `database/creds/long/${id}` });
});

t.test('the bundled agent stopped by SIGTERM (the pod ends) revokes the lease: the database user is gone', async (tt) => {
  const { root, config } = await configFor(tt, [{ name: 'db', store: STORE, path: 'database/creds/long' }], { refreshSeconds: 3600, port: 0 });
  const env: NodeJS.ProcessEnv = { ...process.env, ESI_LOG_LEVEL: 'debug', ESI_AGENT_CONFIG: JSON.stringify(config) };
  const child = spawn(process.execPath, [join(import.meta.dirname, '../../../bin/esi.js'), 'agent', '--root', root], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  child.stderr.on('data', (d: Buffer) => (out += d));
  const code = new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  tt.teardown(() => void child.kill('SIGKILL'));
  await until('the first render', async () => /first render complete/.test(out) || undefined, 60_000);
  const login = await loginOf(root);
  tt.equal(await f.pg.psql('SELECT current_user', login), login.user, 'the database accepts the pod\'s credentials');
  tt.equal((await f.dbLeases('long')).length, 1, 'one lease');
  child.kill('SIGTERM');
  tt.equal(await code, 0, 'exit 0 on SIGTERM');
  tt.same(await f.dbLeases('long'), [], 'the lease is revoked');
  tt.notOk((await f.pg.roles()).includes(login.user), 'the database user is gone');
  tt.notOk(out.includes(login.password), 'the password was never printed');
});
