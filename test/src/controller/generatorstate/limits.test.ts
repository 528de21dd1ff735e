// The bounds of src/controller/generatorstate/limits.ts and the generator reads of
// src/controller/generatorstate/generators.ts with a recording API, for what the platform test
// (test/e2e/adversarial/controller-generator-bounds.test.ts) cannot pin exactly: states created but not yet in the watch
// count, a reservation holds its place until its sync ends, the controller-wide cap, the
// snapshot bound, one read per generator per sync, scoped mode and Raw refused before any read
// or mint.
import t from 'tap';
import type { GeneratorState } from '../../../../src/api/types.js';
import type { ClientCache } from '../../../../src/controller/runtime/clients.js';
import { DEFAULT_MAX_GENERATOR_STATES, StateLedger, STATES_PER_ENTRY, StateLimit } from '../../../../src/controller/generatorstate/limits.js';
import { generatorSnapshot, Generators, MAX_SNAPSHOT_BYTES, type ResolvedGenerator } from '../../../../src/controller/generatorstate/generators.js';
import { GeneratorError } from '../../../../src/generators/errors.js';
import type { KubeRest } from '../../../../src/kube/rest.js';

const LABEL = 'generators.external-secrets.io/owner-key';
const state = (name: string, key: string, deleting = false): GeneratorState => ({
  apiVersion: 'generators.external-secrets.io/v1alpha1', kind: 'GeneratorState',
  metadata: { name, namespace: 'team', labels: { [LABEL]: key }, ...(deleting ? { deletionTimestamp: new Date() } : {}) },
  spec: { resource: {}, state: {} },
} as GeneratorState);

function ledger(cache: GeneratorState[], max = DEFAULT_MAX_GENERATOR_STATES) {
  const refusals: string[] = [];
  const l = new StateLedger({
    cached: (ns) => cache.filter((s) => !ns || s.metadata.namespace === ns), synced: () => true,
    list: () => Promise.reject(new Error('not used')), ownerKeyLabel: LABEL, max, onRefusal: (k) => void refusals.push(k),
  });
  return { l, refusals };
}

t.test('one entry: cached, deleting and not-yet-watched states all count; the refusal says why', async (t) => {
  const cache = [state('a', 'k'), state('b', 'k', true), state('other', 'x')];
  const { l, refusals } = ledger(cache);
  const r1 = await l.admit('team', 'k', 'VaultDynamicSecret "team/db"', 'dataFrom[0]');
  l.recorded('team', r1, 'c'); // created, the watch has not shown it
  t.equal(STATES_PER_ENTRY, 4);
  const r2 = await l.admit('team', 'k', 'VaultDynamicSecret "team/db"', 'dataFrom[0]');
  // a, b, c and the reservation r2: full.
  l.revokeFailed('team', 'b');
  const err = await l.admit('team', 'k', 'VaultDynamicSecret "team/db"', 'dataFrom[0]').catch((e: unknown) => e);
  t.ok(err instanceof StateLimit, 'refused');
  t.match((err as Error).message, /^VaultDynamicSecret "team\/db": dataFrom\[0\] holds 4 GeneratorStates, the most one entry may \(4\): 1 of them wait for their lease to be revoked and the store refuses or does not answer the revocation/);
  t.same(refusals, ['entry']);
  l.release('team', r2);
  t.ok(await l.admit('team', 'k', 'x', 'dataFrom[0]'), 'a released reservation frees its place');
  t.ok(await l.admit('team', 'x', 'x', 'dataFrom[1]'), 'other entries are counted apart');
});

t.test('the watch showing a state replaces the pending count; a deleted one stops counting', async (t) => {
  const cache: GeneratorState[] = [];
  const { l } = ledger(cache, 2);
  l.recorded('team', await l.admit('team', 'k', 'x', 'e'), 'a');
  t.equal(l.total(), 1);
  cache.push(state('a', 'k'));
  l.observe(cache[0]!, false);
  t.equal(l.total(), 1, 'counted once');
  cache.pop();
  l.observe(state('a', 'k'), true);
  t.equal(l.total(), 0);
});

t.test('the controller-wide cap', async (t) => {
  const { l, refusals } = ledger([state('a', 'k1'), state('b', 'k2')], 2);
  const err = await l.admit('team', 'k3', 'VaultDynamicSecret "team/db"', 'dataFrom[0]').catch((e: unknown) => e);
  t.match((err as Error).message, /the controller holds 2 GeneratorStates, its limit \(--max-generator-states 2\)/);
  t.same(refusals, ['controller']);
});

const gen = (spec: unknown, id = 'VaultDynamicSecret:db'): ResolvedGenerator => ({ kind: 'VaultDynamicSecret', what: 'VaultDynamicSecret "team/db"', id, name: 'db', spec, controller: '', uid: 'u', generation: 1 });

t.test('a snapshot keeps no parameters and is bounded', async (t) => {
  const snap = generatorSnapshot(gen({ path: 'database/creds/app', parameters: { pad: 'p'.repeat(200_000) }, provider: { server: 'https://bao' } }));
  t.same(snap.spec, { path: 'database/creds/app', provider: { server: 'https://bao' } });
  t.throws(() => generatorSnapshot(gen({ path: 'x', provider: { caBundle: 'c'.repeat(MAX_SNAPSHOT_BYTES) } })), /too large to keep in a GeneratorState \(\d+ KiB without spec.parameters, at most 64 KiB\)/);
});

function generators(o: ConstructorParameters<typeof Generators>[2] = {}) {
  const gets: string[] = [];
  const rest = { get: async (path: string) => { gets.push(path); await Promise.resolve(); return { metadata: { uid: 'u', generation: 1 }, spec: { data: { a: 'b' } } }; } } as unknown as KubeRest;
  return { g: new Generators(rest, {} as ClientCache, o), gets };
}

t.test('one read per generator per sync, concurrent entries included', async (t) => {
  const { g, gets } = generators();
  const reads = g.reads();
  const ref = { apiVersion: 'generators.external-secrets.io/v1alpha1', kind: 'Fake', name: 'big' };
  await Promise.all(Array.from({ length: 100 }, () => g.resolve('team', ref, reads)));
  await g.resolve('team', { ...ref, name: 'other' }, reads);
  t.equal(gets.length, 2, 'two distinct generators, two reads');
  await g.resolve('team', ref, g.reads());
  t.equal(gets.length, 3, 'the next sync reads again (a changed generator is seen)');
});

t.test('scoped mode: a ClusterGenerator is refused before any read', async (t) => {
  const { g, gets } = generators({ clusterKinds: false });
  await t.rejects(g.resolve('team', { apiVersion: 'generators.external-secrets.io/v1alpha1', kind: 'ClusterGenerator', name: 'cg' }), /ClusterGenerator "cg" is not served: this controller is scoped/);
  t.same(gets, []);
});

t.test('resultType Raw and Auth: refused for a namespaced VaultDynamicSecret unless allowed; a ClusterGenerator may', async (t) => {
  const spec = { path: 'pki/issue/web', resultType: 'Raw', provider: { server: 'https://bao' } };
  const { g } = generators();
  const err = await g.run('team', gen(spec)).catch((e: unknown) => e);
  t.ok(err instanceof GeneratorError);
  t.match((err as Error).message, /resultType Raw is not allowed for a namespaced VaultDynamicSecret.*--allow-generator-raw-results/);
  // Past the check: the (empty) client cache is reached, so no refusal of the result type.
  for (const [o, id] of [[{ allowRawResults: true }, 'VaultDynamicSecret:db'], [{}, 'ClusterGenerator:cg']] as const) {
    const e = await generators(o).g.run('team', gen(spec, id)).catch((x: unknown) => x);
    t.notMatch(String(e), /resultType/, `${id} ${JSON.stringify(o)}: not refused for its result type`);
  }
});
