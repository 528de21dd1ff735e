// esi.dev/env without a cluster: the annotation's grammar, resolution against the
// ExternalSecrets, the pod ESI produces (fileKeyRef entries in the chosen containers, the
// env volume mounted into the agent alone) and every refusal, each naming what to fix.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import t from 'tap';
import { admit, type AdmitContext } from '../../webhook/admission.js';
import { ENV_DIR, ENV_FILE, ENV_VOLUME } from '../../src/pod-contract/env.js';
import { ManifestLookup } from '../../webhook/inject-cmd.js';
import { parseAnnotations } from '../../src/pod-contract/parse.js';
import { AGENT_CONFIG_ENV, type AgentConfig } from '../../src/agent-config/types.js';

const NS = 'team-a';
const es = (name: string, spec: object) => ({ apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name, namespace: NS }, spec: { secretStoreRef: { name: 'fake' }, ...spec } });
const objects = [
  { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
  { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'fake', namespace: NS }, spec: { provider: { fake: { data: [] } } } },
  es('db', { data: [{ secretKey: 'username', remoteRef: { key: 'u' } }, { secretKey: 'password', remoteRef: { key: 'p' } }] }),
  es('api', { data: [{ secretKey: 'API_TOKEN', remoteRef: { key: 't' } }] }),
  es('dashed', { data: [{ secretKey: 'db-password', remoteRef: { key: 'p' } }] }),
  es('found', { dataFrom: [{ extract: { key: 'all' } }] }),
];
const ctx: AdmitContext = { namespace: NS, lookup: new ManifestLookup(objects), resolve: {}, agent: { image: 'esi:test', defaultTokenAudience: 'esi' } };

function pod(annotations: Record<string, string>, spec: Partial<V1Pod['spec']> = {}): V1Pod {
  return { metadata: { name: 'p', labels: { 'esi.dev/inject': 'true' }, annotations }, spec: { containers: [{ name: 'app', image: 'app' }], ...spec } };
}

function mutated(p: V1Pod): V1Pod {
  const r = admit(p, ctx);
  if (r.kind !== 'mutated') throw new Error(`expected a mutation, got ${r.kind}: ${'message' in r ? r.message : ''}`);
  return r.pod;
}

function denial(p: V1Pod): string {
  const r = admit(p, ctx);
  if (r.kind !== 'denied') throw new Error(`expected a denial, got ${r.kind}`);
  return r.message;
}

const agentOf = (p: V1Pod): V1Container => p.spec!.initContainers!.find((c) => c.name === 'esi-agent')!;
const configOf = (c: V1Container): AgentConfig => JSON.parse(c.env!.find((e) => e.name === AGENT_CONFIG_ENV)!.value!) as AgentConfig;
const ref = (name: string) => ({ name, valueFrom: { fileKeyRef: { volumeName: ENV_VOLUME, path: ENV_FILE, key: name, optional: false } } });

t.test('the grammar: entries by ";", VAR=key or KEY, no list = every data key', async (t) => {
  const r = parseAnnotations({ 'esi.dev/env': ' db:DB_USER=username, DB_PASSWORD=password ; api ' });
  t.ok(r.ok);
  if (!r.ok) return;
  t.same(r.request.env, [
    { secret: 'db', vars: [{ name: 'DB_USER', key: 'username' }, { name: 'DB_PASSWORD', key: 'password' }] },
    { secret: 'api' },
  ]);
  t.same(r.request.secrets, [], 'esi.dev/secrets is not required with esi.dev/env');
});

t.test('the pod: fileKeyRef entries in the app, the env volume in the agent only', async (t) => {
  const out = mutated(pod({ 'esi.dev/env': 'db:DB_USER=username,DB_PASSWORD=password;api' }));
  const app = out.spec!.containers.find((c) => c.name === 'app')!;
  t.same(app.env, [ref('DB_USER'), ref('DB_PASSWORD'), ref('API_TOKEN')]);
  t.notOk(app.volumeMounts?.some((m) => m.name === ENV_VOLUME), 'the app does not mount the env volume');
  t.same(out.spec!.volumes!.find((v) => v.name === ENV_VOLUME), { name: ENV_VOLUME, emptyDir: { medium: 'Memory', sizeLimit: '4Mi' } });
  const agent = agentOf(out);
  t.same(agent.volumeMounts!.find((m) => m.name === ENV_VOLUME), { name: ENV_VOLUME, mountPath: ENV_DIR });
  const config = configOf(agent);
  t.same(config.env, { dir: ENV_DIR, file: ENV_FILE, vars: [
    { name: 'DB_USER', secret: 'db', key: 'username' },
    { name: 'DB_PASSWORD', secret: 'db', key: 'password' },
    { name: 'API_TOKEN', secret: 'api', key: 'API_TOKEN' },
  ] });
  t.same(config.secrets.map((s) => [s.name, s.files]), [['db', false], ['api', false]], 'ExternalSecrets named only in esi.dev/env are fetched, not written as files');
});

t.test('with esi.dev/secrets and esi.dev/containers: files and variables, only where asked', async (t) => {
  const out = mutated(pod({ 'esi.dev/secrets': 'db', 'esi.dev/env': 'db:DB_PASSWORD=password', 'esi.dev/containers': 'web', 'esi.dev/mode': 'init-only' }, {
    containers: [{ name: 'web', image: 'w', env: [{ name: 'PORT', value: '80' }] }, { name: 'log', image: 'l' }],
  }));
  const [web, log] = out.spec!.containers;
  t.same(web!.env, [{ name: 'PORT', value: '80' }, ref('DB_PASSWORD')], "the container's own variables stay first");
  t.equal(log!.env, undefined, 'a container not listed gets nothing');
  const config = configOf(agentOf(out));
  t.equal(config.mode, 'init-only');
  t.equal(config.secrets[0]!.files, undefined, 'an ExternalSecret in esi.dev/secrets is still mounted');
});

t.test('refusals name the annotation and what to do', async (t) => {
  const cases: [Record<string, string>, RegExp, Partial<V1Pod['spec']>?][] = [
    [{ 'esi.dev/env': 'db:db-password' }, /esi\.dev\/env: "db-password" must be an environment variable name.*name the variable: db:MY_VAR=db-password/],
    [{ 'esi.dev/env': 'db:1X=password' }, /"1X" must be an environment variable name/],
    [{ 'esi.dev/env': 'db:A=username,A=password' }, /sets A twice/],
    [{ 'esi.dev/env': 'db;db' }, /names ExternalSecret "db" twice/],
    [{ 'esi.dev/env': 'db', 'esi.dev/mode': 'sidecar' }, /esi\.dev\/env: needs esi\.dev\/mode native-sidecar or init-only/],
    [{ 'esi.dev/env': 'dashed' }, /ExternalSecret "dashed": key "db-password" is not an environment variable name; name the variable: "dashed:MY_VAR=db-password"/],
    [{ 'esi.dev/env': 'db:X=nope' }, /ExternalSecret "db" has no key "nope" \(its keys: username, password\)/],
    [{ 'esi.dev/env': 'found' }, /ExternalSecret "found" has dataFrom or a target\.template, so its keys are known only when the agent fetches; list the variables/],
    [{ 'esi.dev/env': 'missing:X=y' }, /esi\.dev\/env: ExternalSecret "missing" not found in namespace "team-a"/],
    [{ 'esi.dev/env': 'api' }, /container "app" already sets API_TOKEN/, { containers: [{ name: 'app', image: 'a', env: [{ name: 'API_TOKEN', value: 'x' }] }] }],
    [{ 'esi.dev/env': 'api' }, /already has a volume named "esi-env"/, { volumes: [{ name: 'esi-env', emptyDir: {} }] }],
    [{ 'esi.dev/env': 'api', 'esi.dev/containers': 'early,app' }, /init container "early" starts before ESI's agent/, {
      initContainers: [{ name: 'early', image: 'e' }, { name: 'mesh', image: 'm', restartPolicy: 'Always' }],
    }],
  ];
  for (const [annotations, why, spec] of cases) t.match(denial(pod(annotations, spec)), why, JSON.stringify(annotations));
});

t.test('dataFrom keys may be listed: the agent checks them when it fetches', async (t) => {
  const config = configOf(agentOf(mutated(pod({ 'esi.dev/env': 'found:TOKEN=token' }))));
  t.same(config.env!.vars, [{ name: 'TOKEN', secret: 'found', key: 'token' }]);
});

t.test('a cluster before 1.35 is refused at admission, saying why', async (t) => {
  const on = (gitVersion: string, minor: string) => admit(pod({ 'esi.dev/env': 'api' }), { ...ctx, clusterVersion: { major: '1', minor, gitVersion } });
  const old = on('v1.34.4', '34');
  t.equal(old.kind, 'denied');
  t.match(old.kind === 'denied' ? old.message : '', /esi\.dev\/env: needs Kubernetes 1\.35 or later .*this cluster's apiserver is v1\.34\.4, which would drop the field and refuse the pod/);
  t.equal(on('v1.35.4', '35').kind, 'mutated');
  t.equal(on('v1.36.0-gke.1', '36+').kind, 'mutated', 'a provider suffix on the minor version is read');
  t.equal(admit(pod({ 'esi.dev/secrets': 'api' }), { ...ctx, clusterVersion: { major: '1', minor: '30', gitVersion: 'v1.30.0' } }).kind, 'mutated', 'files need no particular version');
});
