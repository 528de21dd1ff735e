// Resolution at admission: from the pod's request to the ExternalSecrets and stores the
// agent will use, applying every access rule. Reads only from an ObjectLookup (watch-
// backed caches in the webhook, parsed files in `esi inject`); never does network I/O.
import type { AgentDynamicSecret, AgentSecret } from '../src/agent-config/types.js';
import { storeKey } from '../src/agent-config/types.js';
import type { AnySecretStore, ExternalSecret, SecretStoreProvider } from '../src/api/types.js';
import { admissionWarning, podIdentity, referencedObjects, servesControllerClass, storeSpecProblems } from '../src/stores/access.js';
import type { CredentialRef } from '../src/providers/types.js';
import { classNotServed, crossNamespaceCredentials, describeStoreRef, lookupStore, namespaceRefusal, storeNotFound, type StoreLookup } from '../src/stores/use.js';
import { selectTemplateEngine, type TemplateEngineChoice } from '../src/templating/eso.js';
import { describeSpecProblem, externalSecretSpecProblems } from '../src/externalsecret/checks.js';
import type { InjectionRequest } from '../src/pod-contract/annotations.js';
import { resolveEnv } from '../src/pod-contract/env.js';
import type { AgentEnv } from '../src/agent-config/types.js';

export interface ObjectLookup extends StoreLookup {
  externalSecret(namespace: string, name: string): ExternalSecret | undefined;
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
  /** `esi.dev/dynamic-<name>` entries (docs/dynamic-secrets.md). */
  dynamicSecrets: AgentDynamicSecret[];
  stores: Map<string, ResolvedStore>;
  /** `esi.dev/env` variables (src/pod-contract/env.ts); absent without the annotation. */
  envVars?: AgentEnv['vars'];
}

export type ResolveResult = { ok: true; resolved: Resolved } | { ok: false; problems: string[] };

interface PodFacts {
  namespace: string;
  serviceAccountName: string;
}

function findStore(es: ExternalSecret, ns: string, lookup: ObjectLookup, problems: string[]): AnySecretStore | undefined {
  const ref = es.spec.secretStoreRef;
  const where = `ExternalSecret "${es.metadata.name}"`;
  if (!ref?.name) {
    problems.push(`${where}: spec.secretStoreRef.name is required by ESI's agent, which mounts an ExternalSecret from one store (per-entry sourceRef.storeRef is served by ESI's reconciler only)`);
    return undefined;
  }
  const store = lookupStore(lookup, { kind: ref.kind, name: ref.name }, ns);
  if (!store) problems.push(`${where}: ${storeNotFound({ kind: ref.kind, name: ref.name }, ns, 'spec.secretStoreRef')}`);
  return store;
}

/** `f(key)` remembered per object: the informer cache replaces its objects on update and never
 *  mutates them (as canonicalJson's encodings in mutate.ts), and the checks below are pure
 *  functions of the spec they read, so every admission that names the same store or
 *  ExternalSecret reuses the verdict instead of validating the spec again (~4 % of an
 *  admission at saturation, docs/performance/webhook-admission-profile.md). */
function rememberedBy<K extends object, T>(f: (key: K) => T): (key: K) => T {
  const memo = new WeakMap<K, T>();
  return (key) => {
    if (memo.has(key)) return memo.get(key)!;
    const value = f(key);
    memo.set(key, value);
    return value;
  };
}

const providerProblems = rememberedBy(storeSpecProblems);
const providerReferences = rememberedBy(referencedObjects);
const entryProblems = rememberedBy((es: ExternalSecret) =>
  externalSecretSpecProblems(es.spec, 'agent').map((p) => describeSpecProblem(es.metadata.name!, p)));

/** What ESI cannot serve in the ExternalSecret (the reconciler applies the same checks). */
function checkEntries(es: ExternalSecret, problems: string[]): void {
  problems.push(...entryProblems(es));
}

function checkStore(store: AnySecretStore, env: { pod: PodFacts; lookup: ObjectLookup; opts: ResolveOptions }, problems: string[]): ResolvedStore | undefined {
  const { pod, lookup, opts } = env;
  const what = describeStoreRef(store.kind, store.metadata.name!, pod.namespace);
  const before = problems.length;
  // The provider's own spec rules, so a bad store is denied here, not found in the pod.
  for (const p of providerProblems(store.spec.provider ?? {})) problems.push(`${what}: ${p}`);
  if (!servesControllerClass(store, opts.storeClasses)) problems.push(classNotServed(store, opts.storeClasses!, pod.namespace));
  const refused = namespaceRefusal(store, lookup, pod.namespace);
  if (refused) problems.push(refused);
  const refs = providerReferences(store.spec.provider ?? {});
  const credentials = refs.credentials.map((c) => ({ ...c, namespace: c.namespace ?? pod.namespace }));
  for (const p of crossNamespaceCredentials(store.spec.provider ?? {}, pod.namespace)) problems.push(`${what}: ${p}`);
  // Stricter than the reconciler's rule (ServiceAccounts of the namespace the store is used
  // from): the agent has only the pod's own token.
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

/** `esi.dev/dynamic-<name>` entries: their stores pass the same checks as an ExternalSecret's. */
function resolveDynamic(request: InjectionRequest, env: { pod: PodFacts; lookup: ObjectLookup; opts: ResolveOptions }, stores: Map<string, ResolvedStore>, problems: string[]): AgentDynamicSecret[] {
  const { pod, lookup } = env;
  const dynamicSecrets: AgentDynamicSecret[] = [];
  for (const d of request.dynamic ?? []) {
    const store = d.storeKind === 'ClusterSecretStore' ? lookup.clusterSecretStore(d.store) : lookup.secretStore(pod.namespace, d.store);
    if (!store) {
      problems.push(`esi.dev/dynamic-${d.name}: ${d.storeKind} "${d.store}" not found${d.storeKind === 'SecretStore' ? ` in namespace "${pod.namespace}"` : ''}`);
      continue;
    }
    const key = storeKey(store.kind, store.metadata.name!, pod.namespace);
    const resolved = stores.get(key) ?? checkStore(store, env, problems);
    if (!resolved) continue;
    stores.set(key, resolved);
    dynamicSecrets.push({
      name: d.name, store: key, path: d.path,
      ...(d.parameters ? { method: 'POST' as const, parameters: d.parameters } : {}),
      ...(request.leaseOverlapSeconds !== undefined ? { overlapSeconds: request.leaseOverlapSeconds } : {}),
      ...(request.leaseRevokeOnExit !== undefined ? { revokeOnExit: request.leaseRevokeOnExit } : {}),
    });
  }
  return dynamicSecrets;
}

/** Resolves every ExternalSecret the request names; collects all problems. */
export function resolve(pod: PodFacts, request: InjectionRequest, lookup: ObjectLookup, opts: ResolveOptions = {}): ResolveResult {
  const problems: string[] = [];
  const stores = new Map<string, ResolvedStore>();
  const secrets: AgentSecret[] = [];
  // ExternalSecrets named only in esi.dev/env are fetched for the env file, not mounted.
  const envOnly = (request.env ?? []).map((r) => r.secret).filter((n) => !request.secrets.includes(n));
  for (const name of [...request.secrets, ...envOnly]) {
    const es = lookup.externalSecret(pod.namespace, name);
    if (!es) {
      problems.push(`${envOnly.includes(name) ? 'esi.dev/env' : 'esi.dev/secrets'}: ExternalSecret "${name}" not found in namespace "${pod.namespace}"; create it before the pod or remove it from the annotation`);
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
      ...(envOnly.includes(name) ? { files: false } : {}),
    });
  }
  const dynamicSecrets = resolveDynamic(request, { pod, lookup, opts }, stores, problems);
  const envVars = request.env ? resolveEnv(request.env, (name) => lookup.externalSecret(pod.namespace, name), problems) : undefined;
  // A store that failed its checks is reported once per ExternalSecret using it; dedupe.
  const unique = [...new Set(problems)];
  return unique.length ? { ok: false, problems: unique } : { ok: true, resolved: { secrets, dynamicSecrets, stores, ...(envVars ? { envVars } : {}) } };
}
