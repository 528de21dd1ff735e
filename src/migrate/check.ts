// What `esi migrate check` says of a cluster's ESO objects before an operator switches them
// to ESI (docs/migration.md): a pure function of the objects read, so the verdicts are the
// reconciler's own rules (the provider's validateSpec, the identity rule) and not a copy.
// CRDs first: one that a Helm release renders without `helm.sh/resource-policy: keep` is
// deleted by `helm uninstall` of that release, and with it every object of its kind (and,
// through the garbage collector, every Secret those objects own).
import type { AnySecretStore, ExternalSecret } from '../api/types.js';
import { GENERATOR_RESOURCES } from '../api/generators.js';
import { storeProvider } from '../providers/registry.js';
import { controllerIdentityProblem } from '../stores/access.js';

export type Verdict = 'served' | 'different' | 'refused' | 'unsafe' | 'other-class' | 'safe';

export interface Finding {
  kind: string;
  namespace?: string;
  name: string;
  verdict: Verdict;
  /** Why (value-free: field names, store names, kinds). */
  reason?: string;
  /** What to do. */
  fix?: string;
}

export interface CrdObject {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: { group: string };
}

export interface CheckInput {
  crds: CrdObject[];
  stores: AnySecretStore[];
  externalSecrets: ExternalSecret[];
  /** The class ESI serves (--controller-class). */
  controllerClass: string;
  /** Whether ESI will serve stores without spec.controller (claimUnclassed). */
  claimUnclassed: boolean;
  /** --allow-ambient-identity as the controller will run. */
  allowAmbientIdentity: boolean;
}

const GROUPS = new Set(['external-secrets.io', 'generators.external-secrets.io']);
const KEEP = 'helm.sh/resource-policy';

/** The CRDs a `helm uninstall` would delete. */
function crdFindings(crds: CrdObject[]): Finding[] {
  return crds.filter((c) => GROUPS.has(c.spec.group)).map((c) => {
    const release = c.metadata.annotations?.['meta.helm.sh/release-name'];
    const releaseNs = c.metadata.annotations?.['meta.helm.sh/release-namespace'];
    const helm = c.metadata.labels?.['app.kubernetes.io/managed-by'] === 'Helm' || !!release;
    const kept = c.metadata.annotations?.[KEEP] === 'keep';
    if (!helm || kept) return { kind: 'CustomResourceDefinition', name: c.metadata.name, verdict: 'safe' as const };
    return {
      kind: 'CustomResourceDefinition', name: c.metadata.name, verdict: 'unsafe' as const,
      reason: `Helm release ${releaseNs ?? '?'}/${release ?? '?'} owns it without ${KEEP}: keep; uninstalling that release deletes this CRD, every object of its kind and the Secrets they own`,
      fix: `kubectl annotate crd ${c.metadata.name} ${KEEP}=keep, then helm upgrade ${release ?? '<release>'} --reuse-values --set installCRDs=false before helm uninstall (docs/migration.md)`,
    };
  });
}

const describe = (s: AnySecretStore) => (s.kind === 'ClusterSecretStore' ? `ClusterSecretStore/${s.metadata.name}` : `SecretStore/${s.metadata.namespace}/${s.metadata.name}`);

function storeFinding(s: AnySecretStore, i: CheckInput): Finding {
  const base = { kind: s.kind, name: s.metadata.name!, ...(s.metadata.namespace ? { namespace: s.metadata.namespace } : {}) };
  const found = storeProvider(s.spec?.provider);
  if ('problem' in found) return { ...base, verdict: 'refused', reason: found.problem };
  const problems = found.meta.validateSpec(found.spec);
  if (problems.length) return { ...base, verdict: 'refused', reason: problems.join('; '), fix: 'correct the store spec' };
  const identity = controllerIdentityProblem(s, i.allowAmbientIdentity);
  if (identity) return { ...base, verdict: 'refused', reason: identity };
  const cls = s.spec.controller ?? '';
  if (cls !== i.controllerClass && !(cls === '' && i.claimUnclassed)) {
    return { ...base, verdict: 'other-class', reason: `spec.controller is "${cls}"`, fix: `set spec.controller: ${i.controllerClass} to move it to ESI` };
  }
  return { ...base, verdict: 'served' };
}

/** What the ExternalSecret's own spec makes ESI refuse, or undefined. */
function specRefusal(es: ExternalSecret): Pick<Finding, 'reason' | 'fix'> | undefined {
  const generators = (es.spec?.dataFrom ?? []).map((f) => f.sourceRef?.generatorRef?.kind).filter((k): k is string => !!k);
  const unknown = generators.filter((k) => !(k in GENERATOR_RESOURCES));
  if (unknown.length) return { reason: `generator kind ${unknown.join(', ')} is not served by ESI (served: ${Object.keys(GENERATOR_RESOURCES).join(', ')})` };
  if (es.spec?.target?.template?.engineVersion === 'v1') return { reason: 'target.template.engineVersion v1 is not served', fix: 'use engineVersion v2 (ESO\'s default)' };
  return undefined;
}

/** What its store makes of it: refused or another class's, or undefined. */
function storeVerdict(es: ExternalSecret, stores: Map<string, Finding>): Pick<Finding, 'verdict' | 'reason' | 'fix'> | undefined {
  const ref = es.spec?.secretStoreRef;
  if (!ref?.name) return undefined;
  const kind = ref.kind ?? 'SecretStore';
  const key = kind === 'ClusterSecretStore' ? `ClusterSecretStore/${ref.name}` : `SecretStore/${es.metadata.namespace}/${ref.name}`;
  const store = stores.get(key);
  if (!store) return { verdict: 'refused', reason: `${key} does not exist` };
  const fix = store.fix ? { fix: store.fix } : {};
  if (store.verdict === 'refused') return { verdict: 'refused', reason: `its store ${key} is refused: ${store.reason ?? ''}`, ...fix };
  if (store.verdict === 'other-class') return { verdict: 'other-class', reason: `its store ${key} is served by another controller`, ...fix };
  return undefined;
}

function externalSecretFinding(es: ExternalSecret, stores: Map<string, Finding>): Finding {
  const base = { kind: 'ExternalSecret', namespace: es.metadata.namespace!, name: es.metadata.name! };
  const refused = specRefusal(es);
  if (refused) return { ...base, verdict: 'refused', ...refused };
  const byStore = storeVerdict(es, stores);
  if (byStore) return { ...base, ...byStore } as Finding;
  const interval = es.spec?.refreshInterval;
  if (typeof interval === 'string' && /^(\d+(ms|us|µs|ns))+$/.test(interval) && !/^0+(ms|us|µs|ns)$/.test(interval)) {
    return { ...base, verdict: 'different', reason: `refreshInterval ${interval} is raised to 1s` };
  }
  return { ...base, verdict: 'served' };
}

/** Every finding, CRDs first; `refused`/`unsafe` make the check fail. */
export function migrationCheck(i: CheckInput): Finding[] {
  const storeFindings = i.stores.map((s) => [describe(s), storeFinding(s, i)] as const);
  const byKey = new Map(storeFindings);
  return [...crdFindings(i.crds), ...storeFindings.map(([, f]) => f), ...i.externalSecrets.map((es) => externalSecretFinding(es, byKey))];
}

export const failing = (f: Finding[]) => f.some((x) => x.verdict === 'refused' || x.verdict === 'unsafe');
