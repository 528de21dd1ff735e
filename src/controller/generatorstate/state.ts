// ESO's GeneratorState objects for the leases ESI's generators mint (docs/generators.md,
// "Generator state"). A
// VaultDynamicSecret that returns a lease gets one GeneratorState per mint, in the
// ExternalSecret's namespace, owned by the ExternalSecret, labelled with ESO's owner key
// (`externalsecret-<name>-<dataFrom index>`) and holding a snapshot of the generator and the
// lease id. It is created right after the mint, before the values are used, so a lease is
// never untracked. Once the ExternalSecret's target holds the new values, every older state of
// the same key gets a garbage collection deadline one grace period away (ESO's
// --generator-gc-grace-period, the overlap in which the old credential still works); if the
// new values are not used, the new state is due at once. A state past its deadline is
// deleted; ESI's finalizer on it revokes the lease at the store first. Deleting the
// ExternalSecret lets Kubernetes' garbage collector delete its states (the owner reference),
// and the same finalizer revokes every lease. Lease ids never reach logs, Events or errors.
// How many states one entry and the controller may hold, and what a state copies:
// src/controller/generatorstate/limits.ts.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { EXTERNAL_SECRET_API_VERSION, GENERATORS_API_VERSION, type ExternalSecret, type GeneratorState } from '../../api/types.js';
import { GENERATOR_STATES, resourcePath } from '../../kube/paths.js';
import { isKubeStatus, JSON_PATCH, type KubeRest } from '../../kube/rest.js';
import { GeneratorError } from '../../generators/errors.js';
import { ProviderError, type Lease } from '../../providers/types.js';
import type { EventRecorder } from '../runtime/events.js';
import { generatorSnapshot, type Generators, type ResolvedGenerator } from './generators.js';
import { StateLedger, type StateLimitKind } from './limits.js';
import { labelValue } from '../runtime/labels.js';
import type { Requeue } from '../runtime/queue.js';

/** ESO's label naming the object (and key) a GeneratorState belongs to. */
const OWNER_KEY_LABEL = 'generators.external-secrets.io/owner-key';
/** The controller class whose reconciler created (and cleans up) the state: its watch selects on it. */
export const STATE_CONTROLLER_LABEL = 'esi.dev/generator-state-controller';
/** Held until the state's lease is revoked (ESO's GeneratorStates carry their own). */
export const STATE_FINALIZER = 'esi.dev/generator-state-cleanup';
/** ESO's default --generator-gc-grace-period. */
export const DEFAULT_GC_GRACE_MS = 2 * 60_000;

/** What ESI keeps in `spec.state`: the lease, and when it ends by itself (no renewals). */
interface LeaseState {
  leaseId: string;
  expiresAt?: string;
}

/** ESO's owner key: `<kind>-<name>-<key>`, lower case (a label value: shortened with a hash past 63). */
export const ownerKey = (kind: string, name: string, key: string) => labelValue(`${kind}-${name}-${key}`.toLowerCase());

export interface GeneratorStateDeps {
  rest: KubeRest;
  generators: Generators;
  events: EventRecorder;
  logger: Logger;
  /** The controller class (label value of STATE_CONTROLLER_LABEL). */
  controllerClass: string;
  /** How long a superseded credential keeps working (--generator-gc-grace-period). */
  gracePeriodMs: number;
  /** The cached state, or undefined (the watch: src/controller/runtime/informers.ts). */
  cached(ns: string, name: string): GeneratorState | undefined;
  /** What is held against the bounds (src/controller/generatorstate/limits.ts). */
  ledger: StateLedger;
}

/** The states of one reconcile of one ExternalSecret: recorded as leases are minted, then
 *  committed (the target holds the new values) or rolled back (it does not). */
export class Generation {
  private readonly created: { key: string; name: string }[] = [];
  /** dataFrom key → the ledger's reservation of the mint admitted for it. */
  private readonly reserved = new Map<string, string>();

  constructor(private readonly d: GeneratorStateDeps, private readonly es: ExternalSecret) {}

  /** Before `gen` mints for `dataFrom[key]`: refuses (throws StateLimit, or GeneratorError
   *  for a snapshot too large) when the state it may need would pass a bound. */
  async admit(key: string, gen: ResolvedGenerator): Promise<void> {
    try {
      generatorSnapshot(gen);
    } catch (err) {
      this.d.ledger.refused('snapshot');
      throw err;
    }
    const ns = this.es.metadata.namespace!;
    const token = await this.d.ledger.admit(ns, ownerKey('ExternalSecret', this.es.metadata.name!, key), gen.what, `dataFrom[${key}]`);
    this.reserved.set(key, token);
  }

  /** Records the lease `gen` minted for `dataFrom[key]`; throws when it cannot (the caller
   *  then revokes the lease: src/controller/generatorstate/generators.ts). */
  async record(key: string, gen: ResolvedGenerator, lease: Lease): Promise<void> {
    const ns = this.es.metadata.namespace!;
    const name = this.es.metadata.name!;
    const body: GeneratorState = {
      apiVersion: GENERATORS_API_VERSION, kind: 'GeneratorState',
      metadata: {
        // ESO's naming: gen-<owner kind>-<owner name>-<random>.
        generateName: `${`gen-externalsecret-${name}`.replace(/\./g, '-').slice(0, 57).replace(/-+$/, '')}-`,
        namespace: ns,
        labels: { [OWNER_KEY_LABEL]: ownerKey('ExternalSecret', name, key), [STATE_CONTROLLER_LABEL]: this.d.controllerClass },
        ownerReferences: [{ apiVersion: EXTERNAL_SECRET_API_VERSION, kind: 'ExternalSecret', name, uid: this.es.metadata.uid! }],
        finalizers: [STATE_FINALIZER],
      },
      spec: { resource: generatorSnapshot(gen), state: leaseState(lease) },
    };
    const made = await this.d.rest.create<GeneratorState>(resourcePath(GENERATOR_STATES, { namespace: ns }), body);
    this.created.push({ key, name: made.metadata.name! });
    const token = this.reserved.get(key);
    this.reserved.delete(key);
    if (token) this.d.ledger.recorded(ns, token, made.metadata.name!);
  }

  /** The new values are in use: the previous state of each key is due after the grace
   *  period, any older one now (flagOlder). */
  async commit(): Promise<void> {
    this.releaseReservations();
    const keys = new Set(this.created.map((c) => c.key));
    const keep = new Set(this.created.map((c) => c.name));
    const due = new Date(Date.now() + this.d.gracePeriodMs).toISOString();
    for (const key of keys) await this.flagOlder(key, keep, due);
  }

  /** The new values are not used: their states are due now (their leases are revoked). */
  async rollback(): Promise<void> {
    this.releaseReservations();
    const now = new Date().toISOString();
    for (const c of this.created) await setDeadline(this.d.rest, this.es.metadata.namespace!, c.name, now).catch((err: unknown) => this.warn(err));
  }

  /** Mints admitted that recorded no state (no lease came, or the run failed). */
  private releaseReservations(): void {
    for (const token of this.reserved.values()) this.d.ledger.release(this.es.metadata.namespace!, token);
    this.reserved.clear();
  }

  /** The overlap keeps one previous credential: the newest older state that has no deadline
   *  gets the grace period; every other older one (a refresh faster than the grace period)
   *  is due now, so one entry never holds more than its bound while revocations succeed. */
  private async flagOlder(key: string, keep: ReadonlySet<string>, due: string): Promise<void> {
    const ns = this.es.metadata.namespace!;
    const selector = `${OWNER_KEY_LABEL}=${ownerKey('ExternalSecret', this.es.metadata.name!, key)},${STATE_CONTROLLER_LABEL}=${this.d.controllerClass}`;
    // From the API, not the cache: a state created a moment ago must not be missed.
    const list = await this.d.rest.get<{ items?: GeneratorState[] }>(resourcePath(GENERATOR_STATES, { namespace: ns, query: { labelSelector: selector } }))
      .catch((err: unknown) => {
        this.warn(err);
        return { items: [] };
      });
    const now = new Date().toISOString();
    const older = (list.items ?? []).filter((s) => !keep.has(s.metadata.name!) && !s.metadata.deletionTimestamp)
      .sort((a, b) => String(b.metadata.creationTimestamp ?? '').localeCompare(String(a.metadata.creationTimestamp ?? '')));
    const previous = older.find((s) => !s.spec?.garbageCollectionDeadline);
    for (const s of older) {
      const at = s === previous ? due : now;
      const current = s.spec?.garbageCollectionDeadline;
      if (current && Date.parse(current) <= Date.parse(at)) continue;
      await setDeadline(this.d.rest, ns, s.metadata.name!, at).catch((err: unknown) => this.warn(err));
    }
  }

  private warn(err: unknown): void {
    // A state left without a deadline is flagged by the next commit of the same key.
    this.d.logger.warn({ externalSecret: `${this.es.metadata.namespace}/${this.es.metadata.name}`, err: (err as Error).message }, 'cannot flag a generator state for garbage collection');
  }
}

function leaseState(lease: Lease): LeaseState {
  return lease.ttlSeconds > 0 ? { leaseId: lease.id, expiresAt: new Date(Date.now() + lease.ttlSeconds * 1000).toISOString() } : { leaseId: lease.id };
}

/** Revocation failures that retrying cannot mend: the policy does not allow it, the snapshot's
 *  credentials are gone (a namespace being deleted removes them in any order), the spec is
 *  refused. The lease then ends by itself at its TTL, as it would have without ESI. */
function cannotRevoke(err: unknown): boolean {
  if (err instanceof GeneratorError) return true;
  return err instanceof ProviderError && ['Forbidden', 'AuthFailed', 'InvalidSpec', 'Unsupported'].includes(err.code);
}

function setDeadline(rest: KubeRest, ns: string, name: string, at: string): Promise<unknown> {
  return rest.patch(resourcePath(GENERATOR_STATES, { namespace: ns, name }), { spec: { garbageCollectionDeadline: at } });
}

/** Garbage collection of the states this controller created (ESO's GeneratorState controller). */
export class GeneratorStates {
  constructor(private readonly d: GeneratorStateDeps) {}

  begin(es: ExternalSecret): Generation {
    return new Generation(this.d, es);
  }

  /** Deleted past its deadline; revoked and released once deleting. Throws to retry with backoff. */
  async reconcile(ns: string, name: string): Promise<Requeue> {
    const gs = this.d.cached(ns, name);
    if (!gs) return { next: 'cancel' };
    const path = resourcePath(GENERATOR_STATES, { namespace: ns, name });
    if (gs.metadata.deletionTimestamp) {
      const finalizers = gs.metadata.finalizers ?? [];
      const at = finalizers.indexOf(STATE_FINALIZER);
      if (at < 0) return { next: 'cancel' };
      if (!(await this.cleanup(gs))) return { backoff: true };
      // Only our finalizer, and only if the list is still as read (ESO's may sit next to it).
      await this.d.rest.patch(path, [{ op: 'test', path: `/metadata/finalizers/${at}`, value: STATE_FINALIZER }, { op: 'remove', path: `/metadata/finalizers/${at}` }], JSON_PATCH)
        .catch((err: unknown) => {
          if (!isKubeStatus(err, 404)) throw err;
        });
      return { next: 'cancel' };
    }
    const deadline = Date.parse(gs.spec?.garbageCollectionDeadline ?? '');
    if (Number.isNaN(deadline)) return { next: 'cancel' };
    if (deadline > Date.now()) return { next: deadline };
    await this.d.rest.delete(path).catch((err: unknown) => {
      if (!isKubeStatus(err, 404)) throw err;
    });
    return { next: 'cancel' };
  }

  /** Revokes the state's lease with the generator snapshot's credentials; true when the state
   *  may go (revoked, or it never will be: then a Warning Event says so). False: retry (a
   *  store that did not answer), until the lease has ended by itself. */
  private async cleanup(gs: GeneratorState): Promise<boolean> {
    const state = gs.spec?.state as Partial<LeaseState> | undefined;
    if (typeof state?.leaseId !== 'string' || state.leaseId === '') return true;
    const where = { generatorState: `${gs.metadata.namespace}/${gs.metadata.name}` };
    try {
      await this.d.generators.revoke(gs.metadata.namespace!, gs.spec.resource, state.leaseId);
      this.d.logger.info(where, 'revoked the lease of a generator state');
      return true;
    } catch (err) {
      const ended = Date.parse(state.expiresAt ?? '') <= Date.now();
      const message = (err as Error).message;
      if (!ended && !cannotRevoke(err)) {
        // Held by the finalizer: it counts against its entry's bound, and the refusal says why.
        this.d.ledger.revokeFailed(gs.metadata.namespace!, gs.metadata.name!);
        this.d.logger.warn({ ...where, err: message }, 'cannot revoke the lease of a generator state yet; retrying');
        return false;
      }
      const regarding = { apiVersion: GENERATORS_API_VERSION, kind: 'GeneratorState', name: gs.metadata.name!, namespace: gs.metadata.namespace, uid: gs.metadata.uid };
      this.d.events.emit(regarding, 'Warning', 'LeaseNotRevoked', `the lease is left to end at its TTL: ${message}`);
      return true;
    }
  }
}

/** The bounds' ledger of this controller's states: counted from the watch (`cache`), from
 *  the API while the watch has not listed them. */
export function stateLedger(o: {
  rest: KubeRest; controllerClass: string; max: number;
  cache: { states(ns?: string): readonly GeneratorState[]; synced(): boolean };
  onRefusal?: (limit: StateLimitKind) => void;
}): StateLedger {
  const list = async (ns: string, key: string) => {
    const labelSelector = `${OWNER_KEY_LABEL}=${key},${STATE_CONTROLLER_LABEL}=${o.controllerClass}`;
    return (await o.rest.get<{ items?: GeneratorState[] }>(resourcePath(GENERATOR_STATES, { namespace: ns, query: { labelSelector } }))).items ?? [];
  };
  return new StateLedger({
    cached: (ns) => o.cache.states(ns), synced: () => o.cache.synced(), list, ownerKeyLabel: OWNER_KEY_LABEL, max: o.max,
    ...(o.onRefusal ? { onRefusal: o.onRefusal } : {}),
  });
}

/** Whether a watched object is a GeneratorState this controller must look at again. */
export const stateNeedsWork = (obj: KubernetesObject): boolean => !!obj.metadata?.deletionTimestamp || !!(obj as GeneratorState).spec?.garbageCollectionDeadline;
