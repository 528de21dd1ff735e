// Pure tests of the pod contract: the annotation table, resolution rules and the
// mutation function, without a cluster (the integration tests cover the API path).
import type { V1Pod } from '@kubernetes/client-node';
import t from 'tap';
import { admit, type AdmitContext } from '../../webhook/admission.js';
import { ManifestLookup } from '../../webhook/inject-cmd.js';
import { parseAnnotations } from '../../src/pod-contract/parse.js';
import { parseDuration, parseQuantity } from '../../src/pod-contract/values.js';

const NS = 'team-a';
const objects = [
  { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, labels: { tier: 'prod' } } },
  { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'vault', namespace: NS },
    spec: { provider: { vault: { server: 'https://v:8200', auth: { appRole: { path: 'approle', roleId: 'r', secretRef: { name: 'approle', key: 'secret-id' } } } } } } },
  { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'vault2', namespace: NS },
    spec: { provider: { vault: { server: 'https://v:8200', auth: { tokenSecretRef: { name: 'approle', key: 'token' } } } } } },
  { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'vault-bad', namespace: NS },
    spec: { provider: { vault: { server: 'ftp://v', auth: { tokenSecretRef: { name: 'approle', key: 'token' } } } } } },
  { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'other', namespace: NS },
    spec: { provider: { alibaba: { regionID: 'eu-central-1' } } } },
  { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'fake', namespace: NS },
    spec: { provider: { fake: { data: [{ key: 'k', value: 'v' }] } } } },
  { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'dev-only', namespace: NS },
    spec: { controller: 'dev', provider: { fake: { data: [] } } } },
  { apiVersion: 'external-secrets.io/v1', kind: 'ClusterSecretStore', metadata: { name: 'prod' },
    spec: { conditions: [{ namespaceSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['prod'] }] } }],
      provider: { aws: { service: 'SecretsManager', region: 'eu-west-1', role: 'arn:aws:iam::123456789012:role/app' } } } },
  { apiVersion: 'external-secrets.io/v1', kind: 'ClusterSecretStore', metadata: { name: 'regex' },
    spec: { conditions: [{ namespaceRegexes: ['team-(b|c)'] }], provider: { fake: { data: [] } } } },
  ...['vault', 'vault2', 'vault-bad', 'other', 'fake', 'dev-only'].map((store) => es(`es-${store}`, store)),
  es('es-prod', 'prod', 'ClusterSecretStore'),
  es('es-regex', 'regex', 'ClusterSecretStore'),
];

function es(name: string, store: string, kind = 'SecretStore') {
  return { apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name, namespace: NS },
    spec: { secretStoreRef: { name: store, kind }, data: [{ secretKey: 'k', remoteRef: { key: 'k' } }] } };
}

const ctx = (extra: Partial<AdmitContext> = {}): AdmitContext => ({
  namespace: NS, lookup: new ManifestLookup(objects), resolve: {}, agent: { image: 'esi:test', defaultTokenAudience: 'esi' }, ...extra,
});

function pod(annotations: Record<string, string>): V1Pod {
  return { metadata: { name: 'p', labels: { 'esi.dev/inject': 'true' }, annotations }, spec: { containers: [{ name: 'app', image: 'app' }] } };
}

t.test('defaults come from the table', async (t) => {
  const r = parseAnnotations({ 'esi.dev/secrets': 'a, b' });
  t.ok(r.ok);
  if (!r.ok) return;
  t.same(r.request.secrets, ['a', 'b']);
  t.equal(r.request.mode, 'native-sidecar');
  t.equal(r.request.mountPath, '/var/run/secrets/esi');
  t.equal(r.request.refreshSeconds, 3600);
  t.equal(r.request.fileMode, 0o444);
  t.equal(r.request.containers, undefined);
});

t.test('every bad value is reported at once, naming the annotation', async (t) => {
  const r = parseAnnotations({
    'esi.dev/secrets': 'Bad_Name', 'esi.dev/mount-path': 'relative', 'esi.dev/file-mode': '0666',
    'esi.dev/refresh-interval': '5s', 'esi.dev/agent-port': '80', 'esi.dev/volume-size-limit': '10Gi',
    'esi.dev/template-../etc/passwd': 'x', 'esi.dev/on-change': 'signal:SIGKILL:app',
  });
  t.notOk(r.ok);
  if (r.ok) return;
  const text = r.problems.join('\n');
  for (const re of [/esi\.dev\/secrets: "Bad_Name" is not a valid ExternalSecret name/, /esi\.dev\/mount-path: must be an absolute path/,
    /esi\.dev\/file-mode: must not be group- or world-writable/, /esi\.dev\/refresh-interval: must be at least 10s/,
    /esi\.dev\/agent-port: must be a port number between 1024 and 65535/, /esi\.dev\/volume-size-limit: "10Gi" is out of the allowed range/,
    /esi\.dev\/template-\.\.\/etc\/passwd: "\.\.\/etc\/passwd" is not a valid file name/, /signal SIGKILL is not allowed/]) t.match(text, re);
  t.equal(r.problems.length, 8, 'one problem per bad annotation');
});

t.test('value parsers', async (t) => {
  t.equal(parseDuration('1h30m'), 5400);
  t.equal(parseDuration('250ms'), 0.25);
  t.throws(() => parseDuration('1d'), /"1d" must be a Go duration/);
  t.throws(() => parseDuration(''), /must be a Go duration/);
  t.equal(parseQuantity('32Mi', { min: 0, max: 1e9 }), '32Mi');
  t.throws(() => parseQuantity('32MB', { min: 0, max: 1e9 }), /Kubernetes quantity/);
});

t.test('the mutation is pure and the patch is its diff', async (t) => {
  const input = pod({ 'esi.dev/secrets': 'es-vault,es-vault2' });
  const before = structuredClone(input);
  const out = admit(input, ctx());
  t.same(input, before, 'the input pod is not modified');
  t.equal(out.kind, 'mutated');
  if (out.kind !== 'mutated') return;
  const fjp = (await import('fast-json-patch')).default;
  t.same(fjp.applyPatch(structuredClone(input), out.patch).newDocument, out.pod, 'applying the patch gives the mutated pod');
  const creds = out.pod.spec!.volumes!.filter((v) => v.secret);
  t.equal(creds.length, 1, 'two stores using one Secret share one volume');
  t.same(creds[0]!.secret!.items, [{ key: 'secret-id', path: 'secret-id' }, { key: 'token', path: 'token' }], 'with exactly the keys referenced');
  t.same(admit(out.pod, ctx()), { kind: 'unchanged' }, 'admitting the result again changes nothing');
  // The mutated pod shares what it does not change with the input: a deeply frozen input
  // fails loudly on any write into it, and gives the same patch.
  const deepFreeze = <T>(o: T): T => {
    if (o && typeof o === 'object') for (const v of Object.values(Object.freeze(o))) deepFreeze(v);
    return o;
  };
  const again = admit(deepFreeze(structuredClone({ ...input, spec: { ...input.spec!, initContainers: [{ name: 'setup', image: 'busybox', volumeMounts: [{ name: 'x', mountPath: '/x' }] }] } })), ctx());
  t.equal(again.kind, 'mutated', 'a frozen pod with init containers and mounts is mutated without a write into it');
  t.same(admit(deepFreeze(structuredClone(input)), ctx()), out, 'a frozen input gives the same result');
});

t.test('resolution rules', async (t) => {
  const deny = (ann: Record<string, string>, c = ctx()) => {
    const r = admit(pod(ann), c);
    return r.kind === 'denied' ? r.message : `not denied: ${r.kind}`;
  };
  t.equal(admit(pod({ 'esi.dev/secrets': 'es-prod' }), ctx()).kind, 'mutated', 'matchExpressions on namespace labels admit');
  t.match(deny({ 'esi.dev/secrets': 'es-regex' }), /ClusterSecretStore "regex" may not be used from namespace "team-a"/);
  t.match(deny({ 'esi.dev/secrets': 'es-dev-only' }, ctx({ resolve: { storeClasses: [''] } })), /spec\.controller "dev" is not served by this ESI instance/);
  t.equal(admit(pod({ 'esi.dev/secrets': 'es-dev-only' }), ctx()).kind, 'mutated', 'by default every class is served');
  t.match(deny({ 'esi.dev/secrets': 'es-vault-bad' }), /SecretStore "team-a\/vault-bad": spec\.provider\.vault\.server must use https:\/\/ or http:\/\//,
    'the provider\'s own spec rules deny at admission, naming the field');
  t.match(deny({ 'esi.dev/secrets': 'es-other' }), /spec\.provider\.alibaba is not supported by ESI \(supported: fake, kubernetes, vault, openBao, aws, azurekv, gcpsm, grpc, webhook, onepassword, doppler, bitwardensecretsmanager, infisical, akeyless, conjur\)/);
  const fake = admit(pod({ 'esi.dev/secrets': 'es-fake' }), ctx());
  t.match(fake.kind === 'mutated' ? fake.warnings : [], [/uses the fake provider/], 'the fake provider comes with a warning');
  const aws = admit(pod({ 'esi.dev/secrets': 'es-prod', 'esi.dev/token-audience': 'custom' }), ctx());
  const vols = aws.kind === 'mutated' ? aws.pod.spec!.volumes! : [];
  t.same(vols.find((v) => v.name === 'esi-tokens')?.projected?.sources, [{ serviceAccountToken: { audience: 'sts.amazonaws.com', expirationSeconds: 3600, path: 'token-0' } }],
    'AWS web identity gets the STS audience');
});

t.test('operator-set agent environment', async (t) => {
  const { parseAgentEnv } = await import('../../webhook/cmd.js');
  t.same(parseAgentEnv(['AWS_ENDPOINT_URL=http://127.0.0.1:5000', 'EMPTY=']), { AWS_ENDPOINT_URL: 'http://127.0.0.1:5000', EMPTY: '' });
  t.throws(() => parseAgentEnv(['ESI_AGENT_CONFIG={}']), /other than ESI_AGENT_CONFIG/);
  t.throws(() => parseAgentEnv(['no-equals']), /expected NAME=VALUE/);
  const out = admit(pod({ 'esi.dev/secrets': 'es-vault' }), ctx({ agent: { image: 'esi:test', defaultTokenAudience: 'esi', env: { B: '2', A: '1' } } }));
  const env = out.kind === 'mutated' ? out.pod.spec!.initContainers![0]!.env! : [];
  t.same(env.map((e) => e.name), ['ESI_AGENT_CONFIG', 'A', 'B'], 'added after the config, sorted');
});

t.test('canonical JSON sorts keys at every level and matches JSON.parse', async (t) => {
  const { canonicalJson } = await import('../../webhook/mutate.js');
  const v = { b: [3, { z: 1, a: 'x"y' }, null], a: { d: undefined, c: true }, e: 'é' };
  t.equal(canonicalJson(v), '{"a":{"c":true},"b":[3,{"a":"x\\"y","z":1},null],"e":"é"}');
  t.same(JSON.parse(canonicalJson(v)), JSON.parse(JSON.stringify(v)));
});

t.test('pod-identity audiences come from the store spec', async (t) => {
  const { podIdentity } = await import('../../src/stores/access.js');
  t.same(podIdentity({ vault: { server: 'https://v', auth: { jwt: { path: 'jwt', kubernetesServiceAccountToken: { serviceAccountRef: { name: 'app' }, audiences: ['vault.example'] } } } } }),
    { needed: true, audience: 'vault.example' }, 'vault jwt kubernetesServiceAccountToken.audiences');
  t.same(podIdentity({ gcpsm: { projectID: 'p1', auth: { workloadIdentity: { clusterLocation: 'x', clusterName: 'c', serviceAccountRef: { name: 'app' } } } } }),
    { needed: true, audience: 'p1.svc.id.goog' }, 'GKE workload identity');
  t.same(podIdentity({ kubernetes: { auth: { serviceAccount: { name: 'app' } } } }), { needed: true, audience: '' }, 'the Kubernetes API default');
  t.same(podIdentity({ fake: { data: [] } }), { needed: false, audience: undefined });
});

t.test('the agent starts after a mesh proxy that follows its own init container', async (t) => {
  const p = pod({ 'esi.dev/secrets': 'es-vault' });
  p.spec!.initContainers = [{ name: 'istio-init', image: 'i' }, { name: 'istio-proxy', image: 'p', restartPolicy: 'Always' }, { name: 'migrate', image: 'm' }];
  const out = admit(p, ctx());
  t.same(out.kind === 'mutated' ? out.pod.spec!.initContainers!.map((c) => c.name) : [], ['istio-init', 'istio-proxy', 'esi-agent', 'migrate']);
});

t.test('esi.dev/dynamic-<name>: a per-pod credential in the agent configuration; refused outside native-sidecar mode', async (t) => {
  const configOf = (ann: Record<string, string>) => {
    const r = admit(pod(ann), ctx());
    if (r.kind !== 'mutated') return r;
    const agent = [...(r.pod.spec!.initContainers ?? []), ...r.pod.spec!.containers].find((c) => c.name === 'esi-agent');
    return JSON.parse(agent!.env!.find((e) => e.name === 'ESI_AGENT_CONFIG')!.value!) as Record<string, unknown>;
  };
  const c = configOf({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/dynamic-tls': 'vault:pki/issue/web?common_name=app.example.test&ttl=24h' }) as { dynamicSecrets?: unknown[]; secrets?: unknown[]; stores?: Record<string, unknown> };
  t.same(c.dynamicSecrets, [
    { name: 'db', store: 'SecretStore/team-a/vault', path: 'database/creds/app' },
    { name: 'tls', store: 'SecretStore/team-a/vault', path: 'pki/issue/web', method: 'POST', parameters: { common_name: 'app.example.test', ttl: '24h' } },
  ], 'a dynamic secret alone is enough to inject; parameters make a POST');
  t.same(c.secrets, []);
  t.ok(c.stores?.['SecretStore/team-a/vault'], 'its store is in the configuration');

  const deny = (ann: Record<string, string>) => {
    const r = admit(pod(ann), ctx());
    return r.kind === 'denied' ? r.message : `not denied: ${r.kind}`;
  };
  t.match(deny({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/mode': 'init-only' }), /esi\.dev\/dynamic-db: dynamic secrets need esi\.dev\/mode native-sidecar \(an init-only agent exits after rendering/);
  t.match(deny({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/mode': 'sidecar' }), /two credentials for one pod/);
  t.match(deny({ 'esi.dev/dynamic-db': 'fake:database/creds/app' }), /dynamicSecrets\[0\]\.store: provider fake mints no leases/);
  t.match(deny({ 'esi.dev/dynamic-db': 'nope:database/creds/app' }), /esi\.dev\/dynamic-db: SecretStore "nope" not found in namespace "team-a"/);
  t.match(deny({ 'esi.dev/dynamic-db': 'vault:sys/leases/lookup' }), /esi\.dev\/dynamic-db: the engine path has a "sys" segment/);
  t.match(deny({ 'esi.dev/dynamic-db': 'database/creds/app' }), /must be "<store>:<engine path>"/);
  t.match(deny({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/secrets': 'db' }), /clashes with ExternalSecret "db"/);
  t.match(deny({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/template-db': 'x' }), /esi\.dev\/template-db: the file name clashes with the directory of esi\.dev\/dynamic-db/);

  // The lease settings of the pod's credentials: esi.dev/lease-overlap, esi.dev/lease-revoke-on-exit.
  const tuned = configOf({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/lease-overlap': '5m', 'esi.dev/lease-revoke-on-exit': 'false' }) as { dynamicSecrets?: unknown[] };
  t.same(tuned.dynamicSecrets, [{ name: 'db', store: 'SecretStore/team-a/vault', path: 'database/creds/app', overlapSeconds: 300, revokeOnExit: false }],
    'the annotations reach every dynamic entry of the configuration');
  t.same((configOf({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/lease-overlap': '0s' }) as { dynamicSecrets?: { overlapSeconds?: number }[] }).dynamicSecrets?.[0]?.overlapSeconds, 0, '0s: revoke at once');
  t.match(deny({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/lease-overlap': '25h' }), /esi\.dev\/lease-overlap: .*must be at most 24h/);
  t.match(deny({ 'esi.dev/dynamic-db': 'vault:database/creds/app', 'esi.dev/lease-revoke-on-exit': 'no' }), /esi\.dev\/lease-revoke-on-exit: .*must be "true" or "false"/);
  t.match(deny({ 'esi.dev/secrets': 'db', 'esi.dev/lease-overlap': '5m' }), /esi\.dev\/lease-overlap: applies to esi\.dev\/dynamic-<name> credentials, and the pod has none; remove it/);
});
