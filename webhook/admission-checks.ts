// The admission checks of an injection request, before any patch is built: the pod's shape
// against what the request asks (webhook/mutate.ts builds the patch only for a pod these
// accept), and the credential references the agent's volumes would be made from.
import type { V1Pod } from '@kubernetes/client-node';
import type { InjectionRequest } from '../src/pod-contract/annotations.js';
import { CHANNEL_VOLUME } from '../src/pod-contract/channel.js';
import { envClashes, envPodProblems } from '../src/pod-contract/env.js';
import { credentialRefProblems } from '../src/providers/spec-checks.js';
import { AGENT_INTERNAL_DIR, afterNativeSidecars, SECRETS_VOLUME, targets, TOKENS_VOLUME } from './mutate.js';
import type { Resolved } from './resolve.js';

const overlaps = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);

/** Credential references the agent's volumes would be built from, checked before use by
 *  the rules every provider's spec check applies (src/providers/spec-checks.ts): a
 *  provider that declares a reference without checking it still cannot name a path. */
export function checkCredentials(resolved: Resolved): string[] {
  const problems: string[] = [];
  for (const store of resolved.stores.values()) {
    const what = `${store.kind} "${store.name}"`;
    for (const c of store.credentials) problems.push(...credentialRefProblems(c).map((p) => `${what}: ${p}`));
  }
  return problems;
}

/** Pod-shape problems that make the request impossible (each names what to fix). */
export function checkPod(pod: V1Pod, request: InjectionRequest): string[] {
  const problems: string[] = [];
  if (overlaps(request.mountPath, AGENT_INTERNAL_DIR)) {
    problems.push(`esi.dev/mount-path: ${request.mountPath} overlaps ${AGENT_INTERNAL_DIR}, where the agent mounts its tokens and credentials; choose another path`);
  }
  if (!pod.metadata?.name && !pod.metadata?.generateName) problems.push('metadata.name or metadata.generateName is required');
  if (request.env) problems.push(...envPodProblems(pod, targets(pod, request), afterNativeSidecars(pod.spec?.initContainers ?? [])));
  return [...problems, ...checkTargets(pod, request)];
}

/** Problems known once the ExternalSecrets are resolved: an `esi.dev/env` variable a
 *  target container already sets. */
export function checkResolved(pod: V1Pod, request: InjectionRequest, resolved: Resolved): string[] {
  return resolved.envVars ? envClashes(targets(pod, request), resolved.envVars) : [];
}

function checkTargets(pod: V1Pod, request: InjectionRequest): string[] {
  const problems: string[] = [];
  const spec = pod.spec;
  const all = [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])];
  for (const name of request.containers ?? []) {
    if (!all.some((c) => c.name === name)) problems.push(`esi.dev/containers: the pod has no container named "${name}"`);
  }
  for (const c of targets(pod, request)) {
    if (c.volumeMounts?.some((m) => m.mountPath === request.mountPath)) {
      problems.push(`esi.dev/mount-path: container "${c.name}" already mounts something at ${request.mountPath}; choose another path`);
    }
  }
  const taken = new Set((spec?.volumes ?? []).map((v) => v.name));
  for (const v of [SECRETS_VOLUME, TOKENS_VOLUME, CHANNEL_VOLUME]) if (taken.has(v)) problems.push(`the pod already has a volume named "${v}", which ESI needs; rename it`);
  if (request.onChange?.type === 'signal' && !spec?.shareProcessNamespace) {
    problems.push('esi.dev/on-change: signalling a process needs spec.shareProcessNamespace: true on the pod');
  }
  return problems;
}
