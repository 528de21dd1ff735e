// What the controller's cache keeps of a Secret it manages (./informers.ts), and how the
// reconciler reads one. A Secret as ESI wrote it (it names its ExternalSecret and its data
// matches ESI's data hash, checked once on receipt) is kept without its data: the hash
// annotation says what the data is, so a comparison with the wanted content needs no value
// (docs/controller.md, "Memory"). A Merge Secret (it carries the merged-keys annotation)
// keeps its data: a write merges into its other keys. Any other labelled Secret keeps no
// data either and is read through the API when a reconcile needs it.
import type { V1Secret } from '@kubernetes/client-node';
import { contentHash, DATA_HASH_ANNOTATION, EXTERNAL_SECRET_ANNOTATION, editedByHand, MERGED_KEYS_ANNOTATION } from './labels.js';

/** Seen on receipt: each object is judged once (a cached object passes through several handlers). */
const judged = new WeakSet<object>();
/** Cached without data, its data verified against its hash on receipt. */
const verified = new WeakSet<object>();
/** Cached without data, not as the controller wrote it. */
const unverified = new WeakSet<object>();

/** Whether a Secret carrying the managed label is one the controller wrote and nobody changed
 *  since: it names its ExternalSecret and its content matches ESI's data hash. Anyone who may
 *  write Secrets can put the label on any Secret; only these are trusted from the cache, so
 *  the cache holds what the controller wrote, not whatever a tenant labels (SECURITY.md, "The
 *  controller"). The others are looked up through the API when a reconcile needs them. */
function asWritten(s: V1Secret): boolean {
  const a = s.metadata?.annotations ?? {};
  return !!a[EXTERNAL_SECRET_ANNOTATION] && !!a[DATA_HASH_ANNOTATION] && !editedByHand(s);
}

function dropData(s: V1Secret): void {
  delete s.data;
  delete s.stringData;
}

/** Judges a received Secret once and drops its data unless a write needs it; returns whether
 *  it is as the controller wrote it (kubectl's last-applied copy is then kept: it is written back). */
export function receiveSecret(s: V1Secret): boolean {
  if (judged.has(s)) return !unverified.has(s);
  judged.add(s);
  const mine = asWritten(s);
  if (!mine) {
    dropData(s);
    unverified.add(s);
  } else if (s.metadata?.annotations?.[MERGED_KEYS_ANNOTATION] === undefined) {
    dropData(s);
    verified.add(s);
  }
  return mine;
}

/** The cached Secret as a reconcile may use it, or undefined when the cache holds only its
 *  metadata (not as the controller wrote it): the caller then reads it from the API. */
export function trusted(s: V1Secret | undefined): V1Secret | undefined {
  return s && !unverified.has(s) ? s : undefined;
}

/** A cached Secret without its data whose data was verified on receipt. */
export const dataElided = (s: V1Secret | undefined): boolean => !!s && verified.has(s);

/** editedByHand for any Secret the reconciler holds: one verified on receipt was not. */
export function handEdited(s: V1Secret): boolean {
  return !verified.has(s) && editedByHand(s);
}

/** Whether `cur` holds exactly `data` (base64 values, every key) under its own type: from its
 *  values, or for a verified Secret without them from its data hash (it covers every key). */
export function holdsData(cur: V1Secret, data: Record<string, string>): boolean {
  if (verified.has(cur)) return cur.metadata?.annotations?.[DATA_HASH_ANNOTATION] === contentHash(cur.type ?? 'Opaque', data);
  const have = cur.data ?? {};
  const keys = Object.keys(data);
  return keys.length === Object.keys(have).length && keys.every((k) => have[k] === data[k]);
}
