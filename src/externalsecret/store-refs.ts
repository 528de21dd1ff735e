// Which stores one ExternalSecret reads from (ESO's per-entry `sourceRef.storeRef`): `spec.secretStoreRef`, the default of every entry without a sourceRef, and each
// entry's own `sourceRef.storeRef`. Pure, shared by the spec checks (src/externalsecret/
// checks.ts) and the reconciler, which looks every one of them up and applies the access
// rules to each (src/controller/externalsecret/spec.ts).
import type { ExternalSecretSpec, SecretStoreRef } from '../api/types.js';
import { storeKindOf } from '../stores/use.js';
import type { StoreKind } from '../stores/id.js';

/** One store an ExternalSecret uses, with the first field naming it (for messages). */
export interface UsedStoreRef {
  kind: StoreKind;
  name: string;
  field: string;
}

/** The entries' own store, or undefined when the entry uses the default (or a generator). */
function entryStore(ref: SecretStoreRef | undefined): SecretStoreRef | undefined {
  return ref?.name ? ref : undefined;
}

/** The distinct stores `spec` reads from, in order of first use: `spec.secretStoreRef` (as
 *  ESO, whenever it is set), then each `dataFrom` and `data` entry's `sourceRef.storeRef`. */
export function storeRefsOf(spec: ExternalSecretSpec): UsedStoreRef[] {
  const out: UsedStoreRef[] = [];
  const add = (ref: SecretStoreRef, field: string) => {
    const kind = storeKindOf(ref);
    if (!out.some((r) => r.kind === kind && r.name === ref.name)) out.push({ kind, name: ref.name, field });
  };
  if (spec.secretStoreRef?.name) add(spec.secretStoreRef, 'spec.secretStoreRef');
  (spec.dataFrom ?? []).forEach((f, i) => {
    const ref = entryStore(f.sourceRef?.storeRef);
    if (ref) add(ref, `spec.dataFrom[${i}].sourceRef.storeRef`);
  });
  (spec.data ?? []).forEach((d, i) => {
    const ref = entryStore(d.sourceRef?.storeRef);
    if (ref) add(ref, `spec.data[${i}].sourceRef.storeRef`);
  });
  return out;
}
