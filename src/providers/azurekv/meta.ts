// What ESI knows about the `azurekv` provider without loading the Azure SDK.
import { References } from '../refs.js';
import type { ProviderMeta } from '../types.js';
import { validateSpec, WORKLOAD_IDENTITY_AUDIENCE } from './spec.js';

export const meta: ProviderMeta = {
  name: 'azurekv',
  capabilities: {
    read: true,
    write: true,
    find: { name: true, tags: true, path: false },
    versions: true,
    // A pushed property is one flat key of the JSON object value.
    pushProperty: 'key',
  },
  validateSpec,
  references: (spec) =>
    new References('azurekv', spec)
      .secretKey('authSecretRef.clientId', 'authSecretRef.clientSecret', 'authSecretRef.clientCertificate', 'authSecretRef.tenantId')
      .serviceAccount('serviceAccountRef'),
  identity: {
    ambient: (spec) => (spec as { authType?: unknown } | null)?.authType === 'WorkloadIdentity',
    audience: () => WORKLOAD_IDENTITY_AUDIENCE,
  },
};
