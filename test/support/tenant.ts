// A tenant as the threat model of the reconciler has it (SECURITY.md, "The controller"):
// every right in its own namespace (ExternalSecrets, PushSecrets, SecretStores, Secrets,
// ConfigMaps, status included) and none elsewhere. Adversarial tests create the tenant's
// objects through this client, never the admin's, so a test also proves the apiserver let a
// tenant write what the test writes.
import { CoreV1Api, CustomObjectsApi, RbacAuthorizationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { createNamespace, kubeConfigForToken, serviceAccountToken } from './kube.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface Tenant {
  namespace: string;
  /** Authenticates as the tenant's ServiceAccount `tenant` (a bound token, one hour). */
  kc: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
}

/** A fresh namespace `prefix-xxxxxx` with a ServiceAccount that may do anything inside it. */
export async function createTenant(admin: KubeConfig, prefix: string, t?: Teardown, labels?: Record<string, string>): Promise<Tenant> {
  const namespace = await createNamespace(admin, prefix, t, labels);
  const core = admin.makeApiClient(CoreV1Api);
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'tenant' } } });
  await rbac.createNamespacedRole({
    namespace,
    body: { metadata: { name: 'tenant-admin' }, rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['*'] }] },
  });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: 'tenant-admin' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'tenant-admin' },
      subjects: [{ kind: 'ServiceAccount', name: 'tenant', namespace }],
    },
  });
  const kc = kubeConfigForToken(admin, await serviceAccountToken(admin, namespace, 'tenant'));
  return { namespace, kc, core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi) };
}
