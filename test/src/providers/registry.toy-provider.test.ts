// Adding a provider takes one folder and one registry line: the toy provider of ./toy is
// registered here (the line a new built-in provider adds to src/providers/registry.ts),
// and then the webhook (admission and `esi inject`) and the agent use it with no other
// change — its spec rules deny a bad store at admission, its credential reference is
// mounted, its identity audience gets a token, and the agent reads through its client.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import { stringify } from 'yaml';
import { AGENT_CONFIG_ENV } from '../../../src/agent-config/types.js';
import { loadProvider, providerNames, registerProvider } from '../../../src/providers/registry.js';
import { parseAgentConfig } from '../../../injector/config.js';
import { Fetcher } from '../../../injector/fetch.js';
import { admit } from '../../../webhook/admission.js';
import { main as inject, ManifestLookup } from '../../../webhook/inject-cmd.js';
import { meta } from '../../support/toy-provider/meta.js';

registerProvider({ meta, load: () => import('../../support/toy-provider/index.js') });

const NS = 'team-toy';
const TOKEN = 'toy-token-canary-7f3a';
const store = (name: string, toy: Record<string, unknown>) => ({
  apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name, namespace: NS }, spec: { provider: { toy } },
});
const es = (name: string, storeName: string) => ({
  apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name, namespace: NS },
  spec: { secretStoreRef: { name: storeName, kind: 'SecretStore' }, data: [{ secretKey: 'hello', remoteRef: { key: 'world' } }] },
});
const objects = [
  { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
  store('good', { greeting: 'Hello', tokenRef: { name: 'toy-creds', key: 'token' }, audience: 'toy.example' }),
  store('bad', { greeting: 42 }),
  es('es-good', 'good'),
  es('es-bad', 'bad'),
];
const pod = (secrets: string): V1Pod => ({
  apiVersion: 'v1', kind: 'Pod',
  metadata: { name: 'p', namespace: NS, labels: { 'esi.dev/inject': 'true' }, annotations: { 'esi.dev/secrets': secrets } },
  spec: { containers: [{ name: 'app', image: 'app' }] },
});
const ctx = { namespace: NS, lookup: new ManifestLookup(objects), resolve: {}, agent: { image: 'esi:test', defaultTokenAudience: 'esi' } };

function agentContainer(p: V1Pod): V1Container {
  const all = [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])];
  return all.find((c) => c.env?.some((e) => e.name === AGENT_CONFIG_ENV))!;
}

t.test('the registry lists the toy provider after its one line', async (t) => {
  t.ok(providerNames().includes('toy'));
  t.equal((await loadProvider('toy')).name, 'toy', 'its client module loads lazily');
});

t.test('admission denies a store the toy provider rejects, naming the field', async (t) => {
  const r = admit(pod('es-bad'), ctx);
  t.equal(r.kind, 'denied');
  t.match(r.kind === 'denied' ? r.message : '', /SecretStore "team-toy\/bad": spec\.provider\.toy\.greeting must be a non-empty string/);
});

t.test('admission mounts what the toy provider references; the agent reads through it', async (t) => {
  const r = admit(pod('es-good'), ctx);
  t.equal(r.kind, 'mutated');
  if (r.kind !== 'mutated') return;
  const volumes = r.pod.spec!.volumes!;
  t.ok(volumes.some((v) => v.secret?.secretName === 'toy-creds' && v.secret.items?.[0]?.key === 'token'), 'its tokenRef is mounted');
  t.match(volumes.find((v) => v.name === 'esi-tokens')?.projected?.sources, [{ serviceAccountToken: { audience: 'toy.example' } }], 'its audience gets a token');

  const agent = agentContainer(r.pod);
  const config = parseAgentConfig(agent.env!.find((e) => e.name === AGENT_CONFIG_ENV)!.value!, AGENT_CONFIG_ENV);
  const root = await mkdtemp(join(tmpdir(), 'esi-toy-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const key = Object.keys(config.stores)[0]!;
  const agentStore = config.stores[key]!;
  await mkdir(join(root, agentStore.credentialsDir!, 'toy-creds'), { recursive: true });
  await writeFile(join(root, agentStore.credentialsDir!, 'toy-creds', 'token'), TOKEN);
  await mkdir(join(root, agentStore.tokenPath!, '..'), { recursive: true });
  await writeFile(join(root, agentStore.tokenPath!), 'pod-jwt');
  const fetcher = new Fetcher({ config, root, logger: pino({ level: 'silent' }) });
  t.teardown(() => fetcher.close());
  const fetched = await fetcher.fetchAll();
  const value = Buffer.from(fetched.get('es-good')!.hello!).toString('utf8');
  t.equal(value, `Hello, world (token ${TOKEN.length} bytes) as the pod`, 'the agent fetched through the toy client with the mounted credential and token');
});

t.test('esi inject uses the same rules', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'esi-toy-inject-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'all.yaml');
  await writeFile(file, [...objects, pod('es-bad')].map((o) => stringify(o)).join('---\n'));
  const err: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string) => (err.push(String(chunk)), true)) as typeof process.stderr.write;
  let code: number;
  try {
    code = await inject(['-f', file]);
  } finally {
    process.stderr.write = write;
  }
  t.equal(code, 1, 'denied');
  t.match(err.join(''), /spec\.provider\.toy\.greeting must be a non-empty string/);
});
