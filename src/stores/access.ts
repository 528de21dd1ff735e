// Store access rules, shared by the webhook (at admission) and the reconciler:
// which namespaces may use a ClusterSecretStore, which controller class serves a store,
// and — asked of the store's provider, which alone knows its spec — which credentials a
// store references, whether it needs the workload's identity, and whether its spec is valid.
import type { V1LabelSelector, V1Namespace } from '@kubernetes/client-node';
import type { AnySecretStore, SecretStoreProvider } from '../api/types.js';
import { compileGoRegexp } from '../providers/regexp.js';
import { storeProvider } from '../providers/registry.js';
import type { AmbientIdentity, StoreReferences } from '../providers/types.js';

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
    if (c.namespaceRegexes?.some((re) => wholeMatch(re, name))) return { ok: true };
    if (c.namespaceSelector && matchesLabelSelector(c.namespaceSelector, ns.metadata?.labels)) return { ok: true };
  }
  return { ok: false, why: `its spec.conditions do not admit namespace "${name}"` };
}

/** Each entry is its own RE2 pattern matched against the whole name (never spliced into
 *  a bigger pattern); an invalid entry admits nothing. */
function wholeMatch(source: string, name: string): boolean {
  try {
    return compileGoRegexp(source).matchesWhole(name);
  } catch {
    return false;
  }
}

/** Whether this ESI instance serves the store's `spec.controller` class.
 *  `classes` undefined = any class; '' in the list = unclassed stores. */
export function servesControllerClass(store: AnySecretStore, classes: string[] | undefined): boolean {
  if (!classes) return true;
  return classes.includes(store.spec.controller ?? '');
}

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

/** Whether a store's client depends on the namespace it is used from (it reads credentials
 *  or requests tokens there): such a ClusterSecretStore needs one client per namespace. */
export function namespaceScoped(provider: SecretStoreProvider): boolean {
  const { credentials, serviceAccounts } = referencedObjects(provider);
  return credentials.length > 0 || serviceAccounts.length > 0;
}

/** The identity the store's spec authenticates with without naming it, as its provider
 *  declares it (its meta's `ambientIdentity`). None for an unknown provider. */
export function ambientIdentity(provider: SecretStoreProvider): AmbientIdentity | undefined {
  const found = storeProvider(provider);
  return 'problem' in found ? undefined : found.meta.ambientIdentity?.(found.spec);
}

/** The reconciler's flag that lends its own ambient identity to ClusterSecretStores. */
const AMBIENT_IDENTITY_FLAG = '--allow-ambient-identity';

/** To whom the operator lends the controller's own identity: ClusterSecretStores
 *  (AMBIENT_IDENTITY_FLAG), and SecretStores of the namespaces it names
 *  (--allow-ambient-identity-namespaces: whoever writes a SecretStore there acts as the
 *  controller towards its stores). */
export interface IdentityLending {
  clusterStores: boolean;
  namespaces?: readonly string[];
}

export function lendsIdentity(store: AnySecretStore, lending: IdentityLending): boolean {
  if (store.kind === 'ClusterSecretStore') return lending.clusterStores;
  return lending.namespaces?.includes(store.metadata.namespace ?? '') ?? false;
}

/** Why the reconciler may not build a client for `store`, or undefined: a store the
 *  controller uses authenticates only with what it names (secret refs, a ServiceAccount
 *  in the namespace it is used from), never with the controller's own identity; the
 *  operator may lend the controller's environment identity to ClusterSecretStores with
 *  AMBIENT_IDENTITY_FLAG (docs/controller.md, "Identity").
 *  The agent is not bound by this: there the ambient identity is the pod's own. */
export function controllerIdentityProblem(store: AnySecretStore, lending: boolean | IdentityLending): string | undefined {
  const ambient = ambientIdentity(store.spec.provider);
  if (!ambient) return undefined;
  const at = `spec.provider.${ambient.field}`;
  if (lendsIdentity(store, typeof lending === 'boolean' ? { clusterStores: lending } : lending)) return undefined;
  if (ambient.kind === 'token') {
    const lend = store.kind === 'ClusterSecretStore'
      ? `the operator may lend the controller's own ServiceAccount token to ClusterSecretStores with ${AMBIENT_IDENTITY_FLAG} (chart: controller.allowAmbientIdentity)`
      : 'the controller lends its own to no SecretStore';
    return `${at}: the store names no ServiceAccount, so it would authenticate with ${ambient.source}; ${lend}; ` +
      'or name a ServiceAccount in the store (the controller requests its tokens in the namespace the store is used from) or use a secret ref';
  }
  const fix = store.kind === 'ClusterSecretStore'
    ? `the operator may allow it for ClusterSecretStores with ${AMBIENT_IDENTITY_FLAG} (chart: controller.allowAmbientIdentity)`
    : `the controller lends it to no SecretStore (only to ClusterSecretStores, with ${AMBIENT_IDENTITY_FLAG}); use credentials the store names`;
  return `${at} selects ${ambient.source}, which is the controller's own identity: ${fix}`;
}
