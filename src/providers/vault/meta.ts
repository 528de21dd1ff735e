// What ESI knows about the `vault` provider without loading its client.
import { fieldReferences } from '../fields.js';
import { field } from '../refs.js';
import { capabilities } from '../define.js';
import { metadataChecker, stringMap } from '../push-metadata.js';
import type { ProviderMeta } from '../types.js';
import { FIELDS, validateSpec } from './spec.js';

export const meta: ProviderMeta = {
  name: 'vault',
  // Tags are KV v2 custom_metadata (KV v1 reports find-by-tags Unsupported); a pushed
  // property is one key of the KV data map, as ESO.
  // Leases: dynamic secrets at any engine path (src/providers/vault/leases.ts).
  capabilities: { ...capabilities(['name', 'tags', 'path'], { versions: true, pushProperty: 'key', ownershipMark: true }), leases: true },
  validateSpec,
  // Push metadata: KV v2 custom_metadata (the managed-by mark is always added).
  validatePushMetadata: metadataChecker('vault', { customMetadata: stringMap }),
  references: (spec) => fieldReferences('vault', FIELDS, spec),
  identity: {
    // Kubernetes auth without a token Secret logs in with the pod's own token.
    ambient: (spec) => field(spec, 'auth.kubernetes') !== undefined && field(spec, 'auth.kubernetes.secretRef') === undefined,
    audience: () => undefined,
  },
  // jwt auth always names its ServiceAccount (spec.ts); kubernetes auth may name neither.
  ambientIdentity: (spec) => field(spec, 'auth.kubernetes') !== undefined && field(spec, 'auth.kubernetes.secretRef') === undefined &&
    field(spec, 'auth.kubernetes.serviceAccountRef') === undefined
    ? { field: 'vault.auth.kubernetes.serviceAccountRef', source: 'the service-account token of the process running the client (kubernetes auth)', kind: 'token' }
    : undefined,
};
