// Path and symlink attacks against the agent: credential and ConfigMap references that
// climb out of their mount, planted symlinks in the output directory, and every failure
// path of the agent scanned for canary values.
import { mkdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import t from 'tap';
import { Fetcher } from '../../injector/fetch.js';
import { renderFiles } from '../../injector/render.js';
import { AtomicWriter } from '../../injector/write.js';
import { startAgent } from '../../injector/agent.js';
import { parseAgentConfig } from '../../injector/config.js';
import type { AgentStore } from '../../src/agent-config/types.js';
import { TemplateEngine } from '../../src/templating/index.js';
import { assertNoCanary, CANARIES, CANARY_PASSWORD, captureLogger, fakeConfig, STORE, tempRoot } from '../support/fixtures/agent.js';

const silent = pino({ level: 'silent' });
const enc = (s: string) => new TextEncoder().encode(s);

t.test('ConfigMap and credential references cannot climb out of their mount', async (t) => {
  const root = await tempRoot(t);
  await mkdir(join(root, 'cm', 'ca'), { recursive: true });
  await writeFile(join(root, 'outside'), CANARY_PASSWORD);
  await writeFile(join(root, 'cm', 'ca', 'ca.crt'), 'CA');
  const store: AgentStore = { kind: 'SecretStore', name: 'x', provider: { fake: { data: [] } }, configMapsDir: '/cm', credentialsDir: '/cm' };
  const fetcher = new Fetcher({ config: fakeConfig(), root, logger: silent }) as unknown as Record<string, (...a: unknown[]) => Promise<Uint8Array>>;
  for (const method of ['readConfigMap', 'readCredential']) {
    t.equal(new TextDecoder().decode(await fetcher[method]!('s', store, { name: 'ca', key: 'ca.crt' })), 'CA', `${method}: a mounted key reads`);
    for (const ref of [{ name: '..', key: 'outside' }, { name: 'ca', key: '../../outside' }, { name: '../cm/ca', key: 'ca.crt' }]) {
      await t.rejects(fetcher[method]!('s', store, ref), /invalid (credential|ConfigMap) reference/, `${method} ${JSON.stringify(ref)}`);
    }
  }
});

t.test('planted symlinks in the output directory are replaced, never followed', async (t) => {
  const root = await tempRoot(t);
  const out = join(root, 'out');
  const victim = join(root, 'victim');
  await mkdir(out);
  await mkdir(victim);
  await writeFile(join(victim, 'keep'), 'untouched');
  await symlink(victim, join(out, 'db'));
  await symlink(victim, join(out, '..data'));
  const writer = new AtomicWriter(out, 0o440, silent);
  await writer.init();
  await writer.write(new Map([['db/password', enc('v1')], ['app.conf', enc('x')]]));
  t.equal(await readFile(join(victim, 'keep'), 'utf8'), 'untouched', 'the victim directory is intact');
  t.equal(await readlink(join(out, 'db')), '..data/db', 'the planted link was replaced');
  t.not(await readlink(join(out, '..data')), victim, '..data points to a generation of ours');
  t.equal(await readFile(join(out, 'db', 'password'), 'utf8'), 'v1');
});

t.test('keys from stores cannot escape the output directory', async (t) => {
  const engine = new TemplateEngine();
  const config = fakeConfig({ templates: [] });
  for (const key of ['../x', '..data', '..', 'a/b', 'a\0b']) {
    t.throws(() => renderFiles(config, new Map([['db', { [key]: enc('v') }], ['api', {}]]), engine), /cannot be a file name/, JSON.stringify(key));
  }
});

t.test('canary scan: every failure path of the agent logs no value', async (t) => {
  const root = await tempRoot(t);
  const cases: Record<string, Parameters<typeof fakeConfig>[0]> = {
    'missing key in a template': { templates: [{ file: 'a', template: '{{db.nosuch}} {{db.password}}' }] },
    'lookup into a value': { templates: [{ file: 'a', template: '{{db.password.x}}' }] },
    'helper on a value': { templates: [{ file: 'a', template: '{{b64dec db.password}}{{fromJson db.password}}' }] },
    'strict lookup helper': { templates: [{ file: 'a', template: '{{lookup db db.password}}' }] },
    'template bomb': { templates: [{ file: 'a', template: `{{#each @root.db}}${'{{#each @root.db}}'.repeat(6)}{{db.password}}${'{{/each}}'.repeat(7)}` }] },
    'rendered key of a literal': {
      secrets: [{ name: 'db', store: STORE, data: [], dataFrom: [{ extract: { key: 'db/creds' } }], template: { templateFrom: [{ literal: '"{{password}}/x": y' }] } }],
      templates: [],
    },
  };
  for (const [what, overrides] of Object.entries(cases)) {
    const { logger, text } = captureLogger();
    const agent = await startAgent({ config: fakeConfig({ mode: 'init-only', ...overrides }), root: join(root, what.replace(/\W/g, '-')), logger });
    t.equal(await agent.done, 1, `${what}: the render fails`);
    assertNoCanary(t, text(), what);
  }
  for (const bad of [`{"version":1,"x":"${CANARY_PASSWORD}"`, JSON.stringify({ ...fakeConfig(), port: CANARIES[0] })]) {
    const err = (() => {
      try {
        parseAgentConfig(bad, 'ESI_AGENT_CONFIG');
      } catch (e) {
        return (e as Error).message;
      }
      return 'accepted';
    })();
    assertNoCanary(t, err, 'config error');
  }
});
