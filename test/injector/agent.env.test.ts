// The agent with an env file (esi.dev/env), in-process with the real fake provider in a
// temp root: init-only and native-sidecar write `<env dir>/esi.env` (owner-read, through
// the atomic writer's `..data` link, which the kubelet follows inside the volume) before
// they report ready; ExternalSecrets fetched only for env vars leave no files; a value the
// format cannot carry fails the render naming the key, writes no env file, and no value
// reaches the logs.
import t from 'tap';
import { readFile, readlink, stat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runAgent, startAgent } from '../../injector/agent.js';
import { validateAgentConfig } from '../../src/agent-config/check.js';
import type { AgentConfig } from '../../src/agent-config/types.js';
import { assertNoCanary, CANARY_PASSWORD, CANARY_TOKEN, captureLogger, fakeConfig, STORE, tempRoot } from '../support/fixtures/agent.js';

const ENV = { dir: '/var/run/esi/env', file: 'esi.env', vars: [
  { name: 'DB_PASSWORD', secret: 'db', key: 'password' },
  { name: 'API_TOKEN', secret: 'api', key: 'token' },
] };

function envConfig(overrides: Partial<AgentConfig> = {}): AgentConfig {
  const base = fakeConfig();
  return validateAgentConfig({ ...base, templates: [], secrets: base.secrets.map((s) => (s.name === 'api' ? { ...s, files: false } : s)), env: ENV, ...overrides });
}

const envFile = (root: string) => join(root, 'var/run/esi/env/esi.env');

t.test('init-only: the env file is complete when the agent exits 0; env-only secrets leave no files', async (t) => {
  const root = await tempRoot(t);
  const { logger, text } = captureLogger();
  t.equal(await runAgent({ config: envConfig({ mode: 'init-only' }), root, logger }), 0);
  t.equal(await readFile(envFile(root), 'utf8'), `DB_PASSWORD='${CANARY_PASSWORD}'\nAPI_TOKEN='${CANARY_TOKEN}'\n`);
  t.equal(await readlink(envFile(root)), '..data/esi.env', 'published through the atomic layout');
  t.equal((await stat(envFile(root))).mode & 0o777, 0o400, 'only its owner (and the kubelet, root) reads it');
  t.ok(existsSync(join(root, 'var/run/esi/secrets/db/password')), 'the mounted ExternalSecret still has its files');
  t.notOk(existsSync(join(root, 'var/run/esi/secrets/api')), 'the env-only ExternalSecret has none');
  assertNoCanary(t, text(), 'logs');
});

t.test('native-sidecar: ready only once the env file is written', async (t) => {
  const root = await tempRoot(t);
  const { logger } = captureLogger();
  const agent = await startAgent({ config: envConfig(), root, logger, host: '127.0.0.1' });
  t.teardown(() => agent.stop());
  await agent.ready;
  t.match(await readFile(envFile(root), 'utf8'), /^DB_PASSWORD='/);
  agent.stop();
  t.equal(await agent.done, 0);
});

t.test('a value the format cannot carry: the render fails naming the key, no env file', async (t) => {
  const root = await tempRoot(t);
  const { logger, text } = captureLogger();
  const quoted = `it's-${CANARY_TOKEN}`;
  const base = envConfig({ mode: 'init-only' });
  const config = { ...base, stores: { [STORE]: { ...base.stores[STORE]!, provider: { fake: { data: [
    { key: 'db/creds', value: JSON.stringify({ username: 'u', password: CANARY_PASSWORD }) },
    { key: 'api/token', value: quoted },
  ] } } } } };
  t.not(await runAgent({ config, root, logger }), 0, 'the init container fails: the app never starts with a wrong value');
  t.notOk(existsSync(envFile(root)), 'no env file was published');
  const line = text().split('\n').map((l) => (l ? JSON.parse(l) as { stage?: string; msg: string } : undefined)).find((l) => l?.stage === 'render');
  t.equal(line?.msg, 'esi.dev/env: API_TOKEN (key "token" of ExternalSecret "api"): the value contains a single quote, which the env-file format cannot carry (mount it as a file instead)');
  assertNoCanary(t, text(), 'logs');
  t.notOk(text().includes("it's"), 'not even the part before the canary');
});

t.test('the agent refuses an env config it cannot serve, naming the field', async (t) => {
  t.throws(() => envConfig({ mode: 'sidecar' }), /invalid agent config: env: needs mode native-sidecar or init-only/);
  t.throws(() => envConfig({ env: { ...ENV, vars: [ENV.vars[0]!, ENV.vars[0]!] } }), /env\.vars\[1\]\.name: "DB_PASSWORD" is set twice/);
  t.throws(() => envConfig({ env: { ...ENV, vars: [{ name: 'X', secret: 'nope', key: 'k' }] } }), /env\.vars\[0\]\.secret: must be the name of one of secrets/);
  t.throws(() => envConfig({ env: { ...ENV, vars: [{ name: 'A-B', secret: 'db', key: 'k' }] } }), /env\.vars\[0\]\.name: must be an environment variable name/);
});
