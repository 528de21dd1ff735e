// Agent configuration: validation names the exact bad field; file names are checked.
import t, { type Test } from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentConfig } from '../../src/agent-config/types.js';
import { ConfigError, fileNameProblem, parseAgentConfig, readAgentConfig, underRoot, validateAgentConfig } from '../../injector/config.js';
import { parseArgs } from '../../injector/cmd.js';

function baseConfig(): AgentConfig {
  return {
    version: 1,
    mode: 'native-sidecar',
    pod: { namespace: 'ns', name: 'app-0', serviceAccountName: 'app' },
    outputDir: '/var/run/esi',
    fileMode: 0o440,
    refreshSeconds: 60,
    port: 8099,
    stores: { 'SecretStore/ns/fake': { kind: 'SecretStore', name: 'fake', provider: { fake: { data: [{ key: 'k', value: 'v' }] } } } },
    secrets: [{ name: 'db', store: 'SecretStore/ns/fake', data: [{ secretKey: 'k', remoteRef: { key: 'k' } }], dataFrom: [] }],
    templates: [{ file: 'app.conf', template: '{{db.k}}' }],
  };
}

function expectField(tt: Test, mutate: (c: Record<string, unknown>) => void, field: string, re?: RegExp): void {
  const c = JSON.parse(JSON.stringify(baseConfig())) as Record<string, unknown>;
  mutate(c);
  try {
    validateAgentConfig(c);
    tt.fail(`expected an error on ${field}`);
  } catch (err) {
    tt.type(err, ConfigError);
    tt.equal((err as ConfigError).field, field, (err as Error).message);
    tt.notMatch((err as Error).message, /\n/, 'one line');
    if (re) tt.match((err as Error).message, re);
  }
}

t.test('a valid config passes', async (tt) => {
  tt.same(validateAgentConfig(baseConfig()), baseConfig());
  const init = { ...baseConfig(), mode: 'init-only' } as Partial<AgentConfig>;
  delete init.refreshSeconds;
  tt.ok(validateAgentConfig(init), 'init-only needs no refresh period');
});

t.test('each malformed field is named', async (tt) => {
  type C = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  const cases: [(c: C) => void, string, RegExp?][] = [
    [(c) => (c.version = 2), 'version', /must be 1, got 2/],
    [(c) => (c.mode = 'daemon'), 'mode'],
    [(c) => delete c.pod, 'pod'],
    [(c) => (c.pod.namespace = ''), 'pod.namespace'],
    [(c) => (c.outputDir = 'relative/dir'), 'outputDir', /absolute path/],
    [(c) => (c.fileMode = 0o1777), 'fileMode'],
    [(c) => (c.refreshSeconds = 0), 'refreshSeconds'],
    [(c) => (c.port = 70000), 'port'],
    [(c) => (c.tokenPath = 'token'), 'tokenPath'],
    [(c) => (c.stores['SecretStore/ns/fake'].kind = 'Store'), 'stores["SecretStore/ns/fake"].kind'],
    [(c) => (c.stores['SecretStore/ns/fake'].provider = {}), 'stores["SecretStore/ns/fake"].provider', /names no provider/],
    [(c) => (c.stores['SecretStore/ns/fake'].provider.vault = {}), 'stores["SecretStore/ns/fake"].provider', /exactly one/],
    [(c) => (c.secrets = {}), 'secrets'],
    [(c) => (c.secrets[0].name = '../etc'), 'secrets[0].name', /must not contain/],
    [(c) => (c.secrets[0].name = '..data'), 'secrets[0].name', /reserved/],
    [(c) => (c.secrets[0].store = 'nope'), 'secrets[0].store', /must be a key of stores/],
    [(c) => (c.secrets[0].data[0].secretKey = 'a/b'), 'secrets[0].data[0].secretKey'],
    [(c) => delete c.secrets[0].data[0].remoteRef, 'secrets[0].data[0].remoteRef'],
    [(c) => (c.secrets[0].dataFrom = null), 'secrets[0].dataFrom'],
    [(c) => (c.secrets[0].data = []), 'secrets[0]', /neither data nor dataFrom/],
    [(c) => c.secrets.push({ ...c.secrets[0] }), 'secrets[1].name', /used twice/],
    [(c) => (c.templates[0].file = 'db'), 'templates[0].file', /collides/],
    [(c) => (c.templates[0].file = '.'), 'templates[0].file'],
    [(c) => (c.templates[0].template = 1), 'templates[0].template'],
    [(c) => (c.onChange = { type: 'http', url: 'http://10.0.0.1/reload', method: 'POST' }), 'onChange.url', /not loopback/],
    [(c) => (c.onChange = { type: 'http', url: 'https://localhost/reload', method: 'POST' }), 'onChange.url', /http:\/\//],
    [(c) => (c.onChange = { type: 'http', url: 'http://localhost/reload', method: 'DELETE' }), 'onChange.method'],
    [(c) => (c.onChange = { type: 'signal', process: 'nginx', signal: 'SIGNOPE' }), 'onChange.signal'],
    [(c) => (c.onChange = { type: 'exec' }), 'onChange.type'],
  ];
  for (const [mutate, field, re] of cases) expectField(tt, mutate, field, re);
});

t.test('dynamic secrets: native-sidecar only, a store with leases, names apart', async (tt) => {
  type C = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  const BAO = 'SecretStore/ns/bao';
  const withDynamic = (c: C, d: C = {}) => {
    c.stores[BAO] = { kind: 'SecretStore', name: 'bao', provider: { vault: { server: 'http://127.0.0.1:8200', auth: { tokenSecretRef: { name: 't', key: 'token' } } } } };
    c.dynamicSecrets = [{ name: 'pg', store: BAO, path: 'database/creds/app', ...d }];
  };
  const ok = JSON.parse(JSON.stringify(baseConfig())) as C;
  withDynamic(ok, { method: 'POST', parameters: { ttl: '1h' }, overlapSeconds: 30, revokeOnExit: false });
  tt.ok(validateAgentConfig(ok), 'a dynamic secret from a vault store in native-sidecar mode');
  const cases: [(c: C) => void, string, RegExp?][] = [
    [(c) => { withDynamic(c); c.mode = 'init-only'; }, 'dynamicSecrets[0]', /need mode native-sidecar: an init-only agent exits after rendering/],
    [(c) => { withDynamic(c); c.mode = 'sidecar'; }, 'dynamicSecrets[0]', /two leases for one pod/],
    [(c) => withDynamic(c, { store: 'SecretStore/ns/fake' }), 'dynamicSecrets[0].store', /mints no leases/],
    [(c) => withDynamic(c, { store: 'nope' }), 'dynamicSecrets[0].store', /must be a key of stores/],
    [(c) => withDynamic(c, { name: 'db' }), 'dynamicSecrets[0].name', /used twice/],
    [(c) => withDynamic(c, { name: '..x' }), 'dynamicSecrets[0].name'],
    [(c) => withDynamic(c, { method: 'GET', parameters: { a: 1 } }), 'dynamicSecrets[0].parameters', /need method POST/],
    [(c) => withDynamic(c, { method: 'PUT' }), 'dynamicSecrets[0].method'],
    [(c) => withDynamic(c, { lease: 'x' }), 'dynamicSecrets[0].lease', /not a field/],
  ];
  for (const [mutate, field, re] of cases) expectField(tt, mutate, field, re);
});

t.test('JSON and sources', async (tt) => {
  tt.throws(() => parseAgentConfig('{nope', 'ESI_AGENT_CONFIG'), /invalid agent config: ESI_AGENT_CONFIG: not valid JSON/);
  await tt.rejects(readAgentConfig({ env: {} }), /ESI_AGENT_CONFIG: is not set/);
  const cfg = await readAgentConfig({ env: { ESI_AGENT_CONFIG: JSON.stringify(baseConfig()) } });
  tt.equal(cfg.mode, 'native-sidecar');
  const dir = await mkdtemp(join(tmpdir(), 'esi-cfg-'));
  tt.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'c.json'), JSON.stringify(baseConfig()));
  tt.equal((await readAgentConfig({ env: {}, configFile: join(dir, 'c.json') })).port, 8099);
  await tt.rejects(readAgentConfig({ env: {}, configFile: join(dir, 'missing.json') }), /cannot read \(ENOENT\)/);
});

t.test('file names and root', async (tt) => {
  for (const bad of ['', 'a/b', '..', '.', '..data', '..2024', 'a\0b', 'x'.repeat(256)]) tt.ok(fileNameProblem(bad), JSON.stringify(bad));
  for (const good of ['password', '.env', 'tls.crt', 'a..b', 'ca-bundle.pem']) tt.equal(fileNameProblem(good), undefined, good);
  tt.equal(underRoot('/tmp/r', '/var/run/esi'), '/tmp/r/var/run/esi');
  tt.equal(underRoot(undefined, '/var/run/esi'), '/var/run/esi');
});

t.test('command-line arguments', async (tt) => {
  tt.same(parseArgs(['--root', '/r', '--config-file=/c.json']), { root: '/r', configFile: '/c.json' });
  tt.same(parseArgs(['agent', '--help']), { help: true });
  tt.throws(() => parseArgs(['--root']), /--root needs a value/);
  tt.throws(() => parseArgs(['--bogus']), /unknown argument/);
});
