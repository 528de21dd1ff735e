// Store access rules, shared by the webhook (at admission) and the reconciler:
// which namespaces may use a ClusterSecretStore, which controller class serves a store,
// and — asked of the store's provider, which alone knows its spec — which credentials a
// store references, whether it needs the workload's identity, and whether its spec is valid.
import type { V1LabelSelector, V1Namespace } from '@kubernetes/client-node';
import type { AnySecretStore, SecretStoreProvider } from '../api/types.js';
import { storeProvider } from '../providers/registry.js';
import type { StoreReferences } from '../providers/types.js';

/** Does `labels` satisfy the Kubernetes label selector? (matchLabels AND matchExpressions) */
export function matchesLabelSelector(selector: V1LabelSelector, labels: Record<string, string> = {}): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const value = labels[e.key];
    const values = e.values ?? [];
    const ok =
      e.operator === 'In' ? has && values.includes(value!) :
      e.operator === 'NotIn' ? !has || !values.includes(value!) :
      e.operator === 'Exists' ? has :
      e.operator === 'DoesNotExist' ? !has : false;
    if (!ok) return false;
  }
  return true;
}

/** Whether a ClusterSecretStore may be used from `ns`: no conditions, or any one matches. */
export function clusterStoreAdmits(store: AnySecretStore, ns: V1Namespace): { ok: boolean; why?: string } {
  const conditions = store.spec.conditions ?? [];
  if (store.kind !== 'ClusterSecretStore' || conditions.length === 0) return { ok: true };
  const name = ns.metadata?.name ?? '';
  for (const c of conditions) {
    if (c.namespaces?.includes(name)) return { ok: true };
    if (c.namespaceRegexes?.some((re) => safeRegex(re)?.test(name))) return { ok: true };
    if (c.namespaceSelector && matchesLabelSelector(c.namespaceSelector, ns.metadata?.labels)) return { ok: true };
  }
  return { ok: false, why: `its spec.conditions do not admit namespace "${name}"` };
}

function safeRegex(source: string): RegExp | undefined {
  try {
    return new RegExp(`^(?:${source})$`);
  } catch {
    return undefined;
  }
}

/** Whether this ESI instance serves the store's `spec.controller` class.
 *  `classes` undefined = any class; '' in the list = unclassed stores. */
export function servesControllerClass(store: AnySecretStore, classes: string[] | undefined): boolean {
  if (!classes) return true;
  return classes.includes(store.spec.controller ?? '');
}

export type { CredentialRef, ServiceAccountRef, StoreReferences } from '../providers/types.js';

/** Every Secret/ConfigMap key and ServiceAccount the store's provider spec references,
 *  as that provider declares them (its meta's `references`). None for an unknown provider. */
export function referencedObjects(provider: SecretStoreProvider): StoreReferences {
  const found = storeProvider(provider);
  return 'problem' in found ? { credentials: [], serviceAccounts: [] } : found.meta.references(found.spec);
}

/** Whether the store authenticates with the workload's own service-account token, and
 *  with which audience (undefined audience = the webhook's configured default): a
 *  referenced ServiceAccount, or the provider's ambient identity for this spec. */
export function podIdentity(provider: SecretStoreProvider): { needed: boolean; audience?: string } {
  const found = storeProvider(provider);
  if ('problem' in found) return { needed: false };
  const { serviceAccounts } = found.meta.references(found.spec);
  const identity = found.meta.identity;
  const fromRef = serviceAccounts.find((s) => s.audiences?.length)?.audiences?.[0];
  const needed = serviceAccounts.length > 0 || (identity?.ambient(found.spec) ?? false);
  return { needed, audience: fromRef ?? identity?.audience(found.spec) };
}

/** Problems of the store's provider spec by the provider's own rules (the webhook denies
 *  at admission with them; the reconciler reports them in the store's status). */
export function storeSpecProblems(provider: SecretStoreProvider): string[] {
  const found = storeProvider(provider);
  if ('problem' in found) return [found.problem];
  // Providers name their fields from their own key (`<provider>.auth...`).
  return found.meta.validateSpec(found.spec).map((p) => `spec.provider.${p}`);
}

/** The provider's admission warning for this store, if it has one. */
export function admissionWarning(provider: SecretStoreProvider): string | undefined {
  const found = storeProvider(provider);
  return 'problem' in found ? undefined : found.meta.admissionWarning;
}

/** The credential and ServiceAccount references of a store that point outside `namespace`
 *  (the namespace the store is used from). ESI reads credentials and requests tokens only
 *  there, so each reference is a problem naming its spec path and the fix. */
export function crossNamespaceRefs(provider: SecretStoreProvider, namespace: string): string[] {
  const { credentials, serviceAccounts } = referencedObjects(provider);
  const problems: string[] = [];
  for (const c of credentials) {
    if (c.namespace && c.namespace !== namespace) {
      problems.push(`${c.path} references ${c.kind} "${c.namespace}/${c.name}" in another namespace; ESI reads store credentials only from namespace "${namespace}"`);
    }
  }
  for (const sa of serviceAccounts) {
    if (sa.namespace && sa.namespace !== namespace) {
      problems.push(`${sa.path} names ServiceAccount "${sa.namespace}/${sa.name}" in another namespace; ESI requests tokens only for ServiceAccounts in namespace "${namespace}"`);
    }
  }
  return problems;
}

/** Whether a store's client depends on the namespace it is used from (it reads credentials
 *  or requests tokens there): such a ClusterSecretStore needs one client per namespace. */
export function namespaceScoped(provider: SecretStoreProvider): boolean {
  const { credentials, serviceAccounts } = referencedObjects(provider);
  return credentials.length > 0 || serviceAccounts.length > 0;
}
