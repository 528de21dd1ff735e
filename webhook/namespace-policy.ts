// What the pod's namespace says about the agent's security context. Read from the
// namespace the webhook already caches (webhook/cache.ts; admission makes no API call):
// a namespace not in the cache
// changes nothing, and the operator's setting (--agent-run-as-user) alone applies.
import type { V1Namespace, V1Pod } from '@kubernetes/client-node';
import type { InjectionRequest } from '../src/pod-contract/annotations.js';
import { signalNeedsKill, type AgentSettings } from './mutate.js';

/** Set by OpenShift on every namespace: the UIDs its restricted-v2 SCC assigns there,
 *  refusing any other (such as the agent's default 65532). */
const OPENSHIFT_UID_RANGE = 'openshift.io/sa.scc.uid-range';
/** Pod Security admission's enforced level. */
const POD_SECURITY_ENFORCE = 'pod-security.kubernetes.io/enforce';

/** The agent settings for a pod of `ns`: in an OpenShift namespace the agent's user is left
 *  to the platform (runAsUser 'auto'), whatever the operator set. */
export function agentForNamespace(agent: AgentSettings, ns: V1Namespace | undefined): AgentSettings {
  const openshift = ns?.metadata?.annotations?.[OPENSHIFT_UID_RANGE] !== undefined;
  return openshift && agent.runAsUser !== 'auto' ? { ...agent, runAsUser: 'auto' } : agent;
}

/** What Pod Security admission would refuse in the injected agent, said in the annotation's
 *  terms rather than as PodSecurity's 'unrestricted capabilities' on a container the user
 *  never wrote. The agent is otherwise "restricted"-compliant in every mode. */
export function podSecurityProblems(pod: V1Pod, request: InjectionRequest, agent: AgentSettings, ns: V1Namespace | undefined): string[] {
  if (ns?.metadata?.labels?.[POD_SECURITY_ENFORCE] !== 'restricted' || !signalNeedsKill(pod, request, agent)) return [];
  return [
    `esi.dev/on-change: "signal" needs the KILL capability for the agent, which the Pod Security level "restricted" enforced on namespace "${ns.metadata?.name ?? ''}" forbids; ` +
    'run the agent as the application\'s user (--agent-run-as-user auto and the pod\'s spec.securityContext.runAsUser, no other user on its containers), or notify the application over loopback HTTP (esi.dev/on-change: http://127.0.0.1:<port>/<path>)',
  ];
}
