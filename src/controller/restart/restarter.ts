// Restart on change (docs/controller.md, "Restart on change"):
// when the reconciler changes the data of an existing Secret, the Deployments, StatefulSets and
// DaemonSets of that Secret's namespace that opted in (./match.ts) get a new pod
// template annotation, RESTARTED_AT_ANNOTATION, which rolls them out as `kubectl rollout
// restart` does. Bounds:
//  - a change only queues its namespace; scans run SCANS at a time, each one paged LIST per
//    workload kind for every change that arrived meanwhile (N Secrets changing at once in one
//    namespace cost one scan, and a workload using several of them one restart);
//  - scans, delayed restarts and retries are keys of the controller's one work queue
//    (`restart/<ns>/` and `<Kind>/<ns>/<name>`, ../runtime/keys.ts): no timer of its own;
//  - at most one restart per workload per minimum interval: a change inside the interval is
//    folded into one delayed restart at its end. The last restart is read back from the
//    workload's own annotation too, so the bound holds across controller restarts;
//  - a failed restart is logged, reported as a Warning Event on the ExternalSecret, and
//    retried at most `attempts` times; the sync that caused it has already succeeded.
// Only names and times reach logs, Events and the workload: never a value or a value's hash.
import type { Logger } from 'pino';
import { pagedList } from '../../kube/list.js';
import { DAEMON_SETS, DEPLOYMENTS, resourcePath, STATEFUL_SETS, type Resource } from '../../kube/paths.js';
import { isKubeStatus, type KubeRest } from '../../kube/rest.js';
import type { EventRecorder, Regarding } from '../runtime/events.js';
import { keyOf, queueKey, type QueueKey } from '../runtime/keys.js';
import type { Requeue, WorkQueue } from '../runtime/queue.js';
import type { Schedule } from '../runtime/schedule.js';
import { RESTARTED_AT_ANNOTATION, restartedAt, restartsFor, type WorkloadLike } from './match.js';

export const DEFAULT_RESTART_MIN_INTERVAL_MS = 60_000;
/** Namespace scans running at once. */
const SCANS = 2;
const ATTEMPTS = 5;
const RETRY_DELAY_MS = 5_000;

const KINDS = [
  { kind: 'Deployment', res: DEPLOYMENTS }, { kind: 'StatefulSet', res: STATEFUL_SETS }, { kind: 'DaemonSet', res: DAEMON_SETS },
] as const satisfies readonly { kind: string; res: Resource }[];

/** The queue key of a namespace's scan. */
const scanKey = (ns: string) => queueKey('restart', ns, '');

export interface RestartOptions {
  rest: KubeRest;
  events: EventRecorder;
  logger: Logger;
  minIntervalMs: number;
  /** The controller's work queue and its timer heap: scans, delayed restarts and retries
   *  are its keys, handed back to `handle`. */
  queue: Pick<WorkQueue, 'add'>;
  schedule: Pick<Schedule, 'at'>;
  /** Tries of one restart (or of one namespace scan) before it is given up. */
  attempts?: number;
  /** Delay before the first retry; doubles with each. */
  retryDelayMs?: number;
}

/** Changed Secret name → the ExternalSecret that wrote it (the Events are about it). */
type Changes = Map<string, Regarding>;

/** Changes of one namespace not scanned yet, and the failed scans they carry. */
interface Pending {
  changes: Changes;
  failures: number;
}

/** One workload's restart state. */
interface Slot {
  kind: (typeof KINDS)[number];
  ns: string;
  name: string;
  key: QueueKey;
  /** When ESI last restarted it (ms). */
  last: number;
  /** A delayed restart or a retry is scheduled (its key), for the changes in `due`. */
  scheduled: boolean;
  due: Changes;
  failures: number;
}

/** The ExternalSecrets among `rs`, each once. */
const distinct = (rs: Iterable<Regarding>) => [...new Map([...rs].map((r) => [`${r.namespace}/${r.name}`, r])).values()];
const label = (s: { kind: { kind: string }; name: string }) => `${s.kind.kind} "${s.name}"`;

export class Restarter {
  private readonly slots = new Map<QueueKey, Slot>();
  /** Namespaces waiting for a scan, with the changes that arrived meanwhile. */
  private readonly waiting = new Map<string, Pending>();
  /** Failed scans waiting for their retry. */
  private readonly retrying = new Map<string, Pending>();
  /** Namespaces given a scan slot: their key is queued or being handled. */
  private readonly admitted = new Set<string>();
  private stopped = false;

  constructor(private readonly o: RestartOptions) {}

  /** Secret `ns/name`, written by `es`, has new data. Never throws, never waits. */
  secretChanged(ns: string, name: string, es: Regarding): void {
    if (this.stopped) return;
    const w = this.waiting.get(ns) ?? { changes: new Map(), failures: 0 };
    w.changes.set(name, es);
    this.waiting.set(ns, w);
    this.pump();
  }

  /** Whether `key` is one of the restarter's (handle it with `handle`). */
  static owns(key: QueueKey): boolean {
    const kind = keyOf(key).kind;
    return kind === 'restart' || KINDS.some((k) => k.kind === kind);
  }

  /** Runs one of its queue keys: a namespace's scan, or a workload's delayed restart or retry. */
  async handle(key: QueueKey): Promise<Requeue> {
    if (this.stopped) return {};
    const { kind, namespace } = keyOf(key);
    if (kind === 'restart') return this.scanNext(namespace);
    const slot = this.slots.get(key);
    if (!slot) return {};
    slot.scheduled = false;
    await this.delayed(slot);
    return {};
  }

  stop(): void {
    this.stopped = true;
    this.waiting.clear();
    this.retrying.clear();
    this.slots.clear();
  }

  /** Gives waiting namespaces a scan slot while fewer than SCANS hold one; never two scans
   *  of one namespace at once (both would find the same workload due and restart it twice). */
  private pump(): void {
    for (const ns of this.waiting.keys()) {
      if (this.stopped || this.admitted.size >= SCANS) return;
      if (this.admitted.has(ns)) continue;
      this.admitted.add(ns);
      this.o.queue.add(scanKey(ns));
    }
  }

  /** The scan of `ns`, once it holds a slot. A retry coming due joins the changes waiting. */
  private async scanNext(ns: string): Promise<Requeue> {
    const retry = this.retrying.get(ns);
    if (retry) {
      this.retrying.delete(ns);
      const now = this.waiting.get(ns) ?? { changes: new Map(), failures: 0 };
      for (const [k, v] of retry.changes) if (!now.changes.has(k)) now.changes.set(k, v);
      now.failures = Math.max(now.failures, retry.failures);
      this.waiting.set(ns, now);
    }
    if (!this.admitted.has(ns)) {
      this.pump();
      return {};
    }
    const w = this.waiting.get(ns);
    this.waiting.delete(ns);
    try {
      if (w) await this.scan(ns, w.changes);
      return {};
    } catch (err) {
      return this.scanFailed(ns, w!, err);
    } finally {
      this.admitted.delete(ns);
      this.pump();
    }
  }

  private scanFailed(ns: string, w: Pending, err: unknown): Requeue {
    const failures = w.failures + 1;
    const last = failures >= (this.o.attempts ?? ATTEMPTS);
    const message = `cannot list the workloads of namespace "${ns}" to restart them: ${(err as Error).message}${last ? ' (giving up)' : ' (retrying)'}`;
    this.o.logger.warn({ namespace: ns, secrets: [...w.changes.keys()], err: (err as Error).message }, 'restart on change: list failed');
    for (const es of distinct(w.changes.values())) this.o.events.emit(es, 'Warning', 'RestartFailed', message);
    if (last || this.stopped) return {};
    this.retrying.set(ns, { changes: w.changes, failures });
    return { after: this.retryDelay(failures) };
  }

  private retryDelay(failures: number): number {
    return (this.o.retryDelayMs ?? RETRY_DELAY_MS) * 2 ** (failures - 1);
  }

  /** Lists the namespace's workloads, restarts now those whose interval has passed, delays
   *  the others; one Event per ExternalSecret names what restarted now. */
  private async scan(ns: string, changes: Changes): Promise<void> {
    this.prune();
    const found: { slot: Slot; hits: string[] }[] = [];
    for (const kind of KINDS) {
      await pagedList(this.o.rest, resourcePath(kind.res, { namespace: ns }), (obj) => {
        const hits = restartsFor(obj as WorkloadLike, changes.keys());
        if (hits.length && obj.metadata?.name) found.push({ slot: this.slot(kind, ns, obj.metadata.name, restartedAt(obj as WorkloadLike)), hits });
        return {}; // nothing else of the workload is kept
      });
    }
    const now = Date.now();
    const ready: Slot[] = [];
    for (const { slot, hits } of found) {
      for (const h of hits) slot.due.set(h, changes.get(h)!);
      if (slot.scheduled) continue; // a delayed restart is pending: this change joins it
      const wait = slot.last + this.o.minIntervalMs - now;
      if (wait <= 0) ready.push(slot);
      else this.delay(slot, wait, hits);
    }
    if (ready.length) await this.restart(ready);
  }

  private slot(kind: Slot['kind'], ns: string, name: string, annotated: number): Slot {
    const key = queueKey(kind.kind, ns, name);
    let s = this.slots.get(key);
    if (!s) this.slots.set(key, (s = { kind, ns, name, key, last: 0, scheduled: false, due: new Map(), failures: 0 }));
    // A time in the future (written by hand) counts as now: the wait stays within one interval.
    s.last = Math.max(s.last, Math.min(annotated, Date.now()));
    return s;
  }

  /** Forgets workloads with nothing pending whose interval has passed: the map holds only
   *  workloads restarted within the last interval. */
  private prune(): void {
    const now = Date.now();
    for (const [k, s] of this.slots) if (!s.scheduled && s.last + this.o.minIntervalMs <= now) this.slots.delete(k);
  }

  private delay(slot: Slot, ms: number, hits: string[]): void {
    const at = new Date(Date.now() + ms).toISOString();
    for (const es of distinct(hits.map((h) => slot.due.get(h)!))) {
      this.o.events.emit(es, 'Normal', 'RestartDelayed', `Restart of ${label(slot)} delayed to ${at}: it restarted less than the minimum interval (--restart-min-interval) ago`);
    }
    this.later(slot, ms);
  }

  /** Runs the workload's key again in `ms` (a delayed restart or a retry). */
  private later(slot: Slot, ms: number): void {
    slot.scheduled = true;
    this.o.schedule.at(slot.key, Date.now() + ms);
  }

  /** A delayed restart or a retry: the workload is read again, and restarted only if it
   *  still exists and still opts in for the changed Secrets. */
  private async delayed(slot: Slot): Promise<void> {
    if (this.stopped) return;
    try {
      const w = await this.o.rest.get<WorkloadLike>(resourcePath(slot.kind.res, { namespace: slot.ns, name: slot.name }));
      const still = new Set(restartsFor(w, slot.due.keys()));
      for (const k of [...slot.due.keys()]) if (!still.has(k)) slot.due.delete(k);
    } catch (err) {
      if (!isKubeStatus(err, 404)) return this.failed(slot, err);
      slot.due.clear();
    }
    if (slot.due.size) await this.restart([slot]);
  }

  private async restart(slots: Slot[]): Promise<void> {
    const at = new Date().toISOString();
    // Per ExternalSecret (namespace/name): the workloads restarted and the Secrets why.
    const done = new Map<string, { es: Regarding; workloads: string[]; secrets: Set<string> }>();
    for (const slot of slots) {
      try {
        await this.o.rest.patch(resourcePath(slot.kind.res, { namespace: slot.ns, name: slot.name }), {
          spec: { template: { metadata: { annotations: { [RESTARTED_AT_ANNOTATION]: at } } } },
        });
      } catch (err) {
        if (isKubeStatus(err, 404)) slot.due.clear();
        else this.failed(slot, err);
        continue;
      }
      slot.last = Date.parse(at);
      slot.failures = 0;
      this.o.logger.info({ workload: `${slot.kind.kind} ${slot.ns}/${slot.name}`, secrets: [...slot.due.keys()] }, 'restarted on secret change');
      for (const [secret, es] of slot.due) {
        const id = `${es.namespace}/${es.name}`;
        const d = done.get(id) ?? { es, workloads: [], secrets: new Set<string>() };
        if (!d.workloads.includes(label(slot))) d.workloads.push(label(slot));
        d.secrets.add(secret);
        done.set(id, d);
      }
      slot.due.clear();
    }
    for (const d of done.values()) {
      const secrets = [...d.secrets].sort().map((s) => `"${s}"`).join(', ');
      this.o.events.emit(d.es, 'Normal', 'Restarted', `Restarted ${d.workloads.join(', ')} (Secret ${secrets} changed; ${RESTARTED_AT_ANNOTATION}=${at})`);
    }
  }

  private failed(slot: Slot, err: unknown): void {
    slot.failures++;
    const last = slot.failures >= (this.o.attempts ?? ATTEMPTS);
    const message = `cannot restart ${label(slot)}: ${(err as Error).message}${last ? ' (giving up)' : ' (retrying)'}`;
    this.o.logger.warn({ workload: `${slot.kind.kind} ${slot.ns}/${slot.name}`, err: (err as Error).message, failures: slot.failures }, 'restart on change failed');
    for (const es of distinct(slot.due.values())) this.o.events.emit(es, 'Warning', 'RestartFailed', message);
    if (last || this.stopped) {
      slot.due.clear();
      slot.failures = 0;
      return;
    }
    this.later(slot, this.retryDelay(slot.failures));
  }
}
