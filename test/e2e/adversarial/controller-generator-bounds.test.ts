// The generator bounds, on the real apiserver and a real OpenBao, as a tenant (tenant
// RBAC): the GeneratorStates of one ExternalSecret stay within their bound when the store
// grants long leases and refuses every revocation (a loopback proxy answering 503 to
// sys/leases/revoke), and the ExternalSecret says so (Ready=False, GeneratorStateLimit); a
// state copies no bulky `parameters`; a 100-entry ExternalSecret naming one 100 KiB Fake reads
// it once per sync (counted by the controller's reads metric, which counts every GET its
// client sends); scoped mode refuses a ClusterGenerator without reading it; a namespaced
// VaultDynamicSecret gets resultType Raw only when the operator allows it, a ClusterGenerator
// always. No lease id in status, Events or logs. Bounds: docs/generators.md, "Bounds".
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { GENERATORS_GROUP, type GeneratorState } from '../../../src/api/types.js';
import { STATES_PER_ENTRY } from '../../../src/controller/generatorstate/limits.js';
import { controllerEnv, decoded, getES, GROUP, ready, startController, until } from '../../support/fixtures/controller.js';
import { createTenant, type Tenant } from '../../support/tenant.js';
import { startRevokeRefusingProxy } from '../../support/revoke-refusing-proxy.js';
import { createToken, startVaultServer, writePolicy } from '../../support/platform/backends/openbao.js';

// The garbage collector: deleting the ExternalSecret deletes its GeneratorStates (owner references).
const env = await controllerEnv(t, { controllers: ['garbage-collector-controller'] });
const run = randomBytes(3).toString('hex');
// Generator-only ExternalSecrets have no store class: this controller serves the unclassed
// ones, in this test's namespace only.
const tenant = await createTenant(env.kc, 'ctl-gb', t, { 'esi-gb-run': run });
const ns = tenant.namespace;
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--leader-elect=false', '--coalesce-window', '0s',
  '--namespace-selector', `esi-gb-run=${run}`, '--generator-gc-grace-period', '2s'], t);

const vault = await startVaultServer(t);
await vault.api('POST', 'sys/mounts/pki', { type: 'pki', config: { max_lease_ttl: '87600h' } });
await vault.api('POST', 'pki/root/generate/internal', { common_name: 'esi-gb-root', ttl: '8760h', key_type: 'ec' });
// generate_lease: each certificate comes with a lease (one hour: it outlives the test).
await vault.api('POST', 'pki/roles/web', { allowed_domains: 'example.test', allow_subdomains: true, max_ttl: '72h', generate_lease: true, key_type: 'ec' });
await writePolicy(vault, 'gb-pki', 'path "pki/issue/web" { capabilities = ["update"] }\npath "sys/leases/revoke" { capabilities = ["update"] }');
await tenant.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'bao-token' }, stringData: { token: await createToken(vault, ['gb-pki']) } } });
const proxy = await startRevokeRefusingProxy(t, vault.addr);

const G = { group: GENERATORS_GROUP, version: 'v1alpha1' };
const ref = (kind: string, name: string) => ({ sourceRef: { generatorRef: { apiVersion: `${GENERATORS_GROUP}/v1alpha1`, kind, name } } });
const createGen = (who: Tenant, plural: string, kind: string, name: string, spec: object) =>
  who.custom.createNamespacedCustomObject({ ...G, namespace: who.namespace, plural, body: { apiVersion: `${GENERATORS_GROUP}/v1alpha1`, kind, metadata: { name }, spec } });
const createES = (who: Tenant, name: string, spec: object) => who.custom.createNamespacedCustomObject({
  group: GROUP, version: 'v1', namespace: who.namespace, plural: 'externalsecrets',
  body: { apiVersion: `${GROUP}/v1`, kind: 'ExternalSecret', metadata: { name }, spec: { refreshInterval: '1h', ...spec } },
});
const statesOf = async (es: string) => ((await env.custom.listNamespacedCustomObject({ ...G, namespace: ns, plural: 'generatorstates',
  labelSelector: `generators.external-secrets.io/owner-key=externalsecret-${es}-0` })) as { items: GeneratorState[] }).items;
const pkiLeases = async () => ((await vault.api('LIST', 'sys/leases/lookup/pki/issue/web').catch(() => ({ body: { data: { keys: [] } } }))).body?.data as { keys?: string[] } | undefined)?.keys ?? [];
const cert = (server: string, extra: object = {}) => ({
  path: 'pki/issue/web', method: 'POST', parameters: { common_name: 'app.example.test', ttl: '1h' },
  provider: { server, auth: { tokenSecretRef: { name: 'bao-token', key: 'token' } } }, ...extra,
});

t.test('a store that refuses every revocation: at most the bound of GeneratorStates, and Ready=False GeneratorStateLimit instead of more mints', async (t) => {
  // 80 KiB of parameters the engine ignores: a state must not copy them.
  const spec = cert(proxy.addr);
  (spec.parameters as Record<string, unknown>).padding = 'p'.repeat(80 * 1024);
  await createGen(tenant, 'vaultdynamicsecrets', 'VaultDynamicSecret', 'churn', spec);
  await createES(tenant, 'churn', { refreshInterval: '1s', dataFrom: [ref('VaultDynamicSecret', 'churn')] });
  const started = Date.now();
  let max = 0;
  let largest = 0;
  let limited: string | undefined;
  // 20 s at a 1 s refresh: today's code leaves one more state per refresh.
  while (Date.now() - started < 20_000 || !limited) {
    const states = await statesOf('churn');
    max = Math.max(max, states.length);
    for (const s of states) largest = Math.max(largest, Buffer.byteLength(JSON.stringify(s)));
    const c = (await getES(env, ns, 'churn')).status?.conditions?.find((x) => x.type === 'Ready');
    if (c?.status === 'False' && c.reason === 'GeneratorStateLimit') limited = c.message;
    if (Date.now() - started > 120_000) break;
    await new Promise((r) => setTimeout(r, 150));
  }
  t.ok(proxy.refused > 0, `the proxy refused ${proxy.refused} revocations`);
  t.ok(max <= STATES_PER_ENTRY, `at most ${STATES_PER_ENTRY} GeneratorStates at any poll (max seen ${max})`);
  t.ok(limited, 'Ready=False with reason GeneratorStateLimit');
  t.match(limited, new RegExp(`VaultDynamicSecret "${ns}/churn"`), 'the message names the generator');
  t.match(limited, /wait for their lease to be revoked and the store refuses or does not answer the revocation/, 'and that revocations fail');
  t.ok(largest > 0 && largest < 64 * 1024, `a state copies no bulky parameters (largest ${largest} bytes)`);
  t.ok((await pkiLeases()).length <= STATES_PER_ENTRY, 'no more live leases than states');
  t.ok(await ctl.counter('esi_controller_generator_state_refusals_total', { limit: 'entry' }) > 0, 'the refusals metric counts');
  t.ok(await ctl.counter('esi_controller_generator_states') >= 1, 'the held-states gauge');

  const leases = await pkiLeases();
  const texts = [JSON.stringify((await getES(env, ns, 'churn')).status), JSON.stringify((await env.core.listNamespacedEvent({ namespace: ns })).items), ctl.output()];
  t.notOk(leases.some((l) => texts.some((x) => x.includes(l))), 'no lease id in status, Events or logs');

  // Revocations work again: the held states go, and the ExternalSecret mints and syncs.
  proxy.refusing = false;
  await ready(env, ns, 'churn', 'True', 'SecretSynced', 120_000);
  t.ok((await statesOf('churn')).length <= STATES_PER_ENTRY, 'still within the bound');
  await env.custom.deleteNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'churn' });
  await until('no GeneratorState of the deleted ExternalSecret', async () => (await statesOf('churn')).length === 0 || undefined, 120_000);
  t.pass('every state revoked and released once the store answers');
});

t.test('100 entries naming one 100 KiB Fake: one apiserver read of it per sync, not one per entry', async (t) => {
  const data = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, 'v'.repeat(1024)]));
  await createGen(tenant, 'fakes', 'Fake', 'big', { data });
  await createES(tenant, 'wide', { refreshInterval: '1s', dataFrom: Array.from({ length: 100 }, () => ref('Fake', 'big')) });
  await ready(env, ns, 'wide', 'True');
  const syncs = () => ctl.counter('externalsecret_sync_calls_total', { name: 'wide', namespace: ns });
  const reads = () => ctl.counter('esi_controller_apiserver_reads_total', { resource: 'fakes' });
  const allReads = () => ctl.counter('esi_controller_apiserver_reads_total');
  const [s0, r0, a0] = [await syncs(), await reads(), await allReads()];
  await until('ten more syncs', async () => (await syncs()) >= s0 + 10 || undefined, 120_000);
  const [s1, r1, a1] = [await syncs(), await reads(), await allReads()];
  const perSync = (r1 - r0) / (s1 - s0);
  t.comment(`generator reads per sync: ${perSync.toFixed(2)} (${r1 - r0} over ${s1 - s0} syncs); every apiserver read of the controller per sync: ${((a1 - a0) / (s1 - s0)).toFixed(2)}`);
  t.ok(r1 - r0 >= 1, 'the reads are counted');
  // One per sync; a sync under way when the counters were read may add one.
  t.ok(r1 - r0 <= s1 - s0 + 1, `at most one read of the Fake per sync (${r1 - r0} reads, ${s1 - s0} syncs)`);
  await env.custom.deleteNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'wide' });
});

t.test('resultType Raw: refused for a namespaced VaultDynamicSecret by default, served for a ClusterGenerator', async (t) => {
  await createGen(tenant, 'vaultdynamicsecrets', 'VaultDynamicSecret', 'raw', cert(vault.addr, { resultType: 'Raw' }));
  await createES(tenant, 'raw', { dataFrom: [ref('VaultDynamicSecret', 'raw')] });
  const refused = await ready(env, ns, 'raw', 'False');
  t.match(refused.status?.conditions?.[0]?.message, /resultType Raw is not allowed for a namespaced VaultDynamicSecret.*--allow-generator-raw-results/);
  t.same(await statesOf('raw'), [], 'nothing minted, no GeneratorState');

  const name = `gb-raw-${run}`;
  const cluster = env.kc.makeApiClient(CustomObjectsApi);
  await cluster.createClusterCustomObject({ ...G, plural: 'clustergenerators', body: {
    apiVersion: `${GENERATORS_GROUP}/v1alpha1`, kind: 'ClusterGenerator', metadata: { name },
    spec: { kind: 'VaultDynamicSecret', generator: { vaultDynamicSecretSpec: cert(vault.addr, { resultType: 'Raw' }) } },
  } });
  t.teardown(() => cluster.deleteClusterCustomObject({ ...G, plural: 'clustergenerators', name }).catch(() => undefined));
  await createES(tenant, 'raw-cluster', { dataFrom: [ref('ClusterGenerator', name)] });
  await ready(env, ns, 'raw-cluster', 'True');
  const secret = decoded(await tenant.core.readNamespacedSecret({ namespace: ns, name: 'raw-cluster' }));
  t.match(JSON.parse(secret.data ?? '{}'), { certificate: /BEGIN CERTIFICATE/ }, 'the whole response: its data as JSON');
  await env.custom.deleteNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'raw-cluster' });
});

t.test('scoped mode (--watch-namespaces) refuses a ClusterGenerator and never reads it', async (t) => {
  const scoped = await createTenant(env.kc, 'ctl-gb-scoped', t);
  const sctl = await startController(env.cp.kubeconfigPath, ['--controller-class', `${env.cls}-s`, '--leader-elect=false', '--coalesce-window', '0s',
    '--watch-namespaces', scoped.namespace], t);
  const name = `gb-pw-${run}`;
  const cluster = env.kc.makeApiClient(CustomObjectsApi);
  await cluster.createClusterCustomObject({ ...G, plural: 'clustergenerators', body: {
    apiVersion: `${GENERATORS_GROUP}/v1alpha1`, kind: 'ClusterGenerator', metadata: { name }, spec: { kind: 'Password', generator: { passwordSpec: { length: 12 } } },
  } });
  t.teardown(() => cluster.deleteClusterCustomObject({ ...G, plural: 'clustergenerators', name }).catch(() => undefined));
  await createES(scoped, 'from-cluster', { dataFrom: [ref('ClusterGenerator', name)] });
  const es = await ready(env, scoped.namespace, 'from-cluster', 'False');
  t.match(es.status?.conditions?.[0]?.message, new RegExp(`ClusterGenerator "${name}" is not served: this controller is scoped to its namespaces \\(--watch-namespaces\\)`));
  t.equal(await sctl.counter('esi_controller_apiserver_reads_total', { resource: 'clustergenerators' }), 0, 'no read of any ClusterGenerator');
  t.notOk(await scoped.core.readNamespacedSecret({ namespace: scoped.namespace, name: 'from-cluster' }).catch(() => undefined), 'no Secret');
});
