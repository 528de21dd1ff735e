// The bounds of the GeneratorStates the reconciler keeps (DESIGN.md §2 "Bounded state";
// docs/generators.md, "Bounds"). A state is created for each lease a VaultDynamicSecret
// mints and lives until its lease is revoked: with a store that refuses every revocation, a
// fast refresh would otherwise leave one more state (and one more live credential) per
// refresh. So before a mint: one entry of one ExternalSecret may hold at most
// STATES_PER_ENTRY states, the ones being deleted (waiting for their revocation) included,
// and the controller at most --max-generator-states; past either the mint is refused (the
// ExternalSecret goes Ready=False, reason GeneratorStateLimit) until states are released.
// Counted from the watch of this controller's states, plus the states this process created
// or is about to create that the watch has not shown yet: a reconcile never counts less than
// there is, so the bound holds at every instant, not only once the watch caught up.
import type { GeneratorState } from '../../api/types.js';

/** Per `dataFrom` entry: the state in use, the previous one in its overlap
 *  (--generator-gc-grace-period), one whose revocation is under way, and the new one. */
export const STATES_PER_ENTRY = 4;
/** --max-generator-states: with each state at most 64 KiB (MAX_SNAPSHOT_BYTES plus the
 *  lease), at most 128 MiB of etcd, far below its smallest usual quota (2 GiB). */
export const DEFAULT_MAX_GENERATOR_STATES = 2048;
/** A created state the watch has not shown after this long is left to the watch's word. */
const PENDING_MS = 60_000;

export type StateLimitKind = 'entry' | 'controller' | 'snapshot';

/** A mint refused by a bound; the message names the generator and why (no lease id). */
export class StateLimit extends Error {
  constructor(readonly limit: Exclude<StateLimitKind, 'snapshot'>, message: string) {
    super(message);
    this.name = 'StateLimit';
  }
}

export interface LedgerDeps {
  /** The states in the watch cache (this controller's), of `ns` when given. */
  cached(ns?: string): readonly GeneratorState[];
  /** Whether the watch has listed the states (false: `list` asks the API instead). */
  synced(): boolean;
  /** One namespace's states of one owner key, from the API. */
  list(ns: string, ownerKey: string): Promise<readonly GeneratorState[]>;
  /** The label holding a state's owner key. */
  ownerKeyLabel: string;
  /** --max-generator-states. */
  max: number;
  onRefusal?(limit: StateLimitKind): void;
}

interface Pending {
  ns: string;
  key: string;
  at: number;
}

/** What is held, by namespace/name; reservations (a mint admitted, not recorded yet) by a token. */
export class StateLedger {
  private readonly pending = new Map<string, Pending>();
  /** States whose revocation failed at least once and that are still there. */
  private readonly failing = new Set<string>();
  private reservations = 0;

  constructor(private readonly d: LedgerDeps) {}

  /** Admits one mint for `ownerKey` (throws StateLimit) and reserves its place: the returned
   *  token is given to `recorded` once the state exists, or to `release` when none was made. */
  async admit(ns: string, ownerKey: string, what: string, entry: string): Promise<string> {
    const states = await this.entry(ns, ownerKey);
    if (states.length >= STATES_PER_ENTRY) {
      const held = states.filter((s) => s.deleting);
      const failing = held.filter((s) => this.failing.has(`${ns}/${s.name}`)).length;
      this.d.onRefusal?.('entry');
      const why = held.length
        ? `${held.length} of them wait for their lease to be revoked${failing ? ' and the store refuses or does not answer the revocation' : ''}`
        : 'none is due yet';
      throw new StateLimit('entry', `${what}: ${entry} holds ${states.length} GeneratorStates, the most one entry may (${STATES_PER_ENTRY}): ${why}; no new credential is minted until they are released (revoked, or their leases end)`);
    }
    const total = this.total();
    if (total >= this.d.max) {
      this.d.onRefusal?.('controller');
      throw new StateLimit('controller', `${what}: the controller holds ${total} GeneratorStates, its limit (--max-generator-states ${this.d.max}); no new credential is minted until some are released`);
    }
    const token = `?${++this.reservations}`;
    this.pending.set(`${ns}/${token}`, { ns, key: ownerKey, at: Date.now() });
    return token;
  }

  /** The reservation `token` became the state `name`. */
  recorded(ns: string, token: string, name: string): void {
    const p = this.pending.get(`${ns}/${token}`);
    this.pending.delete(`${ns}/${token}`);
    if (p) this.pending.set(`${ns}/${name}`, { ...p, at: Date.now() });
  }

  release(ns: string, token: string): void {
    this.pending.delete(`${ns}/${token}`);
  }

  /** The watch showed `obj` (or its deletion): it counts from the cache from now on. */
  observe(obj: GeneratorState, deleted: boolean): void {
    const id = `${obj.metadata.namespace}/${obj.metadata.name}`;
    this.pending.delete(id);
    if (deleted) this.failing.delete(id);
  }

  /** A generator spec whose snapshot is over the bound was refused (generatorSnapshot). */
  refused(limit: 'snapshot'): void {
    this.d.onRefusal?.(limit);
  }

  revokeFailed(ns: string, name: string): void {
    this.failing.add(`${ns}/${name}`);
  }

  /** Every state held: the cache and what it does not show yet. */
  total(): number {
    this.prune();
    const cached = this.d.cached();
    const names = new Set(cached.map((s) => `${s.metadata.namespace}/${s.metadata.name}`));
    return cached.length + [...this.pending.keys()].filter((id) => !names.has(id)).length;
  }

  private async entry(ns: string, ownerKey: string): Promise<{ name: string; deleting: boolean }[]> {
    this.prune();
    const label = this.d.ownerKeyLabel;
    const states = this.d.synced() ? this.d.cached(ns).filter((s) => s.metadata.labels?.[label] === ownerKey) : await this.d.list(ns, ownerKey);
    const out = new Map(states.map((s) => [s.metadata.name!, { name: s.metadata.name!, deleting: !!s.metadata.deletionTimestamp }]));
    for (const [id, p] of this.pending) {
      const name = id.slice(ns.length + 1);
      if (p.ns === ns && p.key === ownerKey && !out.has(name)) out.set(name, { name, deleting: false });
    }
    return [...out.values()];
  }

  private prune(): void {
    const old = Date.now() - PENDING_MS;
    // A reservation lives as long as its sync; a created state until the watch shows it.
    for (const [id, p] of this.pending) if (p.at < old && !id.includes('/?')) this.pending.delete(id);
  }
}
