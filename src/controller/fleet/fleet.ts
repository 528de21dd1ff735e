// Fleet control of the injected pods (docs/fleet.md):
// from the pod cache (pods with the inject label, their esi.dev/ annotations) and the
// ExternalSecrets and stores they mount, the controller
//  - turns each store's read budget (`esi.dev/read-budget`, or --default-read-budget) into a
//    refresh floor for the pods reading it (budget.ts), the reconciler's own reads of the store
//    taken off first;
//  - gives each pod mounting a watched source a value-free change generation (a hash of the
//    sources' versions: a Kubernetes Secret's resource version, kube/metadata-watch.ts; the
//    count of a cloud entry's change events, feed.ts: AWS from aws-queue.ts, GCP from
//    gcp-subscription.ts);
// and writes both as the pod's annotations, which the kubelet projects into the agent's
// channel files. Decisions are recomputed at most every `debounceMs`; each pod is patched only
// when its annotations differ, all patches paced by one rate (--pod-patch-qps).
import { createHash } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { AnySecretStore, ExternalSecret } from '../../api/types.js';
import { CHANGE_GENERATION_ANNOTATION, INJECTED_ANNOTATION, REFRESH_FLOOR_ANNOTATION } from '../../pod-contract/annotations.js';
import { parseAnnotations } from '../../pod-contract/parse.js';
import { storeIdOf } from '../../stores/id.js';
import { TokenBucket } from '../runtime/queue.js';
import { budgetFloor, parseReadBudget, type BudgetPod } from './budget.js';
import { podSources, READ_BUDGET_ANNOTATION, storeReads, type Source } from './reads.js';

export { READ_BUDGET_ANNOTATION };

interface PodEntry {
  ns: string;
  name: string;
  ownSeconds: number;
  secrets: string[];
  floor?: string;
  generation?: string;
}

export interface FleetMetrics {
  planned(store: string, plan: { budget: number; rate: number; floor: number; pods: number }): void;
  notified(delaySeconds: number): void;
  patched(ok: boolean): void;
}

export interface FleetOptions {
  logger: Logger;
  externalSecret(ns: string, name: string): ExternalSecret | undefined;
  store(kind: 'SecretStore' | 'ClusterSecretStore', ns: string, name: string): AnySecretStore | undefined;
  /** The reconciler's reads of a store per second (its recent rate). */
  reconcilerRate(store: string): number;
  patchPod(ns: string, name: string, annotations: Record<string, string | null>): Promise<void>;
  /** A source's version; undefined when nothing is known of it (no watch, no event yet):
   *  it then counts for nothing in the generation. */
  sourceVersion(source: Source): string | undefined;
  /** The namespaces whose Secrets the pods' Kubernetes sources live in (to be watched). */
  watchSources?(namespaces: ReadonlySet<string>): void;
  /** Reads per second for stores without the annotation; none when undefined. */
  defaultBudget?: number;
  patchQps: number;
  debounceMs?: number;
  metrics?: FleetMetrics;
}

const toDuration = (s: number) => `${s}s`;

/** A refreshing pod's entry from its annotations (the webhook's parser); none if it refuses them. */
function entryOf(ns: string, name: string, ann: Record<string, string>): PodEntry | undefined {
  const parsed = parseAnnotations(ann);
  if (!parsed.ok) return undefined;
  const req = parsed.request;
  return {
    ns, name, ownSeconds: req.refreshSeconds, secrets: [...new Set([...req.secrets, ...(req.env ?? []).map((e) => e.secret)])],
    ...(ann[REFRESH_FLOOR_ANNOTATION] ? { floor: ann[REFRESH_FLOOR_ANNOTATION] } : {}),
    ...(ann[CHANGE_GENERATION_ANNOTATION] ? { generation: ann[CHANGE_GENERATION_ANNOTATION] } : {}),
  };
}

export class Fleet {
  private readonly pods = new Map<string, PodEntry>();
  private readonly bucket: TokenBucket;
  private timer?: NodeJS.Timeout;
  /** `ns/pod` → when the source change it is being told about was seen. */
  private readonly changeSeen = new Map<string, number>();
  private readonly inFlight = new Set<string>();
  private stopped = false;

  constructor(private readonly o: FleetOptions) {
    this.bucket = new TokenBucket(o.patchQps, Math.max(1, Math.ceil(o.patchQps)));
  }

  /** A pod event of the controller's pod cache. */
  observePod(pod: V1Pod, verb: 'add' | 'update' | 'delete'): void {
    const ns = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    const key = `${ns}/${name}`;
    const ann = pod.metadata?.annotations ?? {};
    const mode = ann[INJECTED_ANNOTATION];
    const next = verb === 'delete' || pod.metadata?.deletionTimestamp || !mode || mode === 'init-only' ? undefined : entryOf(ns, name, ann);
    if (!next) {
      if (this.pods.delete(key)) this.schedule();
      return;
    }
    const prev = this.pods.get(key);
    this.pods.set(key, next);
    if (!prev || JSON.stringify(prev) !== JSON.stringify(next)) this.schedule();
  }

  /** Stores, ExternalSecrets or source Secrets changed: recompute soon. */
  changed(sourceChangeAt?: number): void {
    if (sourceChangeAt !== undefined) for (const key of this.pods.keys()) if (!this.changeSeen.has(key)) this.changeSeen.set(key, sourceChangeAt);
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.recompute();
    }, this.o.debounceMs ?? 200);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private budgetOf(store: AnySecretStore): number | undefined {
    const raw = store.metadata.annotations?.[READ_BUDGET_ANNOTATION];
    if (raw === undefined) return this.o.defaultBudget;
    try {
      return parseReadBudget(raw);
    } catch (err) {
      this.o.logger.warn({ store: storeIdOf(store.kind, store.metadata.name!, store.metadata.namespace) }, `${READ_BUDGET_ANNOTATION} ignored: ${(err as Error).message}`);
      return this.o.defaultBudget;
    }
  }

  /** One decision over the whole fleet: O(pods × their ExternalSecrets). */
  recompute(): void {
    const byStore = new Map<string, { store: AnySecretStore; pods: { key: string; p: BudgetPod }[] }>();
    const sourcesOf = new Map<string, Source[]>();
    const namespaces = new Set<string>();
    for (const [key, pod] of this.pods) {
      const es = pod.secrets.map((n) => this.o.externalSecret(pod.ns, n)).filter((e): e is ExternalSecret => !!e);
      for (const [id, { store, reads }] of storeReads(pod.ns, es, this.o.store)) {
        let e = byStore.get(id);
        if (!e) byStore.set(id, (e = { store, pods: [] }));
        e.pods.push({ key, p: { ownSeconds: pod.ownSeconds, reads } });
      }
      const sources = podSources(pod.ns, es, this.o.store);
      if (sources.length) sourcesOf.set(key, sources);
      for (const s of sources) if (s.kind === 'kubernetes') namespaces.add(s.scope);
    }
    this.o.watchSources?.(namespaces);
    const floors = this.floors(byStore);
    for (const [key, pod] of this.pods) {
      const floor = floors.get(key);
      const want: Record<string, string | null> = {};
      const wantFloor = floor ? toDuration(floor) : undefined;
      if (wantFloor !== pod.floor) want[REFRESH_FLOOR_ANNOTATION] = wantFloor ?? null;
      const gen = this.generation(sourcesOf.get(key));
      if (gen !== undefined && gen !== pod.generation) want[CHANGE_GENERATION_ANNOTATION] = gen;
      if (Object.keys(want).length === 0) this.changeSeen.delete(key);
      else void this.patch(key, pod, want);
    }
  }

  /** Pod key → the highest floor of the budgets of the stores it reads (when above its own). */
  private floors(byStore: Map<string, { store: AnySecretStore; pods: { key: string; p: BudgetPod }[] }>): Map<string, number> {
    const floors = new Map<string, number>();
    for (const [id, { store, pods }] of byStore) {
      const budget = this.budgetOf(store);
      if (budget === undefined) continue;
      const floor = budgetFloor(pods.map((x) => x.p), budget, this.o.reconcilerRate(id));
      if (!floor.fits) this.o.logger.warn({ store: id, pods: pods.length }, 'the read budget cannot be met even at the longest refresh period (24h)');
      this.o.metrics?.planned(id, { budget, rate: floor.rate + this.o.reconcilerRate(id), floor: floor.seconds, pods: pods.length });
      for (const { key, p } of pods) if (floor.seconds > p.ownSeconds) floors.set(key, Math.max(floors.get(key) ?? 0, floor.seconds));
    }
    return floors;
  }

  /** sha256 over the known sources' versions, 16 hex digits: names no key, holds no value. */
  private generation(sources: Source[] | undefined): string | undefined {
    const parts: string[] = [];
    for (const s of sources ?? []) {
      const v = this.o.sourceVersion(s);
      if (v !== undefined) parts.push(`${s.kind}:${s.scope}/${s.name}@${v}`);
    }
    if (!parts.length) return undefined;
    return createHash('sha256').update(parts.sort().join('\n')).digest('hex').slice(0, 16);
  }

  private async patch(key: string, pod: PodEntry, want: Record<string, string | null>): Promise<void> {
    if (this.inFlight.has(key)) return;
    this.inFlight.add(key);
    try {
      await this.bucket.take();
      if (this.stopped || this.pods.get(key) !== pod) return;
      await this.o.patchPod(pod.ns, pod.name, want);
      this.o.metrics?.patched(true);
      // What the cache will say once the watch delivers the patch: no second write meanwhile.
      if (REFRESH_FLOOR_ANNOTATION in want) pod.floor = want[REFRESH_FLOOR_ANNOTATION] ?? undefined;
      if (CHANGE_GENERATION_ANNOTATION in want) {
        pod.generation = want[CHANGE_GENERATION_ANNOTATION]!;
        const seen = this.changeSeen.get(key);
        if (seen !== undefined) this.o.metrics?.notified((Date.now() - seen) / 1000);
      }
      this.changeSeen.delete(key);
    } catch (err) {
      this.o.metrics?.patched(false);
      this.o.logger.warn({ pod: key, err: (err as Error).message }, 'could not update the pod\'s fleet annotations; retrying in 5 s');
      // A refused write (RBAC, admission) is retried later, not in a loop of decisions.
      setTimeout(() => this.schedule(), 5_000).unref();
    } finally {
      this.inFlight.delete(key);
    }
  }
}
