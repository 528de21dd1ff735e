// What ESI knows about the `azurekv` provider without loading the Azure SDK.
import { fieldReferences } from '../fields.js';
import { field } from '../refs.js';
import { capabilities } from '../define.js';
import type { ProviderMeta } from '../types.js';
import { validatePushMetadata } from './push-metadata.js';
import { FIELDS, validateSpec, WORKLOAD_IDENTITY_AUDIENCE } from './spec.js';

export const meta: ProviderMeta = {
  name: 'azurekv',
  // Secret names are flat (no find by path); a pushed property is one key of the JSON value.
  capabilities: capabilities(['name', 'tags'], { versions: true, pushProperty: 'key', ownershipMark: true }),
  validateSpec,
  validatePushMetadata,
  references: (spec) => fieldReferences('azurekv', FIELDS, spec),
  identity: {
    ambient: (spec) => (spec as { authType?: unknown } | null)?.authType === 'WorkloadIdentity',
    audience: () => WORKLOAD_IDENTITY_AUDIENCE,
  },
  ambientIdentity: (spec) => {
    const authType = (spec as { authType?: unknown } | null)?.authType;
    // ManagedIdentity asks IMDS (or App Service's endpoint) for the identity of whatever
    // runs the client (src/providers/azurekv/auth.ts): no field of the store names it.
    if (authType === 'ManagedIdentity') return { field: 'azurekv.authType', source: 'the managed identity of the environment the client runs in (IMDS)', kind: 'environment' };
    if (authType === 'WorkloadIdentity' && field(spec, 'serviceAccountRef') === undefined) {
      return { field: 'azurekv.serviceAccountRef', source: 'the service-account token of the process running the client', kind: 'token' };
    }
    return undefined;
  },
};
