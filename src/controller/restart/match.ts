// Which workloads restart when a Secret ESI manages changes (docs/controller.md, "Restart on
// change"). Pure: src/controller/restart/restarter.ts lists
// the workloads and patches them. A workload opts in with RESTART_ON_CHANGE_ANNOTATION on its
// own metadata, as Stakater Reloader's users annotate theirs:
//  - "true": restart when a Secret its pod template references changes;
//  - "a,b": restart when Secret a or b changes (Reloader's `secret.reloader.stakater.com/reload`),
//    referenced by the template or not (the app may read it another way).
import type { V1PodSpec, V1Secret } from '@kubernetes/client-node';
import { holdsData } from '../runtime/cached-secret.js';
import type { Plan } from '../externalsecret/secret.js';

/** On a Deployment, StatefulSet or DaemonSet (its own metadata): the opt-in. */
export const RESTART_ON_CHANGE_ANNOTATION = 'esi.dev/restart-on-secret-change';
/** On the workload's pod template: when ESI last restarted it (RFC 3339), as `kubectl rollout
 *  restart` writes kubectl.kubernetes.io/restartedAt. A time, never a value or a value's hash. */
export const RESTARTED_AT_ANNOTATION = 'esi.dev/restartedAt';
/** Names read from one annotation value: a longer list is cut (bounded work per workload). */
export const MAX_NAMED_SECRETS = 64;

export type OptIn = { referenced: true } | { referenced: false; names: ReadonlySet<string> };

/** The opt-in an annotation value expresses; undefined = none ("", "false", unset). */
export function parseOptIn(value: string | undefined): OptIn | undefined {
  const v = value?.trim() ?? '';
  if (v === '' || v === 'false') return undefined;
  if (v === 'true') return { referenced: true };
  const names = v.split(',').map((n) => n.trim()).filter(Boolean).slice(0, MAX_NAMED_SECRETS);
  return names.length ? { referenced: false, names: new Set(names) } : undefined;
}

/** The Secrets a pod template references: volumes (secret, projected secret sources) and,
 *  in containers and initContainers, env[].valueFrom.secretKeyRef and envFrom[].secretRef. */
export function referencedSecrets(spec: V1PodSpec | undefined): Set<string> {
  const names: (string | undefined)[] = [];
  for (const v of spec?.volumes ?? []) names.push(v.secret?.secretName, ...(v.projected?.sources ?? []).map((s) => s.secret?.name));
  for (const c of [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])]) {
    names.push(...(c.env ?? []).map((e) => e.valueFrom?.secretKeyRef?.name), ...(c.envFrom ?? []).map((e) => e.secretRef?.name));
  }
  return new Set(names.filter((n): n is string => !!n));
}

/** A Deployment, StatefulSet or DaemonSet as far as this feature reads it. */
export interface WorkloadLike {
  metadata?: { annotations?: Record<string, string> };
  spec?: { template?: { metadata?: { annotations?: Record<string, string> }; spec?: V1PodSpec } };
}

/** Of `changed` (names of Secrets in the workload's namespace), those the workload restarts for. */
export function restartsFor(w: WorkloadLike, changed: Iterable<string>): string[] {
  const opt = parseOptIn(w.metadata?.annotations?.[RESTART_ON_CHANGE_ANNOTATION]);
  if (!opt) return [];
  const wanted = opt.referenced ? referencedSecrets(w.spec?.template?.spec) : opt.names;
  return [...changed].filter((s) => wanted.has(s));
}

/** When ESI last restarted the workload (ms), from its pod template; 0 when never. */
export function restartedAt(w: WorkloadLike): number {
  return Date.parse(w.spec?.template?.metadata?.annotations?.[RESTARTED_AT_ANNOTATION] ?? '') || 0;
}

/** Whether a write of `plan` over `before` changes an existing Secret's data: a creation is
 *  not a change, and neither is an update of labels, annotations or type alone. */
export function dataChanged(before: V1Secret | undefined, plan: Plan): boolean {
  if (!before || (plan.action !== 'replace' && plan.action !== 'recreate')) return false;
  return !holdsData(before, plan.body.data ?? {});
}
