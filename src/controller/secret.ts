// The target Secret of an ExternalSecret: what it should contain (desired), whether the
// Secret in the cluster already matches (no write), and who owns it. Pure functions:
// reconcile-es.ts does the I/O. Ownership rules (docs/controller.md):
//  - Owner: ESI creates the Secret with a controller ownerReference to the ExternalSecret;
//  - Orphan: ESI creates and updates it, without ownerReference;
//  - Merge: the Secret must exist; ESI merges its keys into it and records which;
//  - None: no Secret is written.
// A Secret written by another ExternalSecret (ownerReference or annotation) or one that
// ESI does not manage is never taken over.
import type { V1OwnerReference, V1Secret } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { EXTERNAL_SECRET_API_VERSION, KIND_EXTERNAL_SECRET, type CreationPolicy, type ExternalSecret } from '../api/types.js';
import {
  DATA_HASH_ANNOTATION,
  EXTERNAL_SECRET_ANNOTATION,
  MANAGED_LABEL,
  MERGED_KEYS_ANNOTATION,
  SOURCE_STORE_ANNOTATION,
  STORE_KIND_LABEL,
  STORE_LABEL,
  labelValue,
} from './labels.js';

export interface Desired {
  name: string;
  namespace: string;
  type: string;
  /** key → base64, as the API stores it. */
  data: Record<string, string>;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  immutable: boolean;
  ownerReference?: V1OwnerReference;
  policy: CreationPolicy;
}

/** Hash of the managed content: type and the given keys' values (all keys by default). */
export function contentHash(type: string, data: Record<string, string>, keys = Object.keys(data)): string {
  const h = createHash('sha256').update(type).update('\0');
  for (const k of [...keys].sort()) h.update(k).update('\0').update(data[k] ?? '').update('\0');
  return h.digest('hex').slice(0, 40);
}

/** The Secret `es` wants: `rendered` is its template's output (data, and the labels and
 *  annotations the template renders); ESI's own labels and annotations always win. */
export function desiredSecret(
  es: ExternalSecret,
  store: { kind: string; name: string },
  rendered: { data: Record<string, Uint8Array>; labels: Record<string, string>; annotations: Record<string, string> },
): Desired {
  const target = es.spec.target ?? {};
  const template = target.template;
  const policy = target.creationPolicy ?? 'Owner';
  const data: Record<string, string> = {};
  for (const [k, v] of Object.entries(rendered.data)) data[k] = Buffer.from(v).toString('base64');
  const type = template?.type ?? 'Opaque';
  const annotations: Record<string, string> = {
    ...rendered.annotations,
    [EXTERNAL_SECRET_ANNOTATION]: es.metadata.name!,
    [SOURCE_STORE_ANNOTATION]: `${store.kind}/${store.name}`,
    [DATA_HASH_ANNOTATION]: contentHash(type, data),
  };
  if (policy === 'Merge') annotations[MERGED_KEYS_ANNOTATION] = Object.keys(data).sort().join(',');
  const desired: Desired = {
    name: target.name ?? es.metadata.name!,
    namespace: es.metadata.namespace!,
    type, data, annotations, policy,
    labels: {
      ...rendered.labels,
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
  | { action: 'replace'; body: V1Secret }
  | { action: 'recreate'; body: V1Secret }
  | { action: 'refuse'; reason: string; message: string };

/** Whether another ExternalSecret claims `secret`: its controller ownerReference, or the
 *  annotation naming an ExternalSecret that still exists (`esExists`). */
export function claimedByOther(secret: V1Secret, es: ExternalSecret, esExists: (name: string) => boolean): string | undefined {
  const ctl = secret.metadata?.ownerReferences?.find((o) => o.controller && o.kind === 'ExternalSecret');
  if (ctl && ctl.uid !== es.metadata.uid) return `ExternalSecret "${ctl.name}"`;
  const annotated = secret.metadata?.annotations?.[EXTERNAL_SECRET_ANNOTATION];
  if (annotated && annotated !== es.metadata.name && esExists(annotated)) return `ExternalSecret "${annotated}"`;
  return undefined;
}

function metadataMatches(d: Desired, cur: V1Secret): boolean {
  const a = cur.metadata?.annotations ?? {};
  const l = cur.metadata?.labels ?? {};
  if ((cur.type ?? 'Opaque') !== d.type || !!cur.immutable !== d.immutable) return false;
  if (Object.entries(d.labels).some(([k, v]) => l[k] !== v)) return false;
  if (Object.entries(d.annotations).some(([k, v]) => a[k] !== v)) return false;
  return !d.ownerReference || !!cur.metadata?.ownerReferences?.some((o) => o.uid === d.ownerReference!.uid && o.controller);
}

/** Does the Secret in the cluster hold exactly what `d` wants (values and metadata)? */
export function matches(d: Desired, cur: V1Secret): boolean {
  if (!metadataMatches(d, cur)) return false;
  const data = cur.data ?? {};
  if (Object.entries(d.data).some(([k, v]) => data[k] !== v)) return false;
  // Merge keeps the Secret's other keys; the other policies own every key.
  return d.policy === 'Merge' || Object.keys(data).length === Object.keys(d.data).length;
}

/** A managed Secret whose content no longer matches its own data-hash was edited by hand. */
export function editedByHand(cur: V1Secret): boolean {
  const a = cur.metadata?.annotations ?? {};
  const hash = a[DATA_HASH_ANNOTATION];
  if (!hash) return false;
  const merged = a[MERGED_KEYS_ANNOTATION];
  const keys = merged !== undefined ? merged.split(',').filter(Boolean) : undefined;
  return contentHash(cur.type ?? 'Opaque', cur.data ?? {}, keys) !== hash;
}

function body(d: Desired, base?: V1Secret): V1Secret {
  const meta = base?.metadata ?? {};
  const own = d.ownerReference
    ? [...(meta.ownerReferences ?? []).filter((o) => o.uid !== d.ownerReference!.uid), d.ownerReference]
    : meta.ownerReferences;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: d.name, namespace: d.namespace,
      ...(meta.resourceVersion ? { resourceVersion: meta.resourceVersion } : {}),
      labels: { ...(meta.labels ?? {}), ...d.labels },
      annotations: { ...(meta.annotations ?? {}), ...d.annotations },
      ...(own?.length ? { ownerReferences: own } : {}),
    },
    type: d.type,
    data: d.policy === 'Merge' ? { ...(base?.data ?? {}), ...d.data } : d.data,
    ...(d.immutable ? { immutable: true } : {}),
  };
}

/** What to do about the target Secret. `cur` is the Secret in the cluster, if any. */
export function planSecret(d: Desired, es: ExternalSecret, cur: V1Secret | undefined, esExists: (name: string) => boolean): Plan {
  const target = `Secret "${d.namespace}/${d.name}"`;
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
  if (!managed && d.policy !== 'Merge') {
    return {
      action: 'refuse', reason: 'SecretConflict',
      message: `${target} exists and is not managed by ESI; delete it, choose another spec.target.name, or use creationPolicy Merge`,
    };
  }
  if (matches(d, cur)) return { action: 'none' };
  const typeChanged = (cur.type ?? 'Opaque') !== d.type;
  if (cur.immutable || typeChanged) {
    if (d.policy === 'Owner') return { action: 'recreate', body: body(d) };
    const why = cur.immutable ? 'is immutable' : `has type "${cur.type}" (wanted "${d.type}"; a Secret's type cannot change)`;
    return { action: 'refuse', reason: 'SecretImmutable', message: `${target} ${why}; delete it so ESI can write it again` };
  }
  return { action: 'replace', body: body(d, cur) };
}

/** creationPolicy Merge + deletionPolicy Merge: the Secret without the keys ESI merged. */
export function withoutMergedKeys(cur: V1Secret): V1Secret | undefined {
  const a = cur.metadata?.annotations ?? {};
  const keys = (a[MERGED_KEYS_ANNOTATION] ?? '').split(',').filter(Boolean);
  if (!keys.length && !a[DATA_HASH_ANNOTATION]) return undefined;
  const data = { ...(cur.data ?? {}) };
  for (const k of keys) delete data[k];
  const annotations = { ...a };
  for (const k of [DATA_HASH_ANNOTATION, MERGED_KEYS_ANNOTATION, EXTERNAL_SECRET_ANNOTATION, SOURCE_STORE_ANNOTATION]) delete annotations[k];
  const labels = { ...(cur.metadata?.labels ?? {}) };
  for (const k of [MANAGED_LABEL, STORE_KIND_LABEL, STORE_LABEL]) delete labels[k];
  return { ...cur, metadata: { ...cur.metadata, labels, annotations }, data };
}
