// PushSecret status: the Ready condition (Synced / Errored / SourceDeleted), refreshTime,
// syncedResourceVersion and syncedPushSecrets (store → remote entry → the data entry that
// wrote it: names only, never a value). Written only when it changes, replacing the whole
// status (a merge patch would keep entries removed from the map).
import type { Condition, ExternalSecret, PushSecret, PushSecretData, PushSecretStatus } from '../../api/types.js';
import { PUSH_SECRET_API_VERSION } from '../../api/types.js';
import { JSON_PATCH, type KubeRest } from '../../kube/rest.js';
import type { Regarding } from '../runtime/events.js';
import { bounded, readyCondition, syncedResourceVersion, withReady } from '../externalsecret/status.js';
import { PUSH_SECRETS, resourcePath } from '../../kube/paths.js';

/** store key → entry key → what was pushed. */
export type Synced = Record<string, Record<string, PushSecretData>>;

export const psPath = (ns: string, name: string, subresource?: 'status') => resourcePath(PUSH_SECRETS, { namespace: ns, name, subresource });

export function regarding(ps: PushSecret): Regarding {
  return { apiVersion: PUSH_SECRET_API_VERSION, kind: 'PushSecret', name: ps.metadata.name!, namespace: ps.metadata.namespace, uid: ps.metadata.uid };
}

/** The generation and a hash of labels and annotations, as ExternalSecrets record it. */
function pushResourceVersion(ps: PushSecret): string {
  return syncedResourceVersion(ps as unknown as ExternalSecret);
}

export function countEntries(s: Synced): number {
  return Object.values(s).reduce((n, m) => n + Object.keys(m).length, 0);
}

/** A copy without empty store maps. */
export function compact(s: Synced): Synced {
  return Object.fromEntries(Object.entries(s).filter(([, m]) => Object.keys(m).length > 0).map(([k, m]) => [k, { ...m }]));
}

export interface Outcome {
  ready: 'True' | 'False';
  reason: 'Synced' | 'Errored' | 'SourceDeleted' | 'AccessDenied';
  message: string;
  synced: Synced;
  wrote: boolean;
}

/** Writes the status when it differs; true when written. */
export async function writePushStatus(rest: KubeRest, ps: PushSecret, o: Outcome, now = new Date()): Promise<boolean> {
  const prev = ps.status;
  const message = bounded(o.message);
  const conditions: Condition[] = withReady(prev?.conditions, o.ready, o.reason, message);
  const next: PushSecretStatus = {
    conditions,
    refreshTime: o.wrote || !prev?.refreshTime ? now.toISOString() : prev.refreshTime,
    syncedResourceVersion: pushResourceVersion(ps),
    syncedPushSecrets: compact(o.synced),
  };
  const a = readyCondition(prev?.conditions);
  const same = a?.status === o.ready && a.reason === o.reason && a.message === message &&
    prev?.refreshTime === next.refreshTime && prev?.syncedResourceVersion === next.syncedResourceVersion &&
    JSON.stringify(compact(prev?.syncedPushSecrets ?? {})) === JSON.stringify(next.syncedPushSecrets);
  if (same) return false;
  await rest.patch(psPath(ps.metadata.namespace!, ps.metadata.name!, 'status'), [{ op: 'add', path: '/status', value: next }], JSON_PATCH);
  return true;
}
