// The target Secret of an ExternalSecret: what it should contain (desired), whether the
// Secret in the cluster already matches (no write), and who owns it. Pure functions:
// reconcile.ts does the I/O. Ownership rules (docs/controller.md):
//  - Owner: ESI creates the Secret with a controller ownerReference to the ExternalSecret;
//  - Orphan: ESI creates and updates it, without ownerReference;
//  - Merge: the Secret must exist; ESI merges its keys into it and records which;
//  - None: no Secret is written.
// A Secret written by another ExternalSecret (ownerReference or annotation) is never taken
// over; one ESI does not manage only when its writer allows it (adoptedBy).
import type { V1OwnerReference, V1Secret } from '@kubernetes/client-node';
import { LAST_APPLIED } from '../../kube/list.js';
import { holdsData } from '../runtime/cached-secret.js';
import { EXTERNAL_SECRET_API_VERSION, KIND_EXTERNAL_SECRET, type CreationPolicy, type ExternalSecret } from '../../api/types.js';
import {
  ADOPT_ANNOTATION,
  DATA_HASH_ANNOTATION,
  EXTERNAL_SECRET_ANNOTATION,
  MANAGED_LABEL,
  MERGED_KEYS_ANNOTATION,
  METADATA_KEYS_ANNOTATION,
  SOURCE_STORE_ANNOTATION,
  STORE_KIND_LABEL,
  STORE_LABEL,
  contentHash,
  labelValue,
} from '../runtime/labels.js';

export interface Desired {
  /** The object written: a Secret, or the ConfigMap of spec.target.manifest. */
  kind?: 'Secret' | 'ConfigMap';
  name: string;
  namespace: string;
  type: string;
  /** key → base64, as the API stores it. */
  data: Record<string, string>;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** `template.metadata.finalizers` (ESO sets them on the Secret). */
  finalizers: string[];
  immutable: boolean;
  ownerReference?: V1OwnerReference;
  policy: CreationPolicy;
}

/** The labels and annotations the Secret carries besides ESI's own: the template's (as
 *  rendered) or, without a template, the ExternalSecret's own, as ESO copies them. */
function userMetadata(es: ExternalSecret, rendered: { labels: Record<string, string>; annotations: Record<string, string> }) {
  if (es.spec.target?.template) return rendered;
  const annotations = { ...(es.metadata.annotations ?? {}) };
  delete annotations[LAST_APPLIED];
  return { labels: { ...(es.metadata.labels ?? {}) }, annotations };
}

/** A store (or generator) the values came from. Several with per-entry `sourceRef.storeRef`
 *  the labels name the first, the annotation all of them, comma-separated. */
export interface StoreSource {
  kind: string;
  name: string;
}

/** The Secret `es` wants: `rendered` is its template's output (data, and the labels and
 *  annotations the template renders); ESI's own labels and annotations always win. */
export function desiredSecret(
  es: ExternalSecret,
  source: StoreSource | readonly StoreSource[],
  rendered: { data: Record<string, Uint8Array>; labels: Record<string, string>; annotations: Record<string, string> },
): Desired {
  const sources = [source].flat();
  const store = sources[0]!;
  const target = es.spec.target ?? {};
  const template = target.template;
  const policy = target.creationPolicy ?? 'Owner';
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(rendered.data)) data[k] = Buffer.from(v).toString('base64');
  const type = template?.type ?? 'Opaque';
  const meta = userMetadata(es, rendered);
  const annotations: Record<string, string> = {
    ...meta.annotations,
    [EXTERNAL_SECRET_ANNOTATION]: es.metadata.name!,
    [SOURCE_STORE_ANNOTATION]: sources.map((x) => `${x.kind}/${x.name}`).join(','),
    [DATA_HASH_ANNOTATION]: contentHash(type, data),
  };
  if (policy === 'Merge') annotations[MERGED_KEYS_ANNOTATION] = Object.keys(data).sort().join(',');
  const finalizers = [...new Set(template?.metadata?.finalizers ?? [])];
  // Recorded so that what a later spec drops is removed (only what ESI put there). The
  // finalizers field appears only when there are some: the records of Secrets written
  // before it stay byte-identical (no rewrite on upgrade).
  const record = { labels: Object.keys(meta.labels).sort(), annotations: Object.keys(meta.annotations).sort(), ...(finalizers.length ? { finalizers: [...finalizers].sort() } : {}) };
  if (record.labels.length || record.annotations.length || finalizers.length) annotations[METADATA_KEYS_ANNOTATION] = JSON.stringify(record);
  const desired: Desired = {
    name: target.name ?? es.metadata.name!,
    namespace: es.metadata.namespace!,
    type, data, annotations, policy, finalizers,
    labels: {
      ...meta.labels,
      [MANAGED_LABEL]: 'true',
      [STORE_KIND_LABEL]: store.kind,
      [STORE_LABEL]: labelValue(store.name),
    },
    immutable: target.immutable === true,
  };
  if (policy === 'Owner') {
    desired.ownerReference = {
      apiVersion: EXTERNAL_SECRET_API_VERSION, kind: KIND_EXTERNAL_SECRET, name: es.metadata.name!, uid: es.metadata.uid!, controller: true, blockOwnerDeletion: true,
    };
  }
  return desired;
}

export type Plan =
  | { action: 'none' }
  | { action: 'create'; body: V1Secret }
  | { action: 'replace'; body: V1Secret; adopted?: string }
  | { action: 'recreate'; body: V1Secret; adopted?: string }
  | { action: 'refuse'; reason: string; message: string };

/** Whether another ExternalSecret claims `secret`: its controller ownerReference, or the
 *  annotation naming an ExternalSecret that still exists (`esExists`). */
function claimedByOther(secret: V1Secret, es: ExternalSecret, esExists: (name: string) => boolean): string | undefined {
  const ctl = secret.metadata?.ownerReferences?.find((o) => o.controller && o.kind === 'ExternalSecret');
  if (ctl && ctl.uid !== es.metadata.uid) return `ExternalSecret "${ctl.name}"`;
  const annotated = secret.metadata?.annotations?.[EXTERNAL_SECRET_ANNOTATION];
  if (annotated && annotated !== es.metadata.name && esExists(annotated)) return `ExternalSecret "${annotated}"`;
  return undefined;
}

/** Why ESI may take over `secret`, a Secret it does not manage, for `es`; undefined = it may
 *  not. Its writer allows it in one of two ways: the Secret's controller ownerReference is
 *  this very ExternalSecret (what ESO leaves when the ExternalSecret moves from ESO to ESI),
 *  or the Secret carries `esi.dev/adopt: <this ExternalSecret's name>`. */
function adoptedBy(secret: V1Secret, es: ExternalSecret): string | undefined {
  const ctl = secret.metadata?.ownerReferences?.find((o) => o.controller);
  if (ctl && ctl.kind === KIND_EXTERNAL_SECRET && ctl.uid === es.metadata.uid) return 'its controller ownerReference is this ExternalSecret';
  if (secret.metadata?.annotations?.[ADOPT_ANNOTATION] === es.metadata.name) return `it carries ${ADOPT_ANNOTATION}: ${es.metadata.name}`;
  return undefined;
}

type MetadataKeys = { labels: string[]; annotations: string[]; finalizers: string[] };

/** The user labels, annotations and finalizers an earlier write recorded on `cur`. */
function recordedMetadata(cur: V1Secret | undefined): MetadataKeys {
  const raw = cur?.metadata?.annotations?.[METADATA_KEYS_ANNOTATION];
  let rec: { labels?: unknown; annotations?: unknown; finalizers?: unknown } = {};
  try {
    rec = raw ? (JSON.parse(raw) as typeof rec) : {};
  } catch {
    // A hand-edited record: nothing recorded.
  }
  const keys = (v: unknown) => (Array.isArray(v) ? v.filter((k): k is string => typeof k === 'string') : []);
  return { labels: keys(rec.labels), annotations: keys(rec.annotations), finalizers: keys(rec.finalizers) };
}

/** Keys of `cur` an earlier write recorded that `d` no longer wants, and the record itself
 *  when `d` has none. */
function staleMetadata(d: Desired, cur: V1Secret | undefined): MetadataKeys {
  if (!cur?.metadata?.annotations?.[METADATA_KEYS_ANNOTATION]) return { labels: [], annotations: [], finalizers: [] };
  const rec = recordedMetadata(cur);
  const annotations = rec.annotations.filter((k) => !(k in d.annotations));
  if (!(METADATA_KEYS_ANNOTATION in d.annotations)) annotations.push(METADATA_KEYS_ANNOTATION);
  return { labels: rec.labels.filter((k) => !(k in d.labels)), annotations, finalizers: rec.finalizers.filter((f) => !d.finalizers.includes(f)) };
}

/** The Secret's finalizers once `d` is applied: others' kept, stale ones of ESI's removed. */
function finalizersFor(d: Desired, cur: V1Secret | undefined): string[] {
  const stale = staleMetadata(d, cur).finalizers;
  const kept = (cur?.metadata?.finalizers ?? []).filter((f) => !stale.includes(f));
  return [...kept, ...d.finalizers.filter((f) => !kept.includes(f))];
}

/** Keys an earlier Merge write recorded on `cur` that `d` no longer has: ESI removes them,
 *  as ESO drops the keys its field manager owns before writing the new ones (so a key of a
 *  remote secret that is gone, or that a template no longer renders, does not linger). */
function staleMergedKeys(d: Desired, cur: V1Secret | undefined): string[] {
  const recorded = cur?.metadata?.annotations?.[MERGED_KEYS_ANNOTATION] ?? '';
  return recorded.split(',').filter((k) => k && !(k in d.data));
}

const without = (m: Record<string, string>, keys: string[]) => {
  const out = { ...m };
  for (const k of keys) delete out[k];
  return out;
};

function metadataMatches(d: Desired, cur: V1Secret): boolean {
  const a = cur.metadata?.annotations ?? {};
  const l = cur.metadata?.labels ?? {};
  if ((cur.type ?? 'Opaque') !== d.type || !!cur.immutable !== d.immutable) return false;
  const stale = staleMetadata(d, cur);
  if (stale.labels.some((k) => k in l) || stale.annotations.some((k) => k in a)) return false;
  const fins = cur.metadata?.finalizers ?? [];
  if (stale.finalizers.some((f) => fins.includes(f)) || d.finalizers.some((f) => !fins.includes(f))) return false;
  if (Object.entries(d.labels).some(([k, v]) => l[k] !== v)) return false;
  if (Object.entries(d.annotations).some(([k, v]) => a[k] !== v)) return false;
  return !d.ownerReference || !!cur.metadata?.ownerReferences?.some((o) => o.uid === d.ownerReference!.uid && o.controller);
}

/** Does the Secret in the cluster hold exactly what `d` wants (values and metadata)? `cur`
 *  may be the cache's copy without data (../runtime/cached-secret.ts): its hash answers. */
export function matches(d: Desired, cur: V1Secret): boolean {
  if (!metadataMatches(d, cur)) return false;
  // The policies but Merge own every key.
  if (d.policy !== 'Merge') return holdsData(cur, d.data);
  // Merge keeps the Secret's other keys (a Merge target is cached with its data).
  const data = cur.data ?? {};
  if (Object.entries(d.data).some(([k, v]) => data[k] !== v)) return false;
  return !staleMergedKeys(d, cur).some((k) => k in data);
}

function body(d: Desired, base?: V1Secret): V1Secret {
  const meta = base?.metadata ?? {};
  const stale = staleMetadata(d, base);
  const finalizers = finalizersFor(d, base);
  const own = d.ownerReference
    ? [...(meta.ownerReferences ?? []).filter((o) => o.uid !== d.ownerReference!.uid), d.ownerReference]
    : meta.ownerReferences;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: d.name, namespace: d.namespace,
      ...(meta.resourceVersion ? { resourceVersion: meta.resourceVersion } : {}),
      labels: { ...without(meta.labels ?? {}, stale.labels), ...d.labels },
      annotations: { ...without(meta.annotations ?? {}, stale.annotations), ...d.annotations },
      ...(own?.length ? { ownerReferences: own } : {}),
      // A replace without the field would drop the finalizers others set: always sent.
      ...(finalizers.length ? { finalizers } : {}),
    },
    type: d.type,
    data: d.policy === 'Merge' ? { ...without(base?.data ?? {}, staleMergedKeys(d, base)), ...d.data } : d.data,
    ...(d.immutable ? { immutable: true } : {}),
  };
}

/** `Secret "ns/name"` (or `ConfigMap "ns/name"`), as messages name the target. */
const describeTarget = (d: Desired) => `${d.kind ?? 'Secret'} "${d.namespace}/${d.name}"`;

/** What to do about the target Secret. `cur` is the Secret in the cluster, if any. */
export function planSecret(d: Desired, es: ExternalSecret, cur: V1Secret | undefined, esExists: (name: string) => boolean): Plan {
  const target = describeTarget(d);
  if (d.policy === 'None') return { action: 'none' };
  if (!cur) {
    if (d.policy === 'Merge') {
      return { action: 'refuse', reason: 'SecretMissing', message: `${target} does not exist; creationPolicy Merge only merges into an existing Secret` };
    }
    return { action: 'create', body: body(d) };
  }
  const other = claimedByOther(cur, es, esExists);
  if (other) {
    return { action: 'refuse', reason: 'SecretConflict', message: `${target} is owned by ${other}; ESI does not take it over (use another spec.target.name)` };
  }
  const managed = cur.metadata?.labels?.[MANAGED_LABEL] === 'true';
  const adopted = !managed && d.policy !== 'Merge' ? adoptedBy(cur, es) : undefined;
  if (!managed && d.policy !== 'Merge' && !adopted) {
    return {
      action: 'refuse', reason: 'SecretConflict',
      message: `${target} exists and is not managed by ESI; delete it, choose another spec.target.name, use creationPolicy Merge, or annotate it ${ADOPT_ANNOTATION}=${es.metadata.name} to let this ExternalSecret take it over`,
    };
  }
  if (matches(d, cur)) return { action: 'none' };
  const typeChanged = (cur.type ?? 'Opaque') !== d.type;
  if (cur.immutable || typeChanged) {
    if (d.policy === 'Owner') return { action: 'recreate', body: body(d), ...(adopted ? { adopted } : {}) };
    const why = cur.immutable ? 'is immutable' : `has type "${cur.type}" (wanted "${d.type}"; a Secret's type cannot change)`;
    return { action: 'refuse', reason: 'SecretImmutable', message: `${target} ${why}; delete it so ESI can write it again` };
  }
  return { action: 'replace', body: body(d, cur), ...(adopted ? { adopted } : {}) };
}
