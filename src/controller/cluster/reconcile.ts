// One cluster object (ClusterExternalSecret or ClusterPushSecret) → its namespaced objects:
// created or updated in every selected namespace (owner reference + label), deleted from
// namespaces that no longer match and when the cluster object is gone; status lists the
// provisioned and failed namespaces; Events say what changed. The namespaced objects are then
// served by the ExternalSecret and PushSecret reconcilers like any other.
//
// Which controller acts: the same rule as for the namespaced objects, the controller class of
// the stores the spec references (a ClusterSecretStore, or the SecretStore of that name in
// the selected namespaces); when no referenced store exists anywhere, the controller that
// serves unclassed stores. A ClusterExternalSecret counts every store its ExternalSecrets read
// (spec.secretStoreRef and the entries' own) and is left alone when any is of another
// class; a ClusterPushSecret is served when any of its target stores is of this class.
import type { KubernetesObject, V1Namespace } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { AnySecretStore, Condition } from '../../api/types.js';
import type { NamespaceFailure } from '../../api/cluster-types.js';
import { isKubeStatus, type KubeRest } from '../../kube/rest.js';
import { matchesLabelSelector } from '../../stores/access.js';
import { refreshIntervalMs } from '../externalsecret/refresh.js';
import type { EventRecorder } from '../runtime/events.js';
import type { Informers } from '../runtime/informers.js';
import { queueKey, type QueueKey } from '../runtime/keys.js';
import type { Requeue } from '../runtime/queue.js';
import { bounded, patchStatus, withReady } from '../externalsecret/status.js';
import type { StoreReconciler } from '../secretstore/reconcile.js';
import {
  CLUSTER_EXTERNAL_SECRET, CLUSTER_PUSH_SECRET, kindPath, desiredChild, ownedBy, selectedNamespaces, upToDate,
  type ClusterKind, type ClusterObject,
} from './kinds.js';

export interface ClusterDeps {
  informers: Informers;
  stores: Pick<StoreReconciler, 'served'>;
  rest: KubeRest;
  events: EventRecorder;
  logger: Logger;
  /** Whether the controller serves namespace `ns` (its namespace selector). */
  inScope(ns: string): boolean;
}

/** What happened (metrics) and when to run again (the work queue, src/controller/runtime/queue.ts). */
export type ClusterOutcome = { result: 'synced' | 'unchanged' | 'skipped' | 'error'; reason: string; requeue: Requeue };

/** ESO's default: the namespace selection is re-evaluated every minute. */
const DEFAULT_REFRESH_MS = 60_000;

type Child = KubernetesObject & { spec?: unknown };

export class ClusterReconciler {
  constructor(private readonly d: ClusterDeps) {}

  /** Reconciles `ces/<name>` or `cps/<name>`. */
  reconcile(prefix: 'ces' | 'cps', name: string): Promise<ClusterOutcome> {
    return prefix === 'ces' ? this.run(CLUSTER_EXTERNAL_SECRET, name) : this.run(CLUSTER_PUSH_SECRET as unknown as ClusterKind, name);
  }

  private object(k: ClusterKind, name: string): ClusterObject | undefined {
    return k.prefix === 'ces' ? this.d.informers.clusterExternalSecret(name) : this.d.informers.clusterPushSecret(name);
  }

  /** Every namespaced object the cluster object `name` provisioned (from the caches). */
  private children(k: ClusterKind, name: string): Child[] {
    const all: readonly Child[] = k.prefix === 'ces' ? this.d.informers.externalSecrets() : this.d.informers.pushSecrets();
    return all.filter((o) => ownedBy(k, o, name));
  }

  private child(k: ClusterKind, ns: string, name: string): Child | undefined {
    return k.prefix === 'ces' ? this.d.informers.externalSecret(ns, name) : this.d.informers.pushSecret(ns, name);
  }

  private async run(k: ClusterKind, name: string): Promise<ClusterOutcome> {
    const c = this.object(k, name);
    const existing = this.children(k, name);
    if (!c) {
      if (!existing.length) return { result: 'skipped', reason: 'Deleted', requeue: { next: 'cancel' } };
      // A cache miss is not proof: this controller's cache of the cluster kind may lag its
      // cache of the children (a controller of another class has just provisioned them).
      // Only the apiserver saying the object is gone lets its objects go (the garbage
      // collector would, where one runs).
      if (await this.d.rest.exists(kindPath(k.apiVersion, k.plural, { name }))) {
        return { result: 'skipped', reason: 'NotCached', requeue: { backoff: true } };
      }
      for (const o of existing) await this.remove(k, undefined, o);
      return { result: 'synced', reason: 'Deleted', requeue: { next: 'cancel' } };
    }
    const namespaces = this.d.informers.namespaces();
    const selected = selectedNamespaces(k, c, namespaces).filter((ns) => this.d.inScope(ns));
    const considered = new Set([...selected, ...existing.map((o) => o.metadata!.namespace!)]);
    if (!this.served(k, c, [...considered])) return { result: 'skipped', reason: 'OtherClass', requeue: { next: 'cancel' } };
    const childName = k.childName(c);
    let changed = false;
    const provisioned: string[] = [];
    const failed: NamespaceFailure[] = [];
    for (const ns of selected) {
      const why = await this.provision(k, c, ns).then((wrote) => {
        changed ||= wrote;
        return undefined;
      }, (err: unknown) => (err as Error).message);
      if (why === undefined) provisioned.push(ns);
      else failed.push({ namespace: ns, reason: bounded(why, 256) });
    }
    // Objects in namespaces that no longer match, or under a former name.
    for (const o of existing) {
      if (!selected.includes(o.metadata!.namespace!) || o.metadata!.name !== childName) {
        await this.remove(k, c, o);
        changed = true;
      }
    }
    const wroteStatus = await this.writeStatus(k, c, { name: childName, provisioned, failed });
    const requeue: Requeue = { next: this.nextRefresh(k, c), backoff: failed.length > 0 };
    if (failed.length) return { result: 'error', reason: 'NamespacesFailed', requeue };
    return { result: changed || wroteStatus ? 'synced' : 'unchanged', reason: 'Provisioned', requeue };
  }

  /** Creates or updates the object in `ns`; true when written; throws a user-facing Error. */
  private async provision(k: ClusterKind, c: ClusterObject, ns: string): Promise<boolean> {
    const want = desiredChild(k, c, ns);
    const what = `${k.child.kind} "${ns}/${want.metadata.name}"`;
    const path = kindPath(k.child.apiVersion, k.child.plural, { namespace: ns });
    const cur = this.child(k, ns, want.metadata.name);
    if (cur && !ownedBy(k, cur, c.metadata.name!)) {
      throw new Error(`${what} exists and is not provisioned by ${k.kind} "${c.metadata.name}"; delete it or set spec.${k.nameField}`);
    }
    if (cur && upToDate(cur, want)) return false;
    try {
      if (cur) {
        // Keep what others added to metadata (finalizers, other labels); ours wins on conflict.
        const body = {
          ...want,
          metadata: {
            ...cur.metadata,
            labels: { ...(cur.metadata?.labels ?? {}), ...want.metadata.labels },
            annotations: { ...(cur.metadata?.annotations ?? {}), ...(want.metadata.annotations ?? {}) },
            ownerReferences: want.metadata.ownerReferences,
          },
        };
        await this.d.rest.replace(kindPath(k.child.apiVersion, k.child.plural, { namespace: ns, name: want.metadata.name }), body);
      } else {
        await this.d.rest.create(path, want);
      }
    } catch (err) {
      // 409: created or changed a moment ago; the retry sees the cache catch up.
      throw new Error(`cannot ${cur ? 'update' : 'create'} ${what}: ${(err as Error).message}`, { cause: err });
    }
    const verb = cur ? 'Updated' : 'Created';
    this.d.events.emit(this.regarding(k, c), 'Normal', verb, `${verb} ${what}`);
    return true;
  }

  private async remove(k: ClusterKind, c: ClusterObject | undefined, o: Child): Promise<void> {
    const ns = o.metadata!.namespace!;
    const path = kindPath(k.child.apiVersion, k.child.plural, { namespace: ns, name: o.metadata!.name! });
    try {
      await this.d.rest.delete(path);
    } catch (err) {
      if (!isKubeStatus(err, 404)) throw err;
      return;
    }
    if (c) this.d.events.emit(this.regarding(k, c), 'Normal', 'Deleted', `Deleted ${k.child.kind} "${ns}/${o.metadata!.name}": namespace "${ns}" is no longer selected`);
  }

  /** The controller-class rule (see the header). */
  private served(k: ClusterKind, c: ClusterObject, namespaces: string[]): boolean {
    let found = false;
    for (const ref of k.storeRefs(c)) {
      const candidates: (AnySecretStore | undefined)[] = [];
      const select = (s: AnySecretStore) => !ref.labelSelector || matchesLabelSelector(ref.labelSelector, s.metadata.labels ?? {});
      if (ref.kind === 'ClusterSecretStore') {
        if (ref.name) candidates.push(this.d.informers.clusterSecretStore(ref.name));
        else candidates.push(...this.d.informers.clusterSecretStores().filter(select));
      } else {
        for (const ns of namespaces) {
          if (ref.name) candidates.push(this.d.informers.secretStore(ns, ref.name));
          else candidates.push(...this.d.informers.secretStores(ns).filter(select));
        }
      }
      // One reference is this controller's when a store it resolves to (in any selected
      // namespace, or the label-selected ones) is of this class.
      const present = candidates.filter((s): s is AnySecretStore => !!s);
      if (!present.length) continue;
      found = true;
      const served = present.some((s) => this.d.stores.served(s));
      if (served && k.storesRule === 'any') return true;
      if (!served && k.storesRule === 'all') return false;
    }
    if (found) return k.storesRule === 'all';
    return this.d.stores.served({ kind: 'SecretStore', metadata: {}, spec: { provider: {} } } as AnySecretStore);
  }

  private async writeStatus(k: ClusterKind, c: ClusterObject, s: { name: string; provisioned: string[]; failed: NamespaceFailure[] }): Promise<boolean> {
    const prev = c.status as { conditions?: Condition[]; provisionedNamespaces?: string[]; failedNamespaces?: NamespaceFailure[] } & Record<string, unknown> | undefined;
    const message = s.failed.length
      ? `${k.child.kind} "${s.name}" failed in ${s.failed.length} namespace(s): ${s.failed.map((f) => `${f.namespace}: ${f.reason}`).join('; ')}`
      : `${k.child.kind} "${s.name}" provisioned in ${s.provisioned.length} namespace(s)`;
    const status = {
      [k.nameField]: s.name,
      provisionedNamespaces: s.provisioned,
      failedNamespaces: s.failed,
      conditions: withReady(prev?.conditions, s.failed.length ? 'False' : 'True', s.failed.length ? 'NamespacesFailed' : 'Provisioned', bounded(message)),
    };
    const same = prev && prev[k.nameField] === s.name &&
      JSON.stringify(prev.provisionedNamespaces ?? []) === JSON.stringify(s.provisioned) &&
      JSON.stringify(prev.failedNamespaces ?? []) === JSON.stringify(s.failed) &&
      JSON.stringify(prev.conditions) === JSON.stringify(status.conditions);
    if (same) return false;
    if (s.failed.length) this.d.events.emit(this.regarding(k, c), 'Warning', 'NamespacesFailed', bounded(message));
    return patchStatus(this.d.rest, kindPath(k.apiVersion, k.plural, { name: c.metadata.name!, subresource: 'status' }), status);
  }

  /** When the namespace selection is evaluated again. */
  private nextRefresh(k: ClusterKind, c: ClusterObject): Requeue['next'] {
    let ms = DEFAULT_REFRESH_MS;
    const raw = k.refreshTime(c);
    if (raw) {
      try {
        ms = refreshIntervalMs(raw, 'spec.refreshTime');
      } catch (err) {
        this.d.logger.warn({ [k.kind]: c.metadata.name, err: (err as Error).message }, 'refreshTime ignored');
      }
    }
    return ms > 0 ? Date.now() + ms : 'cancel';
  }

  private regarding(k: ClusterKind, c: ClusterObject) {
    return { apiVersion: k.apiVersion, kind: k.kind, name: c.metadata.name!, uid: c.metadata.uid };
  }

  /** The cluster objects that may select namespace `ns` (all of them: a label change can
   *  add or remove it), as queue keys. */
  keysFor(_ns?: V1Namespace): QueueKey[] {
    return [
      ...this.d.informers.clusterExternalSecrets().map((c) => queueKey('ces', '', c.metadata.name!)),
      ...this.d.informers.clusterPushSecrets().map((c) => queueKey('cps', '', c.metadata.name!)),
    ];
  }
}
