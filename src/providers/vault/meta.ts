// What ESI knows about the `vault` provider without loading its client.
import { field, References } from '../refs.js';
import type { ProviderMeta } from '../types.js';
import { validateSpec } from './spec.js';

export const meta: ProviderMeta = {
  name: 'vault',
  capabilities: {
    read: true,
    write: true,
    // Tags are KV v2 custom_metadata; a KV v1 store reports find-by-tags as Unsupported.
    find: { name: true, tags: true, path: true },
    versions: true,
    // A pushed property is one key of the KV data map, as ESO.
    pushProperty: 'key',
  },
  validateSpec,
  references: (spec) =>
    new References('vault', spec)
      .caProvider('caProvider')
      .secretKey(
        'auth.tokenSecretRef', 'auth.appRole.roleRef', 'auth.appRole.secretRef', 'auth.kubernetes.secretRef',
        'auth.jwt.secretRef', 'auth.ldap.secretRef', 'auth.userPass.secretRef', 'auth.cert.clientCert',
        'auth.cert.secretRef', 'tls.certSecretRef', 'tls.keySecretRef',
      )
      .serviceAccount('auth.kubernetes.serviceAccountRef')
      .serviceAccount('auth.jwt.kubernetesServiceAccountToken.serviceAccountRef', 'auth.jwt.kubernetesServiceAccountToken'),
  identity: {
    // Kubernetes auth without a token Secret logs in with the pod's own token.
    ambient: (spec) => field(spec, 'auth.kubernetes') !== undefined && field(spec, 'auth.kubernetes.secretRef') === undefined,
    audience: () => undefined,
  },
};
