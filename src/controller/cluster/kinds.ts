// ClusterExternalSecret (external-secrets.io/v1) and ClusterPushSecret (v1alpha1), described
// once for the one reconciler that serves both (./reconcile.ts): which namespaces an object
// selects, the namespaced object it wants in each, and which stores decide its controller.
// Pure: no I/O, no cache.
import type { KubernetesObject, V1LabelSelector, V1Namespace } from '@kubernetes/client-node';
import { API_GROUP, EXTERNAL_SECRET_API_VERSION, PUSH_SECRET_API_VERSION } from '../../api/types.js';
import type { ClusterExternalSecret, ClusterPushSecret, TemplatedObjectMetadata } from '../../api/cluster-types.js';
import { matchesLabelSelector } from '../../stores/access.js';
import { labelValue } from '../runtime/labels.js';
import { storeRefsOf } from '../../externalsecret/store-refs.js';
import { resourceOf, resourcePath, type PathOptions } from '../../kube/paths.js';

/** On each provisioned object: the name of the cluster object that owns it. */
const CLUSTER_EXTERNAL_SECRET_LABEL = 'esi.dev/cluster-external-secret';
const CLUSTER_PUSH_SECRET_LABEL = 'esi.dev/cluster-push-secret';

export type ClusterObject = ClusterExternalSecret | ClusterPushSecret;

/** A store reference of the provisioned object's spec (by name, or label-selected). */
export interface StoreRef {
  kind?: string;
  name?: string;
  labelSelector?: V1LabelSelector;
}

export interface ClusterKind<C extends ClusterObject = ClusterObject> {
  kind: C['kind'];
  apiVersion: string;
  plural: string;
  /** Queue key prefix. */
  prefix: 'ces' | 'cps';
  label: string;
  child: { kind: 'ExternalSecret' | 'PushSecret'; apiVersion: string; plural: string };
  /** The status field holding the provisioned object's name. */
  nameField: 'externalSecretName' | 'pushSecretName';
  childName(c: C): string;
  childSpec(c: C): object;
  childMetadata(c: C): TemplatedObjectMetadata | undefined;
  selectors(c: C): V1LabelSelector[];
  namespaces(c: C): string[];
  storeRefs(c: C): StoreRef[];
  /** How the stores decide: `all` — the child is served only if every store it names is
   *  (an ExternalSecret with one store of another class is that class's); `any` —
   *  a PushSecret pushes to the stores of this class among its targets. */
  storesRule: 'all' | 'any';
  refreshTime(c: C): string | undefined;
}

export const CLUSTER_EXTERNAL_SECRET: ClusterKind<ClusterExternalSecret> = {
  kind: 'ClusterExternalSecret', apiVersion: EXTERNAL_SECRET_API_VERSION, plural: 'clusterexternalsecrets', prefix: 'ces',
  label: CLUSTER_EXTERNAL_SECRET_LABEL,
  child: { kind: 'ExternalSecret', apiVersion: EXTERNAL_SECRET_API_VERSION, plural: 'externalsecrets' },
  nameField: 'externalSecretName',
  childName: (c) => c.spec.externalSecretName || c.metadata.name!,
  childSpec: (c) => c.spec.externalSecretSpec ?? {},
  childMetadata: (c) => c.spec.externalSecretMetadata,
  // The deprecated single selector still counts (ESO reads both).
  selectors: (c) => [...(c.spec.namespaceSelector ? [c.spec.namespaceSelector] : []), ...(c.spec.namespaceSelectors ?? [])],
  namespaces: (c) => c.spec.namespaces ?? [],
  // spec.secretStoreRef and the entries' own sourceRef.storeRef, as the child reads them.
  storeRefs: (c) => storeRefsOf(c.spec.externalSecretSpec ?? {}).map(({ kind, name }) => ({ kind, name })),
  storesRule: 'all',
  refreshTime: (c) => c.spec.refreshTime,
};

export const CLUSTER_PUSH_SECRET: ClusterKind<ClusterPushSecret> = {
  kind: 'ClusterPushSecret', apiVersion: PUSH_SECRET_API_VERSION, plural: 'clusterpushsecrets', prefix: 'cps',
  label: CLUSTER_PUSH_SECRET_LABEL,
  child: { kind: 'PushSecret', apiVersion: PUSH_SECRET_API_VERSION, plural: 'pushsecrets' },
  nameField: 'pushSecretName',
  childName: (c) => c.spec.pushSecretName || c.metadata.name!,
  childSpec: (c) => c.spec.pushSecretSpec ?? {},
  childMetadata: (c) => c.spec.pushSecretMetadata,
  selectors: (c) => c.spec.namespaceSelectors ?? [],
  namespaces: () => [],
  storeRefs: (c) => c.spec.pushSecretSpec?.secretStoreRefs ?? [],
  storesRule: 'any',
  refreshTime: (c) => c.spec.refreshTime,
};

/** The REST path of a kind's collection or object: in `o.namespace` (the namespaced child
 *  kinds) or cluster-scoped (the cluster kinds). */
export function kindPath(apiVersion: string, plural: string, o: PathOptions = {}): string {
  return resourcePath(resourceOf(apiVersion, plural, o.namespace !== undefined), o);
}

/** Names of the namespaces `c` selects: listed by name, or matching any label selector (an
 *  empty selector matches every namespace). Terminating namespaces are left out. */
export function selectedNamespaces<C extends ClusterObject>(k: ClusterKind<C>, c: C, all: readonly V1Namespace[]): string[] {
  const names = new Set(k.namespaces(c));
  const selectors = k.selectors(c);
  const out: string[] = [];
  for (const ns of all) {
    const name = ns.metadata?.name;
    if (!name || ns.status?.phase === 'Terminating' || ns.metadata?.deletionTimestamp) continue;
    if (names.has(name) || selectors.some((s) => matchesLabelSelector(s, ns.metadata?.labels ?? {}))) out.push(name);
  }
  return out.sort();
}

/** The owner reference a provisioned object carries (no blockOwnerDeletion: that would need
 *  rights on the cluster object's finalizers). */
function ownerReference(k: ClusterKind, c: ClusterObject) {
  return { apiVersion: k.apiVersion, kind: k.kind, name: c.metadata.name!, uid: c.metadata.uid!, controller: true };
}

/** Whether `obj` was provisioned by the cluster object `name` of kind `k`. */
export function ownedBy(k: ClusterKind, obj: KubernetesObject, name: string): boolean {
  return (obj.metadata?.ownerReferences ?? []).some((r) => r.kind === k.kind && r.name === name && r.apiVersion.startsWith(`${API_GROUP}/`));
}

/** The name of the cluster object of kind `k` that provisioned `obj`, if any. */
export function ownerName(k: ClusterKind, obj: KubernetesObject): string | undefined {
  return (obj.metadata?.ownerReferences ?? []).find((r) => r.kind === k.kind && r.apiVersion.startsWith(`${API_GROUP}/`))?.name;
}

/** The namespaced object `c` wants in `ns`. */
export function desiredChild<C extends ClusterObject>(k: ClusterKind<C>, c: C, ns: string) {
  const meta = k.childMetadata(c);
  return {
    apiVersion: k.child.apiVersion,
    kind: k.child.kind,
    metadata: {
      name: k.childName(c),
      namespace: ns,
      labels: { ...(meta?.labels ?? {}), [k.label]: labelValue(c.metadata.name!) },
      ...(meta?.annotations ? { annotations: meta.annotations } : {}),
      ownerReferences: [ownerReference(k, c)],
    },
    spec: k.childSpec(c),
  };
}

/** Whether every field of `want` has the same value in `have` (arrays: same length, element-
 *  wise). Fields the apiserver defaults (present only in `have`) do not count, so an object
 *  is rewritten only when the cluster object's spec or a hand edit changed what it asked. */
export function covers(have: unknown, want: unknown): boolean {
  if (Array.isArray(want)) return Array.isArray(have) && have.length === want.length && want.every((w, i) => covers(have[i], w));
  if (want !== null && typeof want === 'object') {
    if (have === null || typeof have !== 'object' || Array.isArray(have)) return false;
    return Object.entries(want).every(([key, w]) => w === undefined || covers((have as Record<string, unknown>)[key], w));
  }
  return have === want;
}

/** Whether the provisioned object `have` matches `want` (spec, labels, annotations, owner). */
export function upToDate(have: KubernetesObject & { spec?: unknown }, want: ReturnType<typeof desiredChild>): boolean {
  const owner = want.metadata.ownerReferences[0]!;
  return covers(have.spec, want.spec) &&
    covers(have.metadata?.labels ?? {}, want.metadata.labels) &&
    covers(have.metadata?.annotations ?? {}, want.metadata.annotations ?? {}) &&
    (have.metadata?.ownerReferences ?? []).some((r) => r.uid === owner.uid && r.kind === owner.kind);
}
