// Store access rules, shared by the webhook (at admission) and the reconciler:
// which namespaces may use a ClusterSecretStore, which controller class serves a store,
// which credentials a store references, and whether it needs the workload's identity.
import type { V1LabelSelector, V1Namespace } from '@kubernetes/client-node';
import type { AnySecretStore, SecretStoreProvider } from '../api/types.js';
import { providerName } from '../api/types.js';

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

export interface CredentialRef {
  /** Where in the provider spec, e.g. `vault.auth.tokenSecretRef`. */
  path: string;
  kind: 'Secret' | 'ConfigMap';
  name: string;
  /** A single key, or undefined for the whole object (grpc tlsSecretRef). */
  key?: string;
  namespace?: string;
}

export interface ServiceAccountRef {
  path: string;
  name: string;
  namespace?: string;
  audiences?: string[];
}

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Every Secret/ConfigMap key and ServiceAccount the provider spec references. Walks the
 *  spec generically so a new provider's `*SecretRef` fields are covered without code. */
export function referencedObjects(provider: SecretStoreProvider): { credentials: CredentialRef[]; serviceAccounts: ServiceAccountRef[] } {
  const credentials: CredentialRef[] = [];
  const serviceAccounts: ServiceAccountRef[] = [];
  // `audiences` may sit beside a serviceAccountRef (vault jwt.kubernetesServiceAccountToken).
  const walk = (node: unknown, path: string, field: string, audiences?: string[]) => {
    if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${path}[${i}]`, field));
    if (!isObject(node)) return;
    const name = typeof node.name === 'string' ? node.name : undefined;
    const namespace = typeof node.namespace === 'string' ? node.namespace : undefined;
    if (name && /^serviceAccount(Ref)?$/.test(field)) {
      serviceAccounts.push({ path, name, namespace, audiences: (node.audiences as string[] | undefined) ?? audiences });
      return;
    }
    if (name && field === 'caProvider') {
      credentials.push({ path, kind: node.type === 'ConfigMap' ? 'ConfigMap' : 'Secret', name, key: node.key as string | undefined, namespace });
      return;
    }
    if (name && field === 'tlsSecretRef') {
      credentials.push({ path, kind: 'Secret', name, namespace });
      return;
    }
    if (name && typeof node.key === 'string') {
      credentials.push({ path, kind: 'Secret', name, key: node.key, namespace });
      return;
    }
    const inherited = Array.isArray(node.audiences) ? (node.audiences as string[]) : undefined;
    for (const [k, v] of Object.entries(node)) walk(v, path ? `${path}.${k}` : k, k, inherited);
  };
  walk(provider, '', '');
  return { credentials, serviceAccounts };
}

/** Default token audience of each provider's web-identity flow, when the store names none. */
const DEFAULT_AUDIENCE: Partial<Record<string, string>> = {
  // '' = no audience: the token is for the Kubernetes API itself.
  kubernetes: '',
  aws: 'sts.amazonaws.com',
  azurekv: 'api://AzureADTokenExchange',
};

type Spec = Record<string, unknown>;

/** Audiences that depend on the spec: GKE workload identity wants `<project>.svc.id.goog`. */
function specAudience(name: string, p: Spec): string | undefined {
  if (name !== 'gcpsm') return undefined;
  const wi = isObject(p.auth) && isObject(p.auth.workloadIdentity) ? p.auth.workloadIdentity : undefined;
  const project = (wi?.clusterProjectID ?? p.projectID) as string | undefined;
  return wi && project ? `${project}.svc.id.goog` : undefined;
}
const auth = (p: Spec): Spec | undefined => (isObject(p.auth) ? p.auth : undefined);

/** Per provider: does a spec without a referenced ServiceAccount still use the ambient
 *  pod identity? (e.g. Vault kubernetes auth without a secretRef, AWS without keys) */
const AMBIENT_IDENTITY: Partial<Record<string, (p: Spec) => boolean>> = {
  vault: (p) => isObject(auth(p)?.kubernetes) && !isObject((auth(p)!.kubernetes as Spec).secretRef),
  aws: (p) => !auth(p) || isObject(auth(p)!.jwt),
  azurekv: (p) => p.authType === 'WorkloadIdentity',
  gcpsm: (p) => !auth(p) || isObject(auth(p)!.workloadIdentity),
  kubernetes: (p) => !auth(p) || isObject(auth(p)!.serviceAccount),
};

/** Whether the store authenticates with the workload's own service-account token, and
 *  with which audience (undefined audience = the webhook's configured default). */
export function podIdentity(provider: SecretStoreProvider): { needed: boolean; audience?: string } {
  const name = providerName(provider);
  if (!name) return { needed: false };
  const { serviceAccounts } = referencedObjects(provider);
  const fromRef = serviceAccounts.find((s) => s.audiences?.length)?.audiences?.[0];
  const spec = ((provider as Record<string, Spec | undefined>)[name]) ?? {};
  const needed = serviceAccounts.length > 0 || (AMBIENT_IDENTITY[name]?.(spec) ?? false);
  return { needed, audience: fromRef ?? specAudience(name, spec) ?? DEFAULT_AUDIENCE[name] };
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
