// When one ExternalSecret fetches: whether values must be fetched now (a changed spec,
// force-sync, a missing or hand-edited Secret, a changed store, a periodic refresh that is due
// and that spec.syncWindows allows), and when its next periodic refresh runs, on the shared
// grid of ./refresh.ts. What is remembered between reconciles holds no value.
import type { V1Secret } from '@kubernetes/client-node';
import type { AnySecretStore, ExternalSecret } from '../../api/types.js';
import { handEdited } from '../runtime/cached-secret.js';
import { EXTERNAL_SECRET_ANNOTATION, FORCE_SYNC_ANNOTATION } from '../runtime/labels.js';
import type { Requeue } from '../runtime/queue.js';
import { versionOf } from '../secretstore/reconcile.js';
import { isManifestTarget } from './manifest-target.js';
import { nextRefresh, phaseOf, refreshAfterRead, type RefreshSpec } from './refresh.js';
import { readyCondition, syncedResourceVersion } from './status.js';
import { refreshAllowed } from './sync-windows.js';

/** What the reconciler remembers between reconciles of one ExternalSecret (no values). */
export interface EsState {
  uid: string;
  storeVersion: string;
  forceSync?: string;
  /** When the next periodic refresh is due (ms), once scheduled. */
  due?: number;
  /** The syncedResourceVersion whose unreadable sync windows were reported in an Event. */
  windowsReported?: string;
}

/** What a change of any store the ExternalSecret reads from changes (a refresh is due). */
export const sourceVersion = (stores: readonly AnySecretStore[]) => (stores.length ? stores.map(versionOf).join(',') : 'generators');

/** Is the target Secret there, ours and unedited (or not wanted: creationPolicy None)? */
function secretOk(es: ExternalSecret, cur: V1Secret | undefined): boolean {
  // A ConfigMap target is read and compared at each fetch (./manifest-target.ts).
  if ((es.spec.target?.creationPolicy ?? 'Owner') === 'None' || isManifestTarget(es)) return true;
  return !!cur && !handEdited(cur) && cur.metadata?.annotations?.[EXTERNAL_SECRET_ANNOTATION] === es.metadata.name;
}

/** What `needsFetch` reads: the remembered state, the cached target Secret, the jitter bound. */
export interface Seen {
  st?: EsState | undefined;
  cur?: V1Secret | undefined;
  jitterMaxMs: number;
}

/** Whether values must be fetched now; `notBefore`: a due refresh that spec.syncWindows
 *  holds back, and when it may run (undefined: at the next slot). */
export function needsFetch(es: ExternalSecret, stores: readonly AnySecretStore[], refresh: RefreshSpec, seen: Seen): { fetch: boolean; notBefore?: number } {
  const { st, cur } = seen;
  const ready = readyCondition(es.status?.conditions)?.status === 'True';
  const ok = secretOk(es, cur);
  if (refresh.policy === 'CreatedOnce') return { fetch: !ready || !ok };
  if (st && st.forceSync !== es.metadata.annotations?.[FORCE_SYNC_ANNOTATION]) return { fetch: true };
  if (!ready || !ok || es.status?.syncedResourceVersion !== syncedResourceVersion(es)) return { fetch: true };
  if (refresh.policy === 'OnChange' || refresh.intervalMs === 0) return { fetch: false };
  if (st && st.storeVersion !== sourceVersion(stores)) return { fetch: true };
  const due = st ? st.due !== undefined && Date.now() >= st.due : dueOnFirstSight(es, refresh, seen.jitterMaxMs);
  if (!due) return { fetch: false };
  // Sync windows gate only this, the periodic refresh (as ESO): a changed spec, a missing
  // or edited Secret and force-sync go through above.
  const gate = refreshAllowed(refresh.windows, Date.now());
  return gate.allowed ? { fetch: true } : { fetch: false, notBefore: gate.next };
}

/** First sight (e.g. after a restart): due when a grid point passed since the last write. */
function dueOnFirstSight(es: ExternalSecret, refresh: RefreshSpec, jitterMaxMs: number): boolean {
  const written = Date.parse(es.status?.refreshTime ?? '') || 0;
  return Date.now() >= nextRefresh(refresh.intervalMs, phaseOf(es.metadata.uid ?? ''), jitterMaxMs, written);
}

/** The next refresh, recorded in `st.due`: one interval after `readAt` when values were just
 *  read, otherwise the refresh already due later (or the next slot). */
export function nextRun(es: ExternalSecret, refresh: RefreshSpec, st: EsState, o: { jitterMaxMs: number; readAt?: number | undefined }): Requeue {
  if (refresh.policy !== 'Periodic' || refresh.intervalMs === 0) return { next: 'cancel' };
  const phase = phaseOf(es.metadata.uid ?? '');
  const now = Date.now();
  if (o.readAt !== undefined) st.due = refreshAfterRead(refresh.intervalMs, phase, o.jitterMaxMs, o.readAt);
  else if (st.due === undefined || st.due <= now) st.due = nextRefresh(refresh.intervalMs, phase, o.jitterMaxMs, now);
  return { next: st.due };
}
