// What ESI knows about the `azurekv` provider without loading the Azure SDK.
import { References } from '../refs.js';
import { capabilities } from '../define.js';
import type { ProviderMeta } from '../types.js';
import { validatePushMetadata } from './push-metadata.js';
import { validateSpec, WORKLOAD_IDENTITY_AUDIENCE } from './spec.js';

export const meta: ProviderMeta = {
  name: 'azurekv',
  // Secret names are flat (no find by path); a pushed property is one key of the JSON value.
  capabilities: capabilities(['name', 'tags'], { versions: true, pushProperty: 'key', ownershipMark: true }),
  validateSpec,
  validatePushMetadata,
  references: (spec) =>
    new References('azurekv', spec)
      .secretKey('authSecretRef.clientId', 'authSecretRef.clientSecret', 'authSecretRef.clientCertificate', 'authSecretRef.tenantId')
      .serviceAccount('serviceAccountRef'),
  identity: {
    ambient: (spec) => (spec as { authType?: unknown } | null)?.authType === 'WorkloadIdentity',
    audience: () => WORKLOAD_IDENTITY_AUDIENCE,
  },
};
