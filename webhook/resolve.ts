// Resolution at admission: from the pod's request to the ExternalSecrets and stores the
// agent will use, applying every access rule. Reads only from an ObjectLookup (watch-
// backed caches in the webhook, parsed files in `esi inject`); never does network I/O.
import type { V1Namespace } from '@kubernetes/client-node';
import type { AgentSecret } from '../src/agent-config.js';
import { storeKey } from '../src/agent-config.js';
import type { AnySecretStore, ClusterSecretStore, ExternalSecret, SecretStore, SecretStoreProvider } from '../src/api/types.js';
import { admissionWarning, clusterStoreAdmits, podIdentity, referencedObjects, servesControllerClass, storeSpecProblems, type CredentialRef } from '../src/stores/access.js';
import { selectTemplateEngine, type TemplateEngineChoice } from '../src/templating/eso.js';
import { describeSpecProblem, externalSecretSpecProblems } from '../src/externalsecret/checks.js';
import type { InjectionRequest } from './annotations.js';

export interface ObjectLookup {
  externalSecret(namespace: string, name: string): ExternalSecret | undefined;
  secretStore(namespace: string, name: string): SecretStore | undefined;
  clusterSecretStore(name: string): ClusterSecretStore | undefined;
  namespace(name: string): V1Namespace | undefined;
}

export interface ResolveOptions {
  /** Controller classes this instance serves; undefined = every store. */
  storeClasses?: string[];
}

export interface ResolvedStore {
  key: string;
  kind: AnySecretStore['kind'];
  name: string;
  provider: SecretStoreProvider;
  /** Credential objects to mount into the agent only, all in the pod's namespace. */
  credentials: (CredentialRef & { namespace: string })[];
  /** Set when the store authenticates with the pod's own token. */
  identity?: { audience?: string };
  /** What the provider wants a user to know at admission (e.g. values in the spec). */
  warning?: string;
}

export interface Resolved {
  secrets: AgentSecret[];
  stores: Map<string, ResolvedStore>;
}

export type ResolveResult = { ok: true; resolved: Resolved } | { ok: false; problems: string[] };

interface PodFacts {
  namespace: string;
  serviceAccountName: string;
}

function describe(store: AnySecretStore, ns: string): string {
  return store.kind === 'ClusterSecretStore' ? `ClusterSecretStore "${store.metadata.name}"` : `SecretStore "${ns}/${store.metadata.name}"`;
}

function findStore(es: ExternalSecret, ns: string, lookup: ObjectLookup, problems: string[]): AnySecretStore | undefined {
  const ref = es.spec.secretStoreRef;
  const where = `ExternalSecret "${es.metadata.name}"`;
  if (!ref?.name) {
    problems.push(`${where}: spec.secretStoreRef.name is required by ESI (per-entry sourceRef stores are not supported)`);
    return undefined;
  }
  const kind = ref.kind ?? 'SecretStore';
  const store = kind === 'ClusterSecretStore' ? lookup.clusterSecretStore(ref.name) : lookup.secretStore(ns, ref.name);
  if (!store) {
    const scope = kind === 'ClusterSecretStore' ? '' : ` in namespace "${ns}"`;
    problems.push(`${where}: ${kind} "${ref.name}" not found${scope}; create it or fix spec.secretStoreRef`);
  }
  return store;
}

/** What ESI cannot serve in the ExternalSecret (the reconciler applies the same checks). */
function checkEntries(es: ExternalSecret, problems: string[]): void {
  for (const p of externalSecretSpecProblems(es.spec, 'agent')) problems.push(describeSpecProblem(es.metadata.name!, p));
}

function checkStore(store: AnySecretStore, env: { pod: PodFacts; lookup: ObjectLookup; opts: ResolveOptions }, problems: string[]): ResolvedStore | undefined {
  const { pod, lookup, opts } = env;
  const what = describe(store, pod.namespace);
  const before = problems.length;
  // The provider's own spec rules, so a bad store is denied here, not found in the pod.
  for (const p of storeSpecProblems(store.spec.provider ?? {})) problems.push(`${what}: ${p}`);
  if (!servesControllerClass(store, opts.storeClasses)) {
    problems.push(`${what}: spec.controller "${store.spec.controller ?? ''}" is not served by this ESI instance (it serves: ${opts.storeClasses!.map((c) => `"${c}"`).join(', ')})`);
  }
  if (store.kind === 'ClusterSecretStore') {
    const ns = lookup.namespace(pod.namespace);
    const verdict = ns ? clusterStoreAdmits(store, ns) : { ok: false, why: `namespace "${pod.namespace}" is not in the webhook's cache yet; retry` };
    if (!verdict.ok) problems.push(`${what} may not be used from namespace "${pod.namespace}": ${verdict.why}`);
  }
  const refs = referencedObjects(store.spec.provider ?? {});
  const credentials = refs.credentials.map((c) => ({ ...c, namespace: c.namespace ?? pod.namespace }));
  for (const c of credentials) {
    if (c.namespace !== pod.namespace) {
      problems.push(`${what}: ${c.path} references ${c.kind} "${c.namespace}/${c.name}" in another namespace; ESI mounts static credentials only from the pod's own namespace "${pod.namespace}" — use pod identity or a SecretStore in "${pod.namespace}"`);
    }
  }
  for (const sa of refs.serviceAccounts) {
    if (sa.name !== pod.serviceAccountName || (sa.namespace && sa.namespace !== pod.namespace)) {
      problems.push(`${what}: ${sa.path} names ServiceAccount "${sa.namespace ?? pod.namespace}/${sa.name}" but the pod runs as "${pod.namespace}/${pod.serviceAccountName}"; ESI only uses the pod's own identity — set spec.serviceAccountName: ${sa.name} on the pod`);
    }
  }
  if (problems.length > before) return undefined;
  const identity = podIdentity(store.spec.provider);
  const warning = admissionWarning(store.spec.provider);
  const key = storeKey(store.kind, store.metadata.name!, pod.namespace);
  return {
    key, kind: store.kind, name: store.metadata.name!, provider: store.spec.provider, credentials,
    ...(identity.needed ? { identity: { audience: identity.audience } } : {}),
    ...(warning ? { warning } : {}),
  };
}

/** Resolves every ExternalSecret the request names; collects all problems. */
export function resolve(pod: PodFacts, request: InjectionRequest, lookup: ObjectLookup, opts: ResolveOptions = {}): ResolveResult {
  const problems: string[] = [];
  const stores = new Map<string, ResolvedStore>();
  const secrets: AgentSecret[] = [];
  for (const name of request.secrets) {
    const es = lookup.externalSecret(pod.namespace, name);
    if (!es) {
      problems.push(`esi.dev/secrets: ExternalSecret "${name}" not found in namespace "${pod.namespace}"; create it before the pod or remove it from the annotation`);
      continue;
    }
    checkEntries(es, problems);
    const store = findStore(es, pod.namespace, lookup, problems);
    if (!store) continue;
    const key = storeKey(store.kind, store.metadata.name!, pod.namespace);
    const resolved = stores.get(key) ?? checkStore(store, { pod, lookup, opts }, problems);
    if (!resolved) continue;
    stores.set(key, resolved);
    let engine: TemplateEngineChoice;
    try {
      engine = selectTemplateEngine(name, es.metadata.annotations, es.spec.target?.template);
    } catch (err) {
      problems.push((err as Error).message);
      continue;
    }
    secrets.push({
      name, store: key, data: es.spec.data ?? [], dataFrom: es.spec.dataFrom ?? [],
      ...(engine !== 'none' ? { template: es.spec.target!.template!, templateEngine: engine } : {}),
    });
  }
  // A store that failed its checks is reported once per ExternalSecret using it; dedupe.
  const unique = [...new Set(problems)];
  return unique.length ? { ok: false, problems: unique } : { ok: true, resolved: { secrets, stores } };
}
