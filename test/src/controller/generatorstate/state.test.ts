// The GeneratorState garbage collection's decisions (src/controller/generatorstate/state.ts) with a
// recording API and store, for the branches the platform test cannot provoke: a store that does
// not answer (retried while the lease lasts, released once it has ended), a policy that forbids
// the revocation (released at once, with a Warning Event), ESO's finalizer left in place. The
// whole path on the real apiserver, OpenBao and PostgreSQL: generator-state.test.ts.
import t from 'tap';
import pino from 'pino';
import type { GeneratorState } from '../../../../src/api/types.js';
import { GeneratorStates, stateLedger, STATE_FINALIZER } from '../../../../src/controller/generatorstate/state.js';
import type { EventRecorder } from '../../../../src/controller/runtime/events.js';
import type { Generators } from '../../../../src/controller/generatorstate/generators.js';
import type { KubeRest } from '../../../../src/kube/rest.js';
import { ProviderError } from '../../../../src/providers/types.js';

const LEASE = 'database/creds/app/s3cr3t-lease-handle';

function harness(state: GeneratorState, revoke: () => Promise<void>) {
  const calls: { verb: string; path: string; body?: unknown }[] = [];
  const events: { type: string; reason: string; message: string }[] = [];
  const revoked: string[] = [];
  const rest = {
    patch: async (path: string, body: unknown) => void calls.push({ verb: 'patch', path, body }),
    delete: async (path: string) => void calls.push({ verb: 'delete', path }),
  } as unknown as KubeRest;
  const generators = { revoke: async (_ns: string, _snapshot: unknown, id: string) => { revoked.push(id); await revoke(); } } as unknown as Generators;
  const recorder = { emit: (_r: unknown, type: string, reason: string, message: string) => void events.push({ type, reason, message }) } as unknown as EventRecorder;
  const states = new GeneratorStates({
    rest, generators, events: recorder, logger: pino({ level: 'silent' }), controllerClass: 'esi', gracePeriodMs: 120_000,
    cached: (ns, name) => (ns === state.metadata.namespace && name === state.metadata.name ? state : undefined),
    ledger: stateLedger({ rest, controllerClass: 'esi', max: 10, cache: { states: () => [state], synced: () => true } }),
  });
  return { states, calls, events, revoked };
}

const gs = (o: { deadline?: string; deleting?: boolean; expiresAt?: string; finalizers?: string[] }): GeneratorState => ({
  apiVersion: 'generators.external-secrets.io/v1alpha1', kind: 'GeneratorState',
  metadata: {
    name: 'gen-externalsecret-db-abcde', namespace: 'team', uid: 'u1', finalizers: o.finalizers ?? [STATE_FINALIZER],
    ...(o.deleting ? { deletionTimestamp: new Date() } : {}),
  },
  spec: {
    ...(o.deadline ? { garbageCollectionDeadline: o.deadline } : {}),
    resource: { kind: 'VaultDynamicSecret', metadata: { name: 'db' }, spec: {} },
    state: { leaseId: LEASE, ...(o.expiresAt ? { expiresAt: o.expiresAt } : {}) },
  },
});
const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();

t.test('no deadline: left alone; a future deadline: run again then; a past one: deleted', async (t) => {
  t.same(await harness(gs({}), async () => undefined).states.reconcile('team', 'gen-externalsecret-db-abcde'), { next: 'cancel' });
  const later = inMs(60_000);
  t.same(await harness(gs({ deadline: later }), async () => undefined).states.reconcile('team', 'gen-externalsecret-db-abcde'), { next: Date.parse(later) });
  const h = harness(gs({ deadline: inMs(-1000) }), async () => undefined);
  await h.states.reconcile('team', 'gen-externalsecret-db-abcde');
  t.same(h.calls.map((c) => c.verb), ['delete'], 'deleted; the finalizer revokes');
  t.same(h.revoked, [], 'nothing revoked before the deletion');
});

t.test('deleting: the lease is revoked, then only ESI\'s finalizer is removed (tested in place)', async (t) => {
  const h = harness(gs({ deleting: true, finalizers: ['generatorstate.externalsecrets.io/finalizer', STATE_FINALIZER] }), async () => undefined);
  t.same(await h.states.reconcile('team', 'gen-externalsecret-db-abcde'), { next: 'cancel' });
  t.same(h.revoked, [LEASE]);
  t.same(h.calls[0]?.body, [{ op: 'test', path: '/metadata/finalizers/1', value: STATE_FINALIZER }, { op: 'remove', path: '/metadata/finalizers/1' }]);
});

t.test('a store that does not answer: retried while the lease lasts, released once it has ended', async (t) => {
  const down = async () => { throw new ProviderError('Unreachable', 'SecretStore/team/VaultDynamicSecret:db', 'connect ECONNREFUSED'); };
  const live = harness(gs({ deleting: true, expiresAt: inMs(3_600_000) }), down);
  t.same(await live.states.reconcile('team', 'gen-externalsecret-db-abcde'), { backoff: true }, 'retried with backoff');
  t.same(live.calls, [], 'the finalizer stays');
  const ended = harness(gs({ deleting: true, expiresAt: inMs(-1000) }), down);
  t.same(await ended.states.reconcile('team', 'gen-externalsecret-db-abcde'), { next: 'cancel' });
  t.equal(ended.calls.length, 1, 'released: the lease has ended by itself');
  t.match(ended.events, [{ type: 'Warning', reason: 'LeaseNotRevoked' }]);
});

t.test('a revocation the policy forbids: released at once with a Warning Event, no lease id in it', async (t) => {
  const h = harness(gs({ deleting: true, expiresAt: inMs(3_600_000) }), async () => {
    throw new ProviderError('Forbidden', 'SecretStore/team/VaultDynamicSecret:db', 'lease revocation: permission denied');
  });
  t.same(await h.states.reconcile('team', 'gen-externalsecret-db-abcde'), { next: 'cancel' });
  t.equal(h.calls.length, 1, 'the finalizer is removed');
  t.match(h.events, [{ type: 'Warning', reason: 'LeaseNotRevoked', message: /the lease is left to end at its TTL: .*permission denied/ }]);
  t.notOk(JSON.stringify(h.events).includes('s3cr3t-lease-handle'), 'no lease id in the Event');
});
