// End to end: the agent (in-process, init-only, temp root) renders files from ESI's
// reference gRPC plugin over mTLS, through the grpc provider loaded by the lazy
// registry. The TLS Secret is laid out as the webhook mounts it: the whole Secret named
// by `tlsSecretRef` at `<credentialsDir>/<name>/` (ca.crt, tls.crt, tls.key). The
// agent's whole log is scanned for the values and the private key.
// Run: `npx tap --before= --after= test/src/providers/grpc/index.agent.test.ts`
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import t, { type Test } from 'tap';
import { generateDevPki } from '../../../../examples/grpc-plugin/dev-certs.js';
import { startPluginServer } from '../../../../examples/grpc-plugin/server.js';
import { runAgent } from '../../../../injector/agent.js';
import type { AgentConfig } from '../../../../src/agent-config/types.js';
import { CREDENTIALS_DIR } from '../../../../webhook/mutate.js';
import { captureLogger, tempRoot } from '../../../support/fixtures/agent.js';

const PASSWORD = 'CANARY-grpc-pw-41c9e2';
const API_TOKEN = 'CANARY-grpc-api-8d03b7';
const BINARY = 'CANARY-grpc-bin-5a17';
const NS = 'team-a';
const STORE = `SecretStore/${NS}/plugin`;
const OUT = '/var/run/esi/secrets';

const pki = await generateDevPki(['127.0.0.1'], 'esi-agent');
const plugin = await startPluginServer({
  tls: { cert: pki.server.cert, key: pki.server.key, clientCa: pki.ca.cert },
  data: {
    'app/db': { username: 'app_user', password: PASSWORD },
    'app/api': { token: API_TOKEN, scopes: ['read'] },
  },
});
t.teardown(() => plugin.stop());
// Seeded through the plugin's own store, as an operator would load it.
plugin.store.set('app/cert', Buffer.from(BINARY).toString('base64'));

function config(secrets: AgentConfig['secrets'], templates: AgentConfig['templates'] = []): AgentConfig {
  return {
    version: 1,
    mode: 'init-only',
    pod: { namespace: NS, name: 'app-0', serviceAccountName: 'app' },
    outputDir: OUT,
    fileMode: 0o440,
    refreshSeconds: 60,
    port: 0,
    stores: {
      [STORE]: {
        kind: 'SecretStore', name: 'plugin', credentialsDir: CREDENTIALS_DIR,
        provider: { grpc: { url: `127.0.0.1:${plugin.port}`, tlsSecretRef: { name: 'plugin-tls' } } },
      },
    },
    secrets,
    templates,
  };
}

async function placeTlsSecret(root: string): Promise<void> {
  const files = { 'ca.crt': pki.ca.cert, 'tls.crt': pki.client.cert, 'tls.key': pki.client.key };
  for (const [key, pem] of Object.entries(files)) {
    const path = join(root, CREDENTIALS_DIR, 'plugin-tls', key);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, pem, { mode: 0o440 });
  }
}

function scan(tt: Test, text: string): void {
  for (const s of [PASSWORD, API_TOKEN, BINARY, pki.client.key.split('\n')[1]!]) {
    tt.notOk(text.includes(s), 'the log holds no value and no key material');
  }
}

t.test('init-only agent renders files from the plugin over mTLS', async (tt) => {
  const root = await tempRoot(tt);
  await placeTlsSecret(root);
  const log = captureLogger();
  const code = await runAgent({
    config: config([
      { name: 'db', store: STORE, data: [], dataFrom: [{ extract: { key: 'app/db' } }] },
      {
        name: 'api', store: STORE, dataFrom: [],
        data: [
          { secretKey: 'token', remoteRef: { key: 'app/api', property: 'token' } },
          { secretKey: 'cert', remoteRef: { key: 'app/cert', decodingStrategy: 'Base64' } },
        ],
      },
    ], [{ file: 'app.conf', template: 'url=postgres://{{db.username}}:{{db.password}}@db/app\ntoken={{api.token}}\n' }]),
    root,
    logger: log.logger,
  });
  tt.equal(code, 0, 'exit 0');
  const out = (p: string) => readFile(join(root, OUT, p), 'utf8');
  tt.equal(await out('db/username'), 'app_user');
  tt.equal(await out('db/password'), PASSWORD);
  tt.equal(await out('api/token'), API_TOKEN);
  tt.equal(await out('api/cert'), BINARY, 'decodingStrategy applied by ESI to the raw value');
  tt.equal(await out('app.conf'), `url=postgres://app_user:${PASSWORD}@db/app\ntoken=${API_TOKEN}\n`);
  tt.equal((await stat(join(root, OUT, 'db/password'))).mode & 0o777, 0o440);
  scan(tt, log.text());
});

t.test('a missing key and a find fail the init container with value-free messages', async (tt) => {
  const root = await tempRoot(tt);
  await placeTlsSecret(root);
  const log = captureLogger();
  const code = await runAgent({
    config: config([
      { name: 'db', store: STORE, data: [], dataFrom: [{ extract: { key: 'app/db' } }] },
      { name: 'gone', store: STORE, dataFrom: [], data: [{ secretKey: 'x', remoteRef: { key: 'app/absent' } }] },
      { name: 'all', store: STORE, data: [], dataFrom: [{ find: { path: 'app/' } }] },
    ]),
    root,
    logger: log.logger,
  });
  tt.equal(code, 1, 'exit 1');
  const text = log.text();
  tt.match(text, new RegExp(`ExternalSecret \\\\"gone\\\\" data\\[0\\].*${STORE} key \\\\"app/absent\\\\": plugin at 127\\.0\\.0\\.1:\\d+: secret \\\\"app/absent\\\\" not found \\[NotFound\\]`));
  tt.match(text, /dataFrom\[0\]\.find: .*has no list call.*\[Unsupported\]/);
  await tt.rejects(stat(join(root, OUT, 'db')), { code: 'ENOENT' }, 'nothing written when one secret fails');
  scan(tt, text);
});

t.test('without the client certificate the plugin refuses the agent (AuthFailed)', async (tt) => {
  const root = await tempRoot(tt);
  const path = join(root, CREDENTIALS_DIR, 'plugin-tls', 'ca.crt');
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, pki.ca.cert);
  const log = captureLogger();
  const code = await runAgent({
    config: config([{ name: 'db', store: STORE, data: [], dataFrom: [{ extract: { key: 'app/db' } }] }]),
    root,
    logger: log.logger,
  });
  tt.equal(code, 1);
  tt.match(log.text(), /requires a TLS client certificate.*put tls\.crt and tls\.key in Secret \\"plugin-tls\\".*\[AuthFailed\]/);
  scan(tt, log.text());
});
