// Status of ExternalSecrets and stores: a Ready condition whose reason and message say
// what happened (store, key, cause; never a value), written only when it changes — an
// idle refresh writes nothing. lastTransitionTime moves only when the status flips.
import { createHash } from 'node:crypto';
import type { Condition, ExternalSecret, ExternalSecretStatus } from '../../api/types.js';
import { LAST_APPLIED } from '../../kube/list.js';
import { EXTERNAL_SECRETS, resourcePath } from '../../kube/paths.js';
import { isKubeStatus, UNREAD, type KubeRest } from '../../kube/rest.js';
import { targetKind, targetName } from './manifest-target.js';

/** The last answer per cached object: a reconcile asks two or three times (due, status). */
const versions = new WeakMap<object, { generation?: number; labels?: object; annotations?: object; version: string }>();

/** ESO's `syncedResourceVersion`: the generation and a hash of labels and annotations. */
export function syncedResourceVersion(es: ExternalSecret): string {
  const { metadata: m } = es;
  const seen = versions.get(m);
  if (seen && seen.generation === m.generation && seen.labels === m.labels && seen.annotations === m.annotations) return seen.version;
  const version = computeVersion(es);
  versions.set(m, { generation: m.generation, labels: m.labels, annotations: m.annotations, version });
  return version;
}

function computeVersion(es: ExternalSecret): string {
  const h = createHash('sha256')
    .update(JSON.stringify(Object.entries(es.metadata.labels ?? {}).sort()))
    .update(JSON.stringify(Object.entries(es.metadata.annotations ?? {}).filter(([k]) => k !== LAST_APPLIED).sort()))
    .digest('hex')
    .slice(0, 16);
  return `${es.metadata.generation ?? 0}-${h}`;
}

export function readyCondition(conditions: Condition[] | undefined): Condition | undefined {
  return conditions?.find((c) => c.type === 'Ready');
}

/** The conditions with Ready set; the previous transition time is kept when the status stays. */
export function withReady(conditions: Condition[] | undefined, status: Condition['status'], reason: string, message: string): Condition[] {
  const prev = readyCondition(conditions);
  const ready: Condition = {
    type: 'Ready', status, reason, message,
    lastTransitionTime: prev && prev.status === status && prev.lastTransitionTime ? prev.lastTransitionTime : new Date().toISOString(),
  };
  return [...(conditions ?? []).filter((c) => c.type !== 'Ready'), ready];
}

/** Whether two statuses differ in what ESI writes (conditions, refresh, binding). */
function statusDiffers(a: ExternalSecretStatus | undefined, b: ExternalSecretStatus): boolean {
  const ra = readyCondition(a?.conditions);
  const rb = readyCondition(b.conditions);
  if (ra?.status !== rb?.status || ra?.reason !== rb?.reason || ra?.message !== rb?.message) return true;
  if (a?.syncedResourceVersion !== b.syncedResourceVersion) return true;
  if (a?.binding?.name !== b.binding?.name) return true;
  return a?.refreshTime !== b.refreshTime;
}

/** Messages are user-facing and stored in etcd: bounded. */
export function bounded(message: string, max = 1024): string {
  return message.length <= max ? message : `${message.slice(0, max - 1)}…`;
}

/** Writes `status` through the `/status` subresource at `path` as a merge patch (lists are
 *  replaced whole, so an emptied list must be sent as []); false when the object is gone. */
export async function patchStatus(rest: KubeRest, path: string, status: object): Promise<boolean> {
  try {
    await rest.patch(path, { status }, undefined, UNREAD);
    return true;
  } catch (err) {
    if (isKubeStatus(err, 404)) return false;
    throw err;
  }
}

/** An ExternalSecret's status after a sync that fetched from `source` (a description of its
 *  stores). `missing`: creationPolicy Merge found no Secret to merge into (Ready=True, reason
 *  SecretMissing, as ESO: nothing failed, the keys are merged once the Secret exists). */
export function syncedStatus(es: ExternalSecret, source: string, o: { wrote: boolean; now: number; missing?: string | undefined }): ExternalSecretStatus {
  const { missing } = o;
  const none = es.spec.target?.creationPolicy === 'None' || !!missing;
  const target = targetName(es);
  const message = missing
    ? `${missing}; its keys are merged once it exists`
    : none
      ? `values fetched from ${source} (creationPolicy None: no Secret written)`
      : `${targetKind(es)} "${target}" is in sync with ${source}`;
  return {
    conditions: withReady(es.status?.conditions, 'True', missing ? 'SecretMissing' : 'SecretSynced', message),
    // Only a write moves refreshTime: an idle refresh writes nothing, status included.
    refreshTime: o.wrote || !es.status?.refreshTime ? new Date(o.now).toISOString() : es.status.refreshTime,
    syncedResourceVersion: syncedResourceVersion(es),
    ...(none ? {} : { binding: { name: target } }),
  };
}

/** Writes an ExternalSecret's status when it differs; true when written. */
export async function writeStatus(rest: KubeRest, es: ExternalSecret, status: ExternalSecretStatus): Promise<boolean> {
  if (!statusDiffers(es.status, status)) return false;
  return patchStatus(rest, resourcePath(EXTERNAL_SECRETS, { namespace: es.metadata.namespace!, name: es.metadata.name!, subresource: 'status' }), status);
}
