// Remote entries a PushSecret leaves in a store without deleting them, and the one case in
// which a deleted PushSecret lets go of entries it could not delete: its namespace is being
// deleted, and that deletion removed what the store authenticates with (a credential Secret or
// ConfigMap of the namespace, or a ServiceAccount of it). Two rules hold together here:
//  - a store that cannot authenticate never means "the remote entry is gone" (the entries are
//    reported left, never deleted);
//  - a namespace's deletion is never held for ever by a finalizer whose credential the same
//    deletion removed (no one can restore it: nothing can be created in a Terminating namespace).
// Outside a Terminating namespace, or when the credential is still there (a store that is down,
// a credential elsewhere), the finalizer stays and the deletion is retried.
// Users see what was left: a Warning Event on the PushSecret and, for a ClusterSecretStore (which
// outlives the namespace, and whose Events outlive the namespace's), on the store; a log line
// per entry; and esi_controller_push_entries_left_total{store,reason}. They name the store and
// the remote keys, never a value. The remote keys are not metric labels: a tenant could grow
// the series without bound by deleting namespaces (DESIGN "Bounded state").
import type { V1Namespace } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { EXTERNAL_SECRET_API_VERSION, type AnySecretStore, type PushSecret, type PushSecretData } from '../../api/types.js';
import { isKubeStatus, type KubeRest } from '../../kube/rest.js';
import { CONFIG_MAPS, NAMESPACES, resourcePath, SECRETS } from '../../kube/paths.js';
import { ProviderError } from '../../providers/types.js';
import { referencedObjects } from '../../stores/access.js';
import { describeStore } from '../../stores/use.js';
import { storeId } from '../../stores/id.js';
import type { EventRecorder } from '../runtime/events.js';
import type { Informers } from '../runtime/informers.js';
import type { LeftReason, LetGo, PushMetrics } from './cleanup.js';
import { regarding } from './status.js';

/** Remote keys an Event names at most (the rest are counted; the log names each). */
const NAMED_KEYS = 20;

interface LeftDeps {
  events: EventRecorder;
  metrics: PushMetrics;
  logger: Logger;
}

/** Reports `entries` of the store `key` as left in it, not deleted and no longer tracked. */
// eslint-disable-next-line max-params -- the reporter, the PushSecret, the store, its entries, why and the cause
export function leftBehind(d: LeftDeps, ps: PushSecret, at: { key: string; store: AnySecretStore | undefined }, entries: Record<string, PushSecretData>, reason: LeftReason, cause: string): void {
  const keys = Object.keys(entries).sort();
  const id = at.store ? storeId(at.store) : at.key;
  const what = at.store ? describeStore(at.store) : at.key;
  const pushSecret = `${ps.metadata.namespace}/${ps.metadata.name}`;
  for (const ek of keys) {
    const ref = entries[ek]!.match.remoteRef;
    d.metrics.left(id, reason);
    d.logger.warn({ pushSecret, store: id, remoteKey: ref.remoteKey, property: ref.property, reason }, 'remote entry left in the store, not deleted');
  }
  const named = keys.slice(0, NAMED_KEYS).map((k) => `"${k}"`).join(', ') + (keys.length > NAMED_KEYS ? ` and ${keys.length - NAMED_KEYS} more` : '');
  const message = `${cause}; ${keys.length} remote entr${keys.length === 1 ? 'y' : 'ies'} of PushSecret "${pushSecret}" left in ${what}, not deleted: ${named}`;
  d.events.emit(regarding(ps), 'Warning', 'DeleteSkipped', message);
  if (at.store?.kind === 'ClusterSecretStore') {
    d.events.emit({ apiVersion: EXTERNAL_SECRET_API_VERSION, kind: 'ClusterSecretStore', name: at.store.metadata.name!, uid: at.store.metadata.uid }, 'Warning', 'DeleteSkipped', message);
  }
}

export interface LetGoDeps {
  informers: Informers;
  rest: KubeRest;
}

const deleting = (o: { metadata?: { deletionTimestamp?: unknown }; status?: { phase?: string } } | undefined) =>
  !!o && (!!o.metadata?.deletionTimestamp || o.status?.phase === 'Terminating');

/** Whether namespace `ns` is being deleted: the cache, else the API (the cache may lag the
 *  PushSecret's own deletion, and scoped mode watches no Namespaces). Unknown = no. */
async function namespaceDeleting(d: LetGoDeps, ns: string): Promise<boolean> {
  if (deleting(d.informers.namespace(ns))) return true;
  try {
    return deleting(await d.rest.get<V1Namespace>(resourcePath(NAMESPACES, { name: ns })));
  } catch (err) {
    return isKubeStatus(err, 404);
  }
}

/** Whether the deletion of `ns` removed what `store` authenticates with from `ns`: a
 *  referenced Secret or ConfigMap of `ns` is gone or going; or the store logs in as a
 *  ServiceAccount of `ns` (which the controller may not read) and the login failed. */
async function credentialRemoved(rest: KubeRest, store: AnySecretStore, ns: string, errors: unknown[]): Promise<boolean> {
  const refs = referencedObjects(store.spec.provider);
  for (const c of refs.credentials) {
    if ((c.namespace ?? ns) !== ns) continue;
    try {
      if (deleting(await rest.get(resourcePath(c.kind === 'Secret' ? SECRETS : CONFIG_MAPS, { namespace: ns, name: c.name })))) return true;
    } catch (err) {
      if (isKubeStatus(err, 404)) return true;
    }
  }
  const ownIdentity = refs.serviceAccounts.some((s) => (s.namespace ?? ns) === ns);
  return ownIdentity && errors.some((e) => e instanceof ProviderError && (e.code === 'AuthFailed' || e.code === 'Forbidden'));
}

/** The `letGo` of a deleted PushSecret of `ns` (cleanup.ts): the namespace is asked once. */
export function namespaceLetGo(d: LetGoDeps, ns: string): LetGo {
  let terminating: Promise<boolean> | undefined;
  return async (store, errors) => {
    terminating ??= namespaceDeleting(d, ns);
    return (await terminating) && credentialRemoved(d.rest, store, ns, errors);
  };
}
