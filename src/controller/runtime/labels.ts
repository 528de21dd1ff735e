// The labels and annotations ESI puts on the Secrets it manages (docs/controller.md,
// "Managed Secrets"), all under ESI's prefix: ESO's own keys are ESO's. Other components read them: the
// reconciler watches only Secrets carrying MANAGED_LABEL, and PushSecret refuses to push a
// Secret back to the store named by STORE_KIND_LABEL / STORE_LABEL. DATA_HASH_ANNOTATION holds
// contentHash of what ESI wrote, so any reader can tell a hand edit (editedByHand).
import type { V1Secret } from '@kubernetes/client-node';
import { createHash } from 'node:crypto';

/** `"true"` on every Secret ESI manages; the reconciler's Secret watch selects on it. */
export const MANAGED_LABEL = 'esi.dev/managed';
/** The kind of the store the Secret's values came from: SecretStore | ClusterSecretStore. */
export const STORE_KIND_LABEL = 'esi.dev/store-kind';
/** The name of that store (a label value: names over 63 characters are shortened with a hash;
 *  the exact name is in SOURCE_STORE_ANNOTATION). */
export const STORE_LABEL = 'esi.dev/store';
/** `<Kind>/<name>` of the source store, exact; several comma-separated when entries name
 *  their own stores (`sourceRef.storeRef`): names never hold a comma. */
export const SOURCE_STORE_ANNOTATION = 'esi.dev/source-store';
/** The name of the ExternalSecret writing this Secret (same namespace). */
export const EXTERNAL_SECRET_ANNOTATION = 'esi.dev/external-secret';
/** A hash of the managed content (type and data): unchanged hash = no write. */
export const DATA_HASH_ANNOTATION = 'esi.dev/data-hash';
/** creationPolicy Merge: the keys this ExternalSecret merged into a Secret it does not own. */
export const MERGED_KEYS_ANNOTATION = 'esi.dev/merged-keys';
/** The user labels and annotations (template or ExternalSecret metadata) this ExternalSecret
 *  put on the Secret, as JSON `{"labels":[…],"annotations":[…]}`: keys it no longer wants are
 *  removed, other keys (someone else's) are left alone. */
export const METADATA_KEYS_ANNOTATION = 'esi.dev/metadata-keys';
/** On a Secret ESI does not manage: the name of the ExternalSecret (same namespace) allowed
 *  to take it over. Put there by whoever owns the Secret: writing it needs update rights on
 *  the Secret, so the takeover stays that owner's decision. */
export const ADOPT_ANNOTATION = 'esi.dev/adopt';
/** ESO's convention: a new value of this ExternalSecret annotation forces a refresh. */
export const FORCE_SYNC_ANNOTATION = 'force-sync';

/** A valid label value naming `name` (≤ 63 characters, stable for a given name). */
export function labelValue(name: string): string {
  if (name.length <= 63) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  return `${name.slice(0, 54).replace(/[^A-Za-z0-9]+$/, '')}-${hash}`;
}

/** Hash of the managed content: type and the given keys' values (all keys by default). */
export function contentHash(type: string, data: Record<string, string>, keys = Object.keys(data)): string {
  const h = createHash('sha256').update(type).update('\0');
  for (const k of [...keys].sort()) h.update(k).update('\0').update(data[k] ?? '').update('\0');
  return h.digest('hex').slice(0, 40);
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
