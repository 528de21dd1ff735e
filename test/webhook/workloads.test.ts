// `esi inject` on workloads, the way a user runs it: the real command as a process, files
// in, stdout and the exit code out. The oracle is the webhook's own admission (admit) run on
// the pod each template's controller would create: the printed template must carry exactly
// what the webhook would give that pod, and nothing else in the workload may change.
import type { V1Pod } from '@kubernetes/client-node';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { isObject, type Json } from '../../src/json-object.js';
import { admit } from '../../webhook/admission.js';
import { ManifestLookup } from '../../webhook/inject-cmd.js';
import { AGENT_UID, isAgent } from '../../webhook/mutate.js';
import { AGENT_IMAGE, esiProcess } from '../support/webhook.js';

const NS = 'team-a';
const inputs: Json[] = [
  { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
  { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'vault', namespace: NS },
    spec: { provider: { vault: { server: 'https://vault.example:8200', path: 'secret', version: 'v2', auth: { kubernetes: { mountPath: 'kubernetes', role: 'app' } } } } } },
  { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'db', namespace: NS },
    spec: { secretStoreRef: { name: 'vault' }, data: [{ secretKey: 'password', remoteRef: { key: 'db', property: 'password' } }] } },
  { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config', namespace: NS }, data: { 'app.conf': 'x' } },
];

const LABELS = { app: 'web', 'esi.dev/inject': 'true' };
const ANNOTATIONS = { 'esi.dev/secrets': 'db', 'esi.dev/template-app.conf': 'password={{db.password}}\n' };
const podSpec = (extra: Json = {}) => ({ containers: [{ name: 'app', image: 'registry.example/app:1' }], ...extra });
const template = (labels: Json = LABELS, annotations: Json = ANNOTATIONS, extra: Json = {}) => ({ metadata: { labels, annotations }, spec: podSpec(extra) });

function workload(kind: string, name: string, tpl: Json = template()): Json {
  const apiVersion = kind === 'Job' || kind === 'CronJob' ? 'batch/v1' : 'apps/v1';
  const selector = { selector: { matchLabels: { app: 'web' } } };
  const spec = kind === 'CronJob' ? { schedule: '0 3 * * *', jobTemplate: { spec: { template: tpl } } } : kind === 'Job' ? { template: tpl } : { ...selector, template: tpl };
  return { apiVersion, kind, metadata: { name, namespace: NS, labels: { team: 'a' } }, spec };
}

const templateOf = (w: Json): Json => (w.kind === 'CronJob' ? dig(w, 'spec', 'jobTemplate', 'spec', 'template') : dig(w, 'spec', 'template'));
function dig(o: unknown, ...path: string[]): Json {
  for (const k of path) o = isObject(o) ? o[k] : undefined;
  if (!isObject(o)) throw new Error(`no ${path.join('.')}`);
  return o;
}

/** What the webhook does to the pod created from `w`'s template: admit() on that Pod (the
 *  workload's namespace, the `<name>-` generateName the controllers give their pods). */
function webhookPod(w: Json): V1Pod {
  const tpl = templateOf(w);
  const meta = w.metadata as Json;
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { ...(tpl.metadata as Json), namespace: meta.namespace, generateName: `${String(meta.name)}-` }, spec: tpl.spec } as V1Pod;
  const result = admit(pod, { namespace: NS, lookup: new ManifestLookup(inputs), resolve: {}, agent: { image: AGENT_IMAGE, defaultTokenAudience: 'esi', runAsUser: AGENT_UID } });
  if (result.kind !== 'mutated') throw new Error(`the webhook did not mutate ${String(meta.name)}'s pod: ${JSON.stringify(result)}`);
  return result.pod;
}

/** The printed workload is the input with its template's spec and annotations (alone)
 *  replaced by the webhook's pod's. */
function checkInjected(t: Test, printed: Json, input: Json): void {
  const expected = webhookPod(input);
  const tpl = templateOf(printed);
  const what = `${String(input.kind)} ${String((input.metadata as Json).name)}`;
  t.same(tpl.spec, expected.spec, `${what}: the template's spec is the webhook's pod's`);
  t.same((tpl.metadata as Json).annotations, expected.metadata!.annotations, `${what}: and its annotations (esi.dev/injected)`);
  t.same((tpl.metadata as Json).labels, (templateOf(input).metadata as Json).labels, `${what}: its labels unchanged`);
  t.notOk('namespace' in (tpl.metadata as Json) || 'generateName' in (tpl.metadata as Json) || 'ownerReferences' in (tpl.metadata as Json), `${what}: nothing of the pod's own identity in the template`);
  const outside = (w: Json) => stringify({ ...w, spec: w.kind === 'CronJob' ? { ...(w.spec as Json), jobTemplate: null } : { ...(w.spec as Json), template: null } });
  t.equal(outside(printed), outside(input), `${what}: nothing outside the template changed`);
  const spec = tpl.spec as V1Pod['spec'];
  t.ok([...spec!.initContainers ?? [], ...spec!.containers].some(isAgent), `${what}: the agent is in the template`);
}

let dir: string;
t.before(async () => void (dir = await mkdtemp(join(tmpdir(), 'esi-inject-wl-'))));
t.teardown(() => rm(dir, { recursive: true, force: true }));

async function file(name: string, docs: unknown[]): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, docs.map((d) => stringify(d)).join('---\n'));
  return path;
}

/** `esi inject ARGS`, stdout and stderr apart ('close': after both streams ended). */
async function inject(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { child } = esiProcess(['inject', '--agent-image', AGENT_IMAGE, ...args]);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  return { code, stdout, stderr };
}

const yamlDocs = (text: string): Json[] => parseAllDocuments(text).map((d) => d.toJS() as Json);

t.test('a Deployment: its pod template carries the agent exactly as the webhook gives it', async (t) => {
  const deploy = workload('Deployment', 'web');
  const r = await inject('-f', await file('deploy.yaml', [deploy]), '-f', await file('inputs.yaml', inputs));
  t.equal(r.code, 0, r.stderr);
  const docs = yamlDocs(r.stdout);
  t.same(docs.map((d) => d.kind), ['Deployment'], 'only the workload is printed: not the store, the ExternalSecret, the ConfigMap or the Namespace');
  checkInjected(t, docs[0]!, deploy);
  t.match(dig(docs[0], 'spec', 'template', 'spec').initContainers, [{ env: [{ name: 'ESI_AGENT_CONFIG', value: /"namespace":"team-a"/ }] }], "the agent's pod is in the workload's namespace");
});

t.test('a CronJob, -o json: one JSON object, its job template\'s pod injected; a Job\'s sidecar warning', async (t) => {
  const cron = workload('CronJob', 'nightly', template(LABELS, { ...ANNOTATIONS, 'esi.dev/mode': 'sidecar' }, { restartPolicy: 'Never' }));
  const r = await inject('-o', 'json', '-f', await file('cron.yaml', [...inputs, cron]));
  t.equal(r.code, 0, r.stderr);
  const printed = JSON.parse(r.stdout) as Json;
  t.equal(printed.kind, 'CronJob', 'one object, not a List');
  checkInjected(t, printed, cron);
  t.match(r.stderr, /Warning: CronJob "nightly": esi\.dev\/mode: "sidecar" keeps a Job's pod running/, "the webhook's warning for Jobs' pods, named by the workload");
});

t.test('a multi-document file with a List: every workload injected, in order, YAML and JSON alike', async (t) => {
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'solo', namespace: NS, labels: LABELS, annotations: ANNOTATIONS }, spec: podSpec() };
  const workloads = [workload('Deployment', 'web'), workload('StatefulSet', 'db'), workload('DaemonSet', 'node-agent'),
    workload('ReplicaSet', 'rs'), workload('Job', 'migrate', template(LABELS, ANNOTATIONS, { restartPolicy: 'Never' }))];
  const list = { apiVersion: 'v1', kind: 'List', items: workloads.slice(3) };
  const path = await file('all.yaml', [inputs[0], workloads[0], inputs[1], workloads[1], inputs[2], workloads[2], inputs[3], list, pod]);
  const yaml = await inject('-f', path);
  t.equal(yaml.code, 0, yaml.stderr);
  const docs = yamlDocs(yaml.stdout);
  t.same(docs.map((d) => `${String(d.kind)}/${String((d.metadata as Json).name)}`), ['Deployment/web', 'StatefulSet/db', 'DaemonSet/node-agent', 'ReplicaSet/rs', 'Job/migrate', 'Pod/solo'], 'the pods and workloads, in input order; nothing else');
  for (const [i, w] of workloads.entries()) checkInjected(t, docs[i]!, w);
  const soloAsWebhook = admit(pod as V1Pod, { namespace: NS, lookup: new ManifestLookup(inputs), resolve: {}, agent: { image: AGENT_IMAGE, defaultTokenAudience: 'esi', runAsUser: AGENT_UID } });
  t.same(docs[5], soloAsWebhook.kind === 'mutated' ? soloAsWebhook.pod : undefined, 'the Pod next to them is injected as before');
  const json = await inject('-o', 'json', '-f', path);
  t.equal(json.code, 0, json.stderr);
  const parsed = JSON.parse(json.stdout) as Json;
  t.equal(parsed.kind, 'List', 'several objects: a List, as kubectl prints them');
  t.same(parsed.items, docs, '-o json holds the same objects as the YAML');
});

t.test('a template the webhook denies: exit 1, the denial names the workload, nothing printed', async (t) => {
  const bad = workload('Deployment', 'web', template(LABELS, { 'esi.dev/secrets': 'missing' }));
  const good = workload('StatefulSet', 'db');
  const r = await inject('-f', await file('denied.yaml', [...inputs, good, bad]));
  t.equal(r.code, 1);
  t.match(r.stderr, /^Deployment "web": ESI cannot inject secrets into pod "web-\*": .*ExternalSecret "missing"/m);
  t.equal(r.stdout, '', 'nothing on stdout, so `| kubectl apply -f -` applies nothing, not even the workload that passed');
});

t.test('a template without the opt-in label: printed unchanged, said on stderr', async (t) => {
  const plain = workload('Deployment', 'web', template({ app: 'web' }, { 'vault.hashicorp.com/agent-inject': 'true', 'vault.hashicorp.com/role': 'app' }));
  (plain.metadata as Json).labels = { 'esi.dev/inject': 'true' };
  const r = await inject('-f', await file('plain.yaml', [...inputs, plain]));
  t.equal(r.code, 0, r.stderr);
  t.same(parse(r.stdout), plain, 'the workload as given');
  t.match(r.stderr, /Deployment "web": its pod template is not labelled esi\.dev\/inject: "true"; printed unchanged \(the label is on the Deployment; the webhook reads it on spec\.template\.metadata\.labels\)/);
  t.match(r.stderr, /Deployment "web": its pod template carries vault\.hashicorp\.com\/ annotations, which ESI does not read \(docs\/migration\.md maps them/, 'the vault-k8s annotations left behind are pointed at');
});

t.test('unusable input exits 2 and names what to fix', async (t) => {
  const broken = workload('Deployment', 'web', { metadata: { labels: LABELS }, spec: { containers: 'app' } });
  const shape = await inject('-f', await file('broken.yaml', [...inputs, broken]));
  t.equal(shape.code, 2);
  t.match(shape.stderr, /Deployment "web" is malformed: spec\.template\.spec\.containers: must be a list/);
  t.equal(shape.stdout, '');
  const none = await inject('-f', await file('none.yaml', inputs));
  t.equal(none.code, 2);
  t.match(none.stderr, /expected a Pod or a workload \(Deployment, StatefulSet, DaemonSet, ReplicaSet, ReplicationController, Job, CronJob\) in the input, found none/);
  const output = await inject('-o', 'xml', '-f', await file('deploy2.yaml', [workload('Deployment', 'web')]));
  t.equal(output.code, 2);
  t.match(output.stderr, /-o must be yaml or json, got "xml"/);
});
