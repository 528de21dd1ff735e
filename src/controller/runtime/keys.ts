// The work queue's keys, built and read here only: `es/<ns>/<name>` (ExternalSecrets),
// `ps/<ns>/<name>` (PushSecrets), `ss/<ns>/<name>` (SecretStores), `css/<name>`,
// `ces/<name>` (ClusterExternalSecrets), `cps/<name>` (ClusterPushSecrets), `gs/<ns>/<name>`
// (GeneratorStates), `restart/<ns>/` (a namespace's restart-on-change scan) and
// `Deployment/<ns>/<name>`, `StatefulSet/…`, `DaemonSet/…` (a workload's delayed or retried
// restart, ../restart/restarter.ts). Object names
// and namespaces never hold '/' (src/kube/names.ts), so a key reads back unambiguously.

export type KeyKind = 'es' | 'ps' | 'ss' | 'css' | 'ces' | 'cps' | 'gs' | 'restart' | 'Deployment' | 'StatefulSet' | 'DaemonSet';

/** A key of the work queue (a string: the queue dedupes by it), built by `queueKey`. */
export type QueueKey = string & { readonly queueKey: unique symbol };

export interface KeyOf {
  kind: KeyKind;
  /** '' for the cluster-scoped kinds. */
  namespace: string;
  name: string;
}

const CLUSTER_SCOPED: ReadonlySet<string> = new Set<KeyKind>(['css', 'ces', 'cps']);

export function queueKey(kind: KeyKind, namespace: string, name: string): QueueKey {
  return (CLUSTER_SCOPED.has(kind) ? `${kind}/${name}` : `${kind}/${namespace}/${name}`) as QueueKey;
}

/** The object a key names. */
export function keyOf(key: QueueKey): KeyOf {
  const [kind, a = '', b = ''] = key.split('/');
  return CLUSTER_SCOPED.has(kind!) ? { kind: kind as KeyKind, namespace: '', name: a } : { kind: kind as KeyKind, namespace: a, name: b };
}
