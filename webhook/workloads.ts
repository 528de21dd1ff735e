// Workloads in `esi inject` (as `istioctl kube-inject` and `linkerd inject` take them): where
// each kind keeps its pod template, the Pod its controller would create from it, and the
// workload with the template replaced. Admission itself is not here: `esi inject` sends
// that Pod through the webhook's own admit(), so a template is injected, refused or left
// alone exactly as the pods created from it would be.
import type { V1Pod } from '@kubernetes/client-node';
import { isObject, type Json } from '../src/json-object.js';
import { quoteShort } from '../src/pod-contract/parse.js';

/** Where each workload kind keeps its pod template. */
const TEMPLATE_PATHS: Record<string, readonly string[]> = {
  Deployment: ['spec', 'template'],
  StatefulSet: ['spec', 'template'],
  DaemonSet: ['spec', 'template'],
  ReplicaSet: ['spec', 'template'],
  ReplicationController: ['spec', 'template'],
  Job: ['spec', 'template'],
  CronJob: ['spec', 'jobTemplate', 'spec', 'template'],
};

export const WORKLOAD_KINDS = Object.keys(TEMPLATE_PATHS);

export const isWorkload = (o: unknown): o is Json => isObject(o) && typeof o.kind === 'string' && o.kind in TEMPLATE_PATHS;

/** `Deployment "web"`: how messages name a workload. */
export function workloadName(w: Json): string {
  const meta = isObject(w.metadata) ? w.metadata : {};
  const name = typeof meta.name === 'string' ? meta.name : typeof meta.generateName === 'string' ? `${meta.generateName}*` : '(unnamed)';
  return `${String(w.kind)} ${quoteShort(name)}`;
}

/** `kind: List` (kubectl get -o yaml) and typed lists (`DeploymentList`, straight from the
 *  API, whose items carry no kind) become their items, so a saved listing injects as is. */
export function flattenLists(objects: unknown[]): unknown[] {
  return objects.flatMap((o): unknown[] => {
    if (!isObject(o) || typeof o.kind !== 'string' || !o.kind.endsWith('List') || !Array.isArray(o.items)) return [o];
    const itemKind = o.kind === 'List' ? undefined : o.kind.slice(0, -'List'.length);
    return flattenLists(o.items.map((i) => (itemKind && isObject(i) && i.kind === undefined ? { apiVersion: o.apiVersion, kind: itemKind, ...i } : i)));
  });
}

export interface TemplatePod {
  /** The Pod the workload's controller would create, as the webhook would receive it. */
  pod: V1Pod;
  namespace: string;
  /** Dotted path of the template in the workload, to prefix the pod's problems. */
  field: string;
  /** The workload with its template replaced by (the metadata and spec of) `pod`. */
  put(pod: V1Pod): Json;
}

/** Pod fields this module sets on the template's Pod, and never writes back. */
const SYNTHESIZED = ['namespace', 'generateName', 'ownerReferences'] as const;

/**
 * The template's Pod, or the problems that stop reading one (each names its field). The pod
 * gets the workload's namespace (its controller creates its pods there, whatever the template says),
 * the `<name>-` generateName its controller gives it (a StatefulSet's pods are named
 * `<name>-<ordinal>` instead; the name only labels the agent's configuration), and for Jobs
 * and CronJobs the Job ownerReference that admission's warning for Jobs reads.
 */
export function templatePod(w: Json): TemplatePod | { problems: string[] } {
  const kind = String(w.kind);
  const path = TEMPLATE_PATHS[kind]!;
  const field = path.join('.');
  const meta = w.metadata;
  if (!isObject(meta)) return { problems: ['metadata: must be an object'] };
  const name = meta.name ?? meta.generateName;
  if (typeof name !== 'string' || !name) return { problems: ['metadata.name or metadata.generateName is required'] };
  if (meta.namespace !== undefined && typeof meta.namespace !== 'string') return { problems: ['metadata.namespace: must be a string'] };
  let template: unknown = w;
  for (const [i, key] of path.entries()) {
    template = isObject(template) ? template[key] : undefined;
    if (!isObject(template)) return { problems: [`${path.slice(0, i + 1).join('.')}: ${template === undefined ? 'is required' : 'must be an object'}`] };
  }
  const tpl = template as Json;
  if (tpl.metadata !== undefined && !isObject(tpl.metadata)) return { problems: [`${field}.metadata: must be an object`] };
  const namespace = (meta.namespace as string | undefined) ?? 'default';
  const own = (tpl.metadata ?? {}) as Json;
  const owner = kind === 'Job' || kind === 'CronJob' ? { ownerReferences: [{ apiVersion: 'batch/v1', kind: 'Job', name, uid: '' }] } : {};
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { ...own, namespace, generateName: name.endsWith('-') ? name : `${name}-`, ...owner }, spec: tpl.spec } as V1Pod;
  const put = (mutated: V1Pod): Json => {
    const metadata: Json = { ...(mutated.metadata as Json) };
    for (const k of SYNTHESIZED) {
      if (own[k] === undefined) delete metadata[k];
      else metadata[k] = own[k];
    }
    return setAt(w, path, { ...tpl, metadata, spec: mutated.spec });
  };
  return { pod, namespace, field, put };
}

/** A copy of `obj` with `value` at `path`; only the objects on the path are new. */
function setAt(obj: Json, path: readonly string[], value: unknown): Json {
  const [head, ...rest] = path;
  return { ...obj, [head!]: rest.length ? setAt(obj[head!] as Json, rest, value) : value };
}
