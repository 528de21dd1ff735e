// What a PushSecret wrote, as the controller itself recorded it. `status.syncedPushSecrets`
// cannot be that record: whoever may update a PushSecret's status subresource (its tenant)
// could list another tenant's remote entries there and have the controller overwrite or
// delete them. So the controller keeps its own record in a ConfigMap of its own namespace
// (where tenants have no rights), one per PushSecret and controller class, and decides
// overwrites and deletions from it alone; the status repeats it for users and tools.
// Names only, never a value. A tenant may write the status subresource, so status is never
// read back as the controller's memory (docs/decisions/0052-no-ambient-identity-for-tenant-stores.md).
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { PushSecret } from '../../api/types.js';
import { CONFIG_MAPS, resourcePath } from '../../kube/paths.js';
import { isKubeStatus, type KubeRest } from '../../kube/rest.js';
import { compact, type Synced } from './status.js';

const RECORD_LABEL = 'esi.dev/push-record';
const SUBJECT_ANNOTATION = 'esi.dev/push-secret';
const KEY = 'synced';

interface Held {
  uid: string;
  synced: Synced;
  /** The JSON last persisted (undefined = not known to be persisted). */
  saved?: string;
}

const copy = (s: Synced): Synced => Object.fromEntries(Object.entries(s).map(([k, m]) => [k, { ...m }]));

/** A record that is not the shape the controller writes is treated as empty: forgetting
 *  entries leaves them in the store (reported), whereas trusting junk could delete others'. */
function parse(text: string | undefined): Synced {
  try {
    const v = JSON.parse(text ?? '{}') as unknown;
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return {};
    const ok = Object.values(v).every((m) => typeof m === 'object' && m !== null && !Array.isArray(m));
    return ok ? (v as Synced) : {};
  } catch {
    return {};
  }
}

export class PushRecords {
  private readonly held = new Map<string, Held>();

  constructor(
    private readonly rest: KubeRest,
    /** The controller's own namespace (--namespace). */
    private readonly namespace: string,
    private readonly cls: string,
    private readonly logger: Logger,
  ) {}

  private name(uid: string): string {
    return `esi-push-${this.cls}-${uid}`;
  }

  private path(uid?: string): string {
    return resourcePath(CONFIG_MAPS, { namespace: this.namespace, ...(uid === undefined ? {} : { name: this.name(uid) }) });
  }

  private static key(ps: PushSecret): string {
    return `${ps.metadata.namespace}/${ps.metadata.name}`;
  }

  /** The entries this controller wrote for `ps` (a copy). Throws when the record cannot be
   *  read: a reconcile must not decide anything without it. */
  async load(ps: PushSecret): Promise<Synced> {
    const key = PushRecords.key(ps);
    const uid = ps.metadata.uid!;
    const hit = this.held.get(key);
    if (hit?.uid === uid) return copy(hit.synced);
    let synced: Synced = {};
    try {
      const cm = await this.rest.get<V1ConfigMap>(this.path(uid));
      synced = parse(cm.data?.[KEY]);
    } catch (err) {
      if (!isKubeStatus(err, 404)) throw new Error(`cannot read the controller's record of this PushSecret: ${(err as Error).message}`, { cause: err });
    }
    this.held.set(key, { uid, synced, saved: JSON.stringify(compact(synced)) });
    return copy(synced);
  }

  /** Records `synced` as what `ps` wrote; persisted before the caller reports it in status.
   *  Held in memory first, so a failed write is retried by the next save. */
  async save(ps: PushSecret, synced: Synced): Promise<void> {
    const key = PushRecords.key(ps);
    const uid = ps.metadata.uid!;
    const prev = this.held.get(key);
    const held: Held = { uid, synced: copy(synced), ...(prev?.uid === uid && prev.saved !== undefined ? { saved: prev.saved } : {}) };
    this.held.set(key, held);
    const json = JSON.stringify(compact(synced));
    if (held.saved === json) return;
    if (json === '{}') await this.remove(uid);
    else await this.write(ps, uid, json);
    held.saved = json;
  }

  /** Forgets the record of a PushSecret that is gone (by its cached uid when only the key is known). */
  async drop(ps: { namespace: string; name: string; uid?: string }): Promise<void> {
    const key = `${ps.namespace}/${ps.name}`;
    const uid = ps.uid ?? this.held.get(key)?.uid;
    this.held.delete(key);
    if (uid) await this.remove(uid).catch((err: Error) => this.logger.warn({ pushSecret: key, err: err.message }, 'push record not deleted'));
  }

  private async write(ps: PushSecret, uid: string, json: string): Promise<void> {
    const body: V1ConfigMap = {
      apiVersion: 'v1', kind: 'ConfigMap',
      metadata: {
        name: this.name(uid), namespace: this.namespace,
        labels: { [RECORD_LABEL]: this.cls },
        annotations: { [SUBJECT_ANNOTATION]: `${PushRecords.key(ps)}/${uid}` },
      },
      data: { [KEY]: json },
    };
    try {
      await this.rest.replace(this.path(uid), body);
    } catch (err) {
      if (!isKubeStatus(err, 404)) throw err;
      await this.rest.create(this.path(), body);
    }
  }

  private async remove(uid: string): Promise<void> {
    try {
      await this.rest.delete(this.path(uid));
    } catch (err) {
      if (!isKubeStatus(err, 404)) throw err;
    }
  }
}
