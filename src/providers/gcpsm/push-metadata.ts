// PushSecret metadata for the `gcpsm` provider (SDK-free; meta.ts exports the check):
// ESO's `labels` and `annotations` of the secret (`mergePolicy: Replace`, the default,
// makes them exactly these plus the managed-by label; `Merge` adds them to the secret's
// own), and `replicationLocation` / `cmekKeyName` (user-managed replication in that
// location, the customer-managed KMS key): replication is immutable, so those two apply
// when ESI creates the secret.
import { metadataChecker, oneOf, stringMap, text } from '../push-metadata.js';

export interface GcpsmPushMetadata {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  mergePolicy?: 'Replace' | 'Merge';
  replicationLocation?: string;
  cmekKeyName?: string;
}

export const validatePushMetadata = metadataChecker('gcpsm', {
  labels: stringMap,
  annotations: stringMap,
  mergePolicy: oneOf('Replace', 'Merge'),
  replicationLocation: text,
  cmekKeyName: text,
}, { topics: 'Pub/Sub notifications are not configured by ESI' });

/** Labels or annotations as `md` wants them on a secret that has `have`; undefined = leave as is. */
export function wantedMap(have: Record<string, string> | null | undefined, want: Record<string, string> | undefined, merge: boolean, always: Record<string, string> = {}): Record<string, string> | undefined {
  if (!want) return undefined;
  return { ...(merge ? (have ?? {}) : {}), ...want, ...always };
}

/** Whether two string maps hold the same entries. */
export function sameMap(a: Record<string, string> | null | undefined, b: Record<string, string>): boolean {
  const x = a ?? {};
  return Object.keys(x).length === Object.keys(b).length && Object.entries(b).every(([k, v]) => x[k] === v);
}
