// Every example runs end to end: examples/pod.yaml with every example ExternalSecret goes
// through `esi inject` (the webhook's admission path, offline), and the injected agent
// container runs (`esi agent --root`, init-only) against the fake store of
// examples/stores.yaml; the files it writes are what the comments in the examples promise.
// The example CRD documents are applied to the real apiserver by test/e2e/api/crds.test.ts.
import t from 'tap';
import { mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { packageRoot } from '../src/api/crds.js';
import { agentContainer, runAgentProcess } from './support/kubelet.js';
import { esiProcess } from './support/webhook.js';

const EXAMPLES = join(packageRoot(), 'examples');
const exit = (p: ReturnType<typeof esiProcess>) => new Promise<number | null>((r) => p.child.on('exit', r));

async function docs(file: string): Promise<{ kind: string; metadata: { name: string; annotations?: Record<string, string> } }[]> {
  return parseAllDocuments(await readFile(join(EXAMPLES, file), 'utf8')).map((d) => d.toJS() as never);
}

t.test('examples/ holds only what runs here: manifests for the fake store, the pod, the plugin', async (t) => {
  const files = (await readdir(EXAMPLES)).sort();
  // stores-as-sinks/ (PushSecret producer → consumer) is exercised by test/e2e/api/crds.test.ts
  // and the reconciler's tests; grpc-plugin/ by the grpc provider tests; generators.yaml by
  // test/e2e/generators/generators.test.ts.
  t.same(files, ['externalsecrets.yaml', 'generators.yaml', 'grpc-plugin', 'pod.yaml', 'pushsecret.yaml', 'stores-as-sinks', 'stores.yaml']);
  const stores = (await docs('stores.yaml')).filter((d) => d.kind.endsWith('SecretStore'));
  t.same(stores.map((s) => s.metadata.name), ['fake']);
  const pod = (await docs('pod.yaml'))[0]!;
  const mounted = pod.metadata.annotations?.['esi.dev/secrets']?.split(',') ?? [];
  const defined = (await docs('externalsecrets.yaml')).filter((d) => d.kind === 'ExternalSecret').map((d) => d.metadata.name);
  t.same(mounted.sort(), defined.sort(), 'the pod mounts every example ExternalSecret');
});

t.test('esi inject + the agent render every example', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'esi-examples-'));
  // The example pod, run once (init-only) so that the agent exits after writing the files.
  const pod = parse(await readFile(join(EXAMPLES, 'pod.yaml'), 'utf8')) as V1Pod;
  pod.metadata!.annotations!['esi.dev/mode'] = 'init-only';
  await writeFile(join(dir, 'pod.yaml'), stringify(pod));
  const inject = esiProcess(['inject', '-f', join(dir, 'pod.yaml'), '-f', join(EXAMPLES, 'stores.yaml'), '-f', join(EXAMPLES, 'externalsecrets.yaml')]);
  t.equal(await exit(inject), 0, 'esi inject admits the pod');
  const out = inject.output();
  t.match(out, /Warning: SecretStore "fake" uses the fake provider/, 'the fake store is flagged as test-only');
  // stderr (the warning) and stdout (the pod) share the captured output: the pod starts at apiVersion.
  const mutated = parse(out.slice(out.search(/^apiVersion:/m))) as V1Pod | undefined;
  if (mutated?.kind !== 'Pod') throw new Error(`esi inject printed no pod: ${out.slice(0, 2000)}`);
  const container = agentContainer(mutated);
  const root = join(dir, 'root');
  const agent = runAgentProcess(container, root);
  t.equal(await exit(agent), 0, `the agent wrote the files and exited 0\n${agent.output().slice(-2000)}`);
  const base = join(root, '/var/run/secrets/esi');
  const file = (p: string) => readFile(join(base, p), 'utf8');
  t.equal(await file('db/username'), 'demo-user');
  t.equal(await file('db/password'), 'correct-horse-battery-staple');
  t.same((await readdir(join(base, 'db-config'))).sort(), ['database', 'host', 'port', 'sslmode']);
  t.equal(await file('db-config/host'), 'postgres.demo.svc');
  t.same((await readdir(join(base, 'api-keys'))).sort(), ['payments', 'search']);
  t.same((await readdir(join(base, 'payments-env'))).sort(), ['PAYMENTS_STRIPE_KEY', 'PAYMENTS_WEBHOOK_SECRET'], 'regexp then Go transform');
  t.equal(await file('payments-env/PAYMENTS_STRIPE_KEY'), 'sk_demo_stripe_0003');
  t.match(await file('tls-ca/ca.crt'), /MIIBdemo\n/);
  t.equal(await file('tls-ca/signing-key'), 'demo-signing-key');
  t.same((await readdir(join(base, 'app-config'))).sort(), ['DATABASE_URL', 'app.yaml'], 'Go template: data and templateFrom literal');
  t.equal(await file('app-config/DATABASE_URL'), 'postgres://demo-user:correct-horse-battery-staple@postgres.demo.svc:5432/orders?sslmode=require');
  t.equal(await file('app-config/app.yaml'), 'database:\n  user: demo-user\n  password: "correct-horse-battery-staple"\n  host: postgres.demo.svc\n');
  t.equal(await file('app-config-hbs/DATABASE_URL'), 'postgres://demo-user:correct-horse-battery-staple@postgres.demo.svc:5432/orders');
  t.equal(await file('db.env'), 'DB_USER=demo-user\nDB_PASSWORD=correct-horse-battery-staple\n');
  t.notOk(agent.output().includes('correct-horse-battery-staple'), 'no value in the agent log');
});
