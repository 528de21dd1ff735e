// The agent end to end, in-process (runAgent/startAgent) with the real fake provider in a
// temp root: readiness gating, files and modes, refresh with notification, last-good
// files on failure, coalescing, init-only exit codes, credentials under --root, and no
// secret value in logs or metrics.
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runAgent, startAgent } from '../../injector/agent.js';
import { wrapClient } from '../../src/providers/client.js';
import { provider as fakeProvider, type FakeClient } from '../../src/providers/fake/index.js';
import { ProviderError, type Provider, type SecretsClient } from '../../src/providers/types.js';
import { assertNoCanary, CANARY_PASSWORD, CANARY_TOKEN, captureLogger, fakeConfig, httpGet, STORE, tempRoot } from '../support/fixtures/agent.js';
import { until } from '../support/platform/until.js';

/** The real fake provider behind a gate, a failure switch and a call counter. */
function controlled(): { state: { gate: Promise<void>; fail: boolean; calls: number; clients: FakeClient[] }; open: () => void; loadProvider: (n: string) => Promise<Provider> } {
  let open!: () => void;
  const state = { gate: new Promise<void>((r) => (open = r)), fail: false, calls: 0, clients: [] as FakeClient[] };
  const provider: Provider = {
    ...fakeProvider,
    async newClient(ctx) {
      const inner = (await fakeProvider.newClient(ctx)) as FakeClient;
      state.clients.push(inner);
      const guard = async <T>(f: () => Promise<T>): Promise<T> => {
        await state.gate;
        state.calls++;
        if (state.fail) throw new ProviderError('Unreachable', ctx.storeId, 'store is down');
        return f();
      };
      // Reads go through the gate; writes, validate and close straight to the client.
      const reads = new Set(['getSecret', 'getSecretMap', 'getAllSecrets']);
      return wrapClient<SecretsClient>(inner, (name, _args, next) => (reads.has(name) ? guard(next) : next()));
    },
  };
  return { state, open, loadProvider: async () => provider };
}

const out = (root: string, rel: string): string => join(root, 'var/run/esi/secrets', rel);

t.test('sidecar: gated readiness, files, modes, metrics', async (tt) => {
  const root = await tempRoot(tt);
  const { logger, text } = captureLogger();
  const c = controlled();
  const agent = await startAgent({ config: fakeConfig(), root, logger, host: '127.0.0.1', loadProvider: c.loadProvider });
  tt.teardown(() => agent.stop());
  const port = agent.port!;
  tt.equal((await httpGet(port, '/readyz')).status, 503, 'not ready before the first render');
  tt.equal((await httpGet(port, '/healthz')).status, 200);
  c.open();
  await agent.ready;
  tt.equal((await httpGet(port, '/readyz')).status, 200);
  tt.equal(await readFile(out(root, 'db/password'), 'utf8'), CANARY_PASSWORD);
  tt.equal(await readFile(out(root, 'db/username'), 'utf8'), 'app_user');
  tt.equal(await readFile(out(root, 'api/token'), 'utf8'), CANARY_TOKEN);
  tt.equal(await readFile(out(root, 'app.conf'), 'utf8'), `url=postgres://app_user:${CANARY_PASSWORD}@db/app\ntoken=${CANARY_TOKEN}\n`);
  tt.equal((await stat(out(root, 'app.conf'))).mode & 0o777, 0o440);
  const metrics = await httpGet(port, '/metrics');
  tt.equal(metrics.status, 200);
  tt.match(metrics.body, /esi_agent_refresh_total\{result="success"\} 1/);
  tt.match(metrics.body, /esi_agent_last_success_timestamp_seconds \d+/);
  tt.match(metrics.body, /esi_agent_render_duration_seconds_count 1/);
  tt.match(metrics.body, /^process_resident_memory_bytes \d/m, 'process metrics under the standard names stock Node.js dashboards read');
  tt.equal((await httpGet(port, '/nope')).status, 404);
  agent.stop();
  tt.equal(await agent.done, 0);
  await tt.rejects(httpGet(port, '/healthz'), 'server closed on stop');
  assertNoCanary(tt, metrics.body, 'metrics');
  assertNoCanary(tt, text(), 'logs');
});

t.test('refresh publishes changes and notifies; failures keep the last good files', async (tt) => {
  const root = await tempRoot(tt);
  const { logger, text } = captureLogger();
  const c = controlled();
  c.open();
  const reloads: string[] = [];
  const app = createServer((req, res) => {
    reloads.push(`${req.method} ${req.url}`);
    res.end();
  });
  await new Promise<void>((r) => app.listen(0, '127.0.0.1', r));
  tt.teardown(() => new Promise<void>((r) => app.close(() => r())));
  const onChange = { type: 'http' as const, url: `http://127.0.0.1:${(app.address() as AddressInfo).port}/reload`, method: 'POST' as const };
  const agent = await startAgent({
    config: fakeConfig({ refreshSeconds: 1, onChange }),
    root,
    logger,
    host: '127.0.0.1',
    loadProvider: c.loadProvider,
    backoffBaseMs: 50,
  });
  tt.teardown(() => agent.stop());
  await agent.ready;
  tt.same(reloads, [], 'the first render notifies nobody (the app is not started yet)');
  const NEW = 'CANARY-pw-rotated-1';
  await c.state.clients[0]!.pushSecret(new TextEncoder().encode(NEW), { remoteKey: 'db/creds', property: 'password' });
  await until('rotated password', async () => (await readFile(out(root, 'db/password'), 'utf8')) === NEW, 5000, 20);
  tt.match(await readFile(out(root, 'app.conf'), 'utf8'), NEW, 'templates re-rendered in the same generation');
  await until('reload request', async () => reloads.length === 1, 5000, 20);
  tt.same(reloads, ['POST /reload']);

  c.state.fail = true;
  await until('a failed refresh', async () => /esi_agent_refresh_total\{result="failure"\} [1-9]/.test((await httpGet(agent.port!, '/metrics')).body), 5000, 20);
  tt.equal(await readFile(out(root, 'db/password'), 'utf8'), NEW, 'last good files stay');
  tt.equal((await httpGet(agent.port!, '/readyz')).status, 200, 'still ready');
  tt.match(text(), /"secret":"db".*ExternalSecret \\"db\\" dataFrom\[0\]\.extract \(remote key \\"db\/creds\\"\): SecretStore\/team-a\/fake: store is down \[Unreachable\]/);
  tt.match((await httpGet(agent.port!, '/metrics')).body, /esi_agent_refresh_failures_total\{stage="fetch"\} [1-9]/);
  c.state.fail = false;
  await until('recovery', async () => /refresh recovered/.test(text()), 5000, 20);
  tt.equal(reloads.length, 1, 'no notification without a change');
  agent.stop();
  tt.equal(await agent.done, 0);
  assertNoCanary(tt, text(), 'logs');
  tt.notOk(text().includes(NEW), 'logs do not contain the rotated value');
});

t.test('identical remote reads are coalesced within a cycle', async (tt) => {
  const root = await tempRoot(tt);
  const c = controlled();
  c.open();
  const base = fakeConfig({ mode: 'init-only', templates: [] });
  const config = fakeConfig({
    mode: 'init-only',
    templates: [],
    secrets: [
      ...base.secrets,
      { name: 'db2', store: STORE, data: [{ secretKey: 'password', remoteRef: { key: 'db/creds', property: 'password' } }], dataFrom: [{ extract: { key: 'db/creds' } }] },
      { name: 'api2', store: STORE, data: [{ secretKey: 'token', remoteRef: { key: 'api/token' } }], dataFrom: [] },
    ],
  });
  tt.equal(await runAgent({ config, root, logger: captureLogger().logger, loadProvider: c.loadProvider }), 0);
  tt.equal(c.state.calls, 3, '5 reads of 3 distinct remote refs cost 3 calls');
  tt.equal(c.state.clients.length, 1, 'one client per store');
  tt.equal(await readFile(out(root, 'db2/password'), 'utf8'), CANARY_PASSWORD);
});

t.test('init-only: exit 0 with files; exit 1 naming the secret and reason', async (tt) => {
  const root = await tempRoot(tt);
  const ok = captureLogger();
  const agent = await startAgent({ config: fakeConfig({ mode: 'init-only' }), root, logger: ok.logger });
  tt.equal(agent.port, undefined, 'no server in init-only mode');
  tt.equal(await agent.done, 0);
  tt.equal(await readFile(out(root, 'api/token'), 'utf8'), CANARY_TOKEN);

  const root2 = await tempRoot(tt);
  const bad = captureLogger();
  const cfg = fakeConfig({ mode: 'init-only' });
  cfg.secrets[1]!.data[0]!.remoteRef.key = 'api/missing';
  tt.equal(await runAgent({ config: cfg, root: root2, logger: bad.logger }), 1);
  const line = bad.lines.find((l) => l.includes('"secret":"api"'));
  tt.ok(line, 'one line names the secret');
  tt.match(line, /ExternalSecret \\"api\\" data\[0\] \(secretKey \\"token\\", remote key \\"api\/missing\\"\): .*secret not found \[NotFound\]/);
  await tt.rejects(stat(out(root2, 'api')), { code: 'ENOENT' }, 'nothing written');
  assertNoCanary(tt, ok.text() + bad.text(), 'logs');
});

t.test('template errors name the template and line, without values', async (tt) => {
  const root = await tempRoot(tt);
  const { logger, text } = captureLogger();
  const config = fakeConfig({ mode: 'init-only', templates: [{ file: 'app.conf', template: 'a={{db.password}}\nb={{db.pasword}}\n' }] });
  tt.equal(await runAgent({ config, root, logger }), 1);
  tt.match(text(), /template annotation esi\.dev\/template-app\.conf line 2, column 5: \\"db\.pasword\\" is not defined/);
  tt.match(text(), /"stage":"render"/);
  assertNoCanary(tt, text(), 'logs');
});

t.test('--root prefixes credentialsDir and tokenPath', async (tt) => {
  const root = await tempRoot(tt);
  await mkdir(join(root, 'var/run/esi/creds/db-creds'), { recursive: true });
  await writeFile(join(root, 'var/run/esi/creds/db-creds/password'), 'static-cred');
  await mkdir(join(root, 'var/run/secrets/tokens'), { recursive: true });
  await writeFile(join(root, 'var/run/secrets/tokens/esi'), 'pod-token\n');
  // A provider that serves what its context can read: proves the agent's context.
  const echo: Provider = {
    ...fakeProvider,
    async newClient(ctx) {
      const inner = await fakeProvider.newClient({ ...ctx, spec: { data: [] } });
      return {
        ...inner,
        getSecret: async (ref) =>
          ref.key === 'token' ? new TextEncoder().encode(await ctx.serviceAccountToken('esi')) : ctx.readCredential({ name: 'db-creds', key: ref.key }),
        close: async () => undefined,
      } as SecretsClient;
    },
  };
  const config = fakeConfig({
    mode: 'init-only',
    templates: [],
    tokenPath: '/var/run/secrets/tokens/esi',
    tokenAudience: 'esi',
    secrets: [{ name: 's', store: STORE, data: [{ secretKey: 'cred', remoteRef: { key: 'password' } }, { secretKey: 'tok', remoteRef: { key: 'token' } }], dataFrom: [] }],
  });
  config.stores[STORE]!.credentialsDir = '/var/run/esi/creds';
  tt.equal(await runAgent({ config, root, logger: captureLogger().logger, loadProvider: async () => echo }), 0);
  tt.equal(await readFile(out(root, 's/cred'), 'utf8'), 'static-cred');
  tt.equal(await readFile(out(root, 's/tok'), 'utf8'), 'pod-token');

  config.secrets[0]!.data[0]!.remoteRef.key = 'other';
  const { logger, text } = captureLogger();
  tt.equal(await runAgent({ config, root: await tempRoot(tt), logger, loadProvider: async () => echo }), 1);
  tt.match(text(), /credential db-creds\/other is not mounted \(ENOENT\)/);
});

t.test('a taken port fails the start cleanly', async (tt) => {
  const blocker = createServer();
  await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
  tt.teardown(() => new Promise<void>((r) => blocker.close(() => r())));
  const port = (blocker.address() as AddressInfo).port;
  const root = await tempRoot(tt);
  await tt.rejects(startAgent({ config: fakeConfig({ port }), root, host: '127.0.0.1', logger: captureLogger().logger }), { code: 'EADDRINUSE' });
});
