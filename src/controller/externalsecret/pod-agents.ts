// ExternalSecrets served only by the webhook's agents (docs/controller.md, "ExternalSecrets
// served by the webhook"): what the injected pods'
// agents say, as the ExternalSecret's Ready condition. The controller watches only pods carrying the inject label (../runtime/informers.ts) and
// keeps a small index here: pod → the ExternalSecrets its annotations mount (read with the
// webhook's own parser, src/pod-contract/parse.ts) and the state of its agent, read from the pod's
// container statuses, which only the kubelet writes. Pods get no write right: an agent that
// fails leaves a value-free termination message (src/agent-config/termination.ts) the kubelet reports.
import type { V1ContainerState, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import type { ExternalSecret, ExternalSecretStatus } from '../../api/types.js';
import { AGENT_CONTAINER, AGENT_INIT_CONTAINER, INJECTED_ANNOTATION } from '../../pod-contract/annotations.js';
import { parseAnnotations } from '../../pod-contract/parse.js';
import { parseTerminationMessage } from '../../agent-config/termination.js';
import { bounded, readyCondition, withReady } from './status.js';

/** What one pod's agent did: its files are there, not yet, or it failed (value-free why). */
export type AgentState =
  | { state: 'ready' }
  | { state: 'pending' }
  | { state: 'failed'; why: string };

interface PodEntry {
  secrets: readonly string[];
  agent: AgentState;
}

/** What the pods mounting one ExternalSecret say. */
export interface PodsView {
  total: number;
  ready: number;
  /** A pod still waiting for its agent's first render, if any. */
  pending?: string;
  failed: { pod: string; why: string }[];
}

/** The Ready reasons written from pods: a status with another reason is a reconciler's. */
export const POD_REASONS: ReadonlySet<string> = new Set(['InjectedInPods', 'InjectionPending', 'AgentFailed', 'NoInjectedPods']);

const WAITING_FAILURES = /BackOff|Err|Invalid|Error/;

/** The ExternalSecrets a pod the webhook injected mounts (files and env), as the webhook read
 *  them; none for a pod it did not inject or whose annotations it would have refused. */
export function mountedExternalSecrets(pod: V1Pod): string[] {
  const ann = pod.metadata?.annotations;
  if (ann?.[INJECTED_ANNOTATION] === undefined) return [];
  const parsed = parseAnnotations(ann);
  if (!parsed.ok) return [];
  return [...new Set([...parsed.request.secrets, ...(parsed.request.env ?? []).map((e) => e.secret)])];
}

/** Why a terminated or waiting agent container failed, or undefined (not failed). */
function failure(c: V1ContainerStatus): string | undefined {
  const failed = (s: V1ContainerState | undefined) => (s?.terminated && s.terminated.exitCode !== 0 ? s.terminated : undefined);
  const term = failed(c.state) ?? failed(c.lastState);
  if (term) {
    const told = parseTerminationMessage(term.message);
    return told ?? `the agent exited with code ${term.exitCode}${term.reason ? ` (${bounded(term.reason, 64)})` : ''}; kubectl logs <pod> -c ${c.name}`;
  }
  const waiting = c.state?.waiting?.reason;
  return waiting && WAITING_FAILURES.test(waiting) ? `the agent container cannot start: ${bounded(waiting, 64)}` : undefined;
}

/** The agent's state from the pod's status: the first render is done when the init-only agent
 *  (or sidecar mode's init agent) exited 0, or when the native sidecar's startup probe passed. */
export function agentState(pod: V1Pod): AgentState {
  const mode = pod.metadata?.annotations?.[INJECTED_ANNOTATION];
  const name = mode === 'sidecar' ? AGENT_INIT_CONTAINER : AGENT_CONTAINER;
  const c = (pod.status?.initContainerStatuses ?? []).find((s) => s.name === name);
  if (!c) return { state: 'pending' };
  if (mode === 'native-sidecar' ? c.started === true : c.state?.terminated?.exitCode === 0) return { state: 'ready' };
  const why = failure(c);
  return why ? { state: 'failed', why } : { state: 'pending' };
}

const same = (a: PodEntry | undefined, b: PodEntry | undefined) => JSON.stringify(a) === JSON.stringify(b);

export class PodAgents {
  /** `ns/pod` → its entry; `ns/es` → the pods mounting it. */
  private readonly pods = new Map<string, PodEntry>();
  private readonly byEs = new Map<string, Set<string>>();

  /** Records a pod event; returns the names of the ExternalSecrets (in the pod's namespace)
   *  whose view changed. Pod updates that change neither mounts nor agent state return none,
   *  so the status writes they cause are bounded by the agents' transitions. */
  update(pod: V1Pod, verb: 'add' | 'update' | 'delete'): string[] {
    const ns = pod.metadata?.namespace ?? '';
    const key = `${ns}/${pod.metadata?.name ?? ''}`;
    const prev = this.pods.get(key);
    const gone = verb === 'delete' || !!pod.metadata?.deletionTimestamp;
    const secrets = gone ? [] : mountedExternalSecrets(pod);
    const next = secrets.length ? { secrets, agent: agentState(pod) } : undefined;
    if (same(prev, next)) return [];
    const before = prev?.secrets ?? [];
    for (const es of before) this.unlink(`${ns}/${es}`, key);
    if (next) this.pods.set(key, next);
    else this.pods.delete(key);
    for (const es of secrets) this.link(`${ns}/${es}`, key);
    return [...new Set([...before, ...secrets])];
  }

  private link(es: string, pod: string): void {
    let set = this.byEs.get(es);
    if (!set) this.byEs.set(es, (set = new Set()));
    set.add(pod);
  }

  private unlink(es: string, pod: string): void {
    const set = this.byEs.get(es);
    set?.delete(pod);
    if (set && !set.size) this.byEs.delete(es);
  }

  view(ns: string, es: string): PodsView {
    const out: PodsView = { total: 0, ready: 0, failed: [] };
    for (const key of this.byEs.get(`${ns}/${es}`) ?? []) {
      const agent = this.pods.get(key)?.agent;
      if (!agent) continue;
      const pod = key.slice(ns.length + 1);
      out.total++;
      if (agent.state === 'ready') out.ready++;
      else if (agent.state === 'failed') out.failed.push({ pod, why: agent.why });
      else out.pending ??= pod;
    }
    out.failed.sort((a, b) => a.pod.localeCompare(b.pod));
    return out;
  }
}

/** The status an ExternalSecret served by the agents gets from its pods' view; `servedWhy`
 *  says why the controller does not sync it itself. Undefined when no pod mounts it. */
/** Why the status comes from pods: said the same by every controller (see reconcile.ts). */
const SERVED = "served by the pods' agents";

export function podsStatus(es: ExternalSecret, view: PodsView): ExternalSecretStatus | undefined {
  const prev = es.status?.conditions;
  const count = `${view.ready} of ${view.total} pods mounting it have their files`;
  if (!view.total) {
    // Only a status written from pods is replaced: it would otherwise say what is no longer so.
    if (!POD_REASONS.has(readyCondition(prev)?.reason ?? '')) return undefined;
    return { ...es.status, conditions: withReady(prev, 'Unknown', 'NoInjectedPods', `no pod mounts it now; ${SERVED}`) };
  }
  const [first, ...more] = view.failed;
  if (first) {
    const others = more.length ? `; ${more.length} more pods failing` : '';
    return { ...es.status, conditions: withReady(prev, 'False', 'AgentFailed', bounded(`pod "${first.pod}": ${first.why} (${count}${others})`)) };
  }
  const waiting = view.pending ? `the agent of pod "${view.pending}"${view.total - view.ready > 1 ? ` and ${view.total - view.ready - 1} more` : ''} has not completed its first render` : '';
  if (!view.ready) return { ...es.status, conditions: withReady(prev, 'False', 'InjectionPending', bounded(`${count}: ${waiting}`)) };
  return { ...es.status, conditions: withReady(prev, 'True', 'InjectedInPods', bounded(`${count}${waiting ? `; ${waiting}` : ''} (${SERVED})`)) };
}
