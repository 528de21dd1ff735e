// `esi agent` as a real process (the way the container runs it): bin/esi.js, the bundle
// of src/cli/main.ts → injector/cmd.ts that npm run build makes. Exit codes, the one-line config
// error, SIGTERM, readiness over HTTP, and a canary scan of everything the process
// printed and served.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AgentConfig } from '../../../src/agent-config/types.js';
import { createToken, startVaultServer, writePolicy } from '../../support/platform/backends/openbao.js';
import { assertNoCanary, CANARY_PASSWORD, fakeConfig, httpGet, tempRoot } from '../../support/fixtures/agent.js';
import { until } from '../../support/platform/until.js';

const REPO = join(import.meta.dirname, '../../..');
// The bundle bin/esi.js runs (npm run build), as the image does: what ships is what is tested.
const ENTRY = join(REPO, 'bin/esi.js');

interface Run {
  code: Promise<number | null>;
  stdout: () => string;
  stderr: () => string;
  kill: (s: NodeJS.Signals) => void;
}

function agent(args: string[], config: AgentConfig | string | undefined, extraEnv: NodeJS.ProcessEnv = {}): Run {
  const env: NodeJS.ProcessEnv = { ...process.env, ESI_LOG_LEVEL: 'debug', ...extraEnv };
  delete env.ESI_AGENT_CONFIG;
  if (config !== undefined) env.ESI_AGENT_CONFIG = typeof config === 'string' ? config : JSON.stringify(config);
  const child = spawn(process.execPath, [ENTRY, 'agent', ...args], { cwd: REPO, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  child.stderr.on('data', (d: Buffer) => (err += d));
  const code = new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  return { code, stdout: () => out, stderr: () => err, kill: (s) => void child.kill(s) };
}

t.test('malformed config: one clear line naming the field, exit 2', async (tt) => {
  const bad = { ...fakeConfig(), fileMode: 'rw' };
  const run = agent([], JSON.stringify(bad));
  tt.equal(await run.code, 2);
  const lines = (run.stdout() + run.stderr()).split('\n').filter(Boolean);
  tt.equal(lines.length, 1, `exactly one line: ${lines.join(' | ')}`);
  const entry = JSON.parse(lines[0]!) as { msg: string; field: string; level: number };
  tt.equal(entry.field, 'fileMode');
  tt.match(entry.msg, /^invalid agent config: fileMode: must be an integer between 0 and 511$/);

  const notJson = agent([], '{"version":');
  tt.equal(await notJson.code, 2);
  tt.match(notJson.stdout(), /invalid agent config: ESI_AGENT_CONFIG: not valid JSON/);

  const unset = agent([], undefined);
  tt.equal(await unset.code, 2);
  tt.match(unset.stdout(), /ESI_AGENT_CONFIG: is not set/);

  const usage = agent(['--bogus'], fakeConfig());
  tt.equal(await usage.code, 2);
  tt.match(usage.stderr(), /unknown argument "--bogus"/);
});

t.test('init-only: exit 0 with files, exit 1 naming the secret', async (tt) => {
  const root = await tempRoot(tt);
  const ok = agent(['--root', root], fakeConfig({ mode: 'init-only' }));
  tt.equal(await ok.code, 0, ok.stdout());
  tt.equal(await readFile(join(root, 'var/run/esi/secrets/db/password'), 'utf8'), CANARY_PASSWORD);
  assertNoCanary(tt, ok.stdout() + ok.stderr(), 'agent output');

  const cfg = fakeConfig({ mode: 'init-only' });
  cfg.secrets[0]!.dataFrom[0]!.extract!.key = 'db/nope';
  // The kubelet creates the termination message file; the agent writes into it (agent.md).
  const badRoot = await tempRoot(tt);
  const log = join(badRoot, 'termination-log');
  await writeFile(log, '');
  const bad = agent(['--root', badRoot], cfg, { ESI_TERMINATION_LOG: log });
  tt.equal(await bad.code, 1);
  tt.match(bad.stdout(), /"secret":"db".*ExternalSecret \\"db\\" dataFrom\[0\]\.extract \(remote key \\"db\/nope\\"\): .*secret not found/);
  assertNoCanary(tt, bad.stdout() + bad.stderr(), 'agent output');
  const told = JSON.parse(await readFile(log, 'utf8')) as { esiAgent: number; stage: string; failures: { externalSecret: string; code?: string; message: string }[] };
  tt.match(told, { esiAgent: 1, stage: 'fetch', failures: [{ externalSecret: 'db', code: 'NotFound', message: /secret not found/ }] }, 'the termination message names the ExternalSecret and the error class');
  assertNoCanary(tt, JSON.stringify(told), 'termination message');
});

t.test('native sidecar: ready after the first render, serves metrics, exits 0 on SIGTERM', async (tt) => {
  const root = await tempRoot(tt);
  const run = agent(['--root', root], fakeConfig());
  tt.teardown(() => run.kill('SIGKILL'));
  let port = 0;
  await until('the agent to start', async () => {
    const m = /"port":(\d+)/.exec(run.stdout());
    if (m) port = Number(m[1]);
    return port > 0;
  }, 20_000, 20);
  await until('readiness', async () => (await httpGet(port, '/readyz').catch(() => ({ status: 0 }))).status === 200, 10_000, 20);
  tt.equal(await readFile(join(root, 'var/run/esi/secrets/db/password'), 'utf8'), CANARY_PASSWORD);
  const metrics = (await httpGet(port, '/metrics')).body;
  tt.match(metrics, /esi_agent_refresh_total\{result="success"\} 1/);
  const firstRender = /"ms":(\d+),"msg":"first render complete"/.exec(run.stdout());
  tt.ok(firstRender, 'first render logged');
  tt.comment(`first render ${firstRender?.[1]} ms after start`);
  run.kill('SIGTERM');
  tt.equal(await run.code, 0, 'SIGTERM is a clean exit');
  tt.match(run.stdout(), /"signal":"SIGTERM","msg":"shutting down"/);
  const output = run.stdout() + run.stderr();
  assertNoCanary(tt, output, 'agent output');
  assertNoCanary(tt, metrics, 'metrics');
});

t.test('the bundled agent reads from OpenBao over TLS (node-vault with its own transport, no axios)', async (tt) => {
  const server = await startVaultServer(tt, { tls: true });
  await writePolicy(server, 'cli-read', 'path "secret/data/cli/*" { capabilities = ["read"] }');
  await server.api('POST', 'secret/data/cli/db', { data: { password: CANARY_PASSWORD } });
  const token = await createToken(server, ['cli-read']);
  const root = await tempRoot(tt);
  const creds = '/var/run/esi/credentials';
  await mkdir(join(root, creds, 'bao'), { recursive: true });
  await writeFile(join(root, creds, 'bao', 'token'), token, { mode: 0o600 });
  const store = 'SecretStore/team-a/bao';
  const config: AgentConfig = {
    ...fakeConfig({ mode: 'init-only' }),
    stores: { [store]: { kind: 'SecretStore', name: 'bao', credentialsDir: creds, provider: { vault: {
      server: server.addr, path: 'secret', version: 'v2', caBundle: Buffer.from(server.caPem!).toString('base64'),
      auth: { tokenSecretRef: { name: 'bao', key: 'token' } },
    } } } },
    secrets: [{ name: 'db', store, data: [{ secretKey: 'password', remoteRef: { key: 'cli/db', property: 'password' } }], dataFrom: [] }],
    templates: [],
  };
  const ok = agent(['--root', root], config);
  tt.equal(await ok.code, 0, ok.stdout());
  tt.equal(await readFile(join(root, 'var/run/esi/secrets/db/password'), 'utf8'), CANARY_PASSWORD);

  // A CA that does not sign the server's certificate: a TLS failure, named as such.
  const wrongCa = structuredClone(config);
  (wrongCa.stores[store]!.provider as { vault: { caBundle?: string } }).vault.caBundle = undefined;
  const bad = agent(['--root', root], wrongCa);
  tt.equal(await bad.code, 1);
  tt.match(bad.stdout(), /TLS handshake with Vault failed/);
  assertNoCanary(tt, ok.stdout() + ok.stderr() + bad.stdout() + bad.stderr(), 'agent output');
  tt.notOk(ok.stdout().includes(token) || bad.stdout().includes(token), 'the token is never printed');
});

t.test('--help', async (tt) => {
  const run = agent(['--help'], undefined);
  tt.equal(await run.code, 0);
  tt.match(run.stdout(), /Usage: esi agent \[--root DIR\] \[--config-file FILE\]/);
});
