// One admission decision, shared by the webhook server and `esi inject`:
// parse annotations → resolve against the caches → check the pod → mutate → diff.
import type { V1Pod } from '@kubernetes/client-node';
import fastJsonPatch from 'fast-json-patch';
import { INJECT_LABEL } from './annotations.js';
import { checkPod, isInjected, mutatePod, type AgentSettings } from './mutate.js';
import { parseAnnotations } from './parse.js';
import { resolve, type ObjectLookup, type Resolved, type ResolveOptions } from './resolve.js';

export type JsonPatchOp = fastJsonPatch.Operation;

export interface AdmitContext {
  namespace: string;
  lookup: ObjectLookup;
  resolve: ResolveOptions;
  agent: AgentSettings;
}

export type AdmitResult =
  | { kind: 'skipped' }
  | { kind: 'unchanged' }
  | { kind: 'denied'; reason: DenialReason; message: string }
  | { kind: 'mutated'; pod: V1Pod; patch: JsonPatchOp[]; warnings: string[] };

export type DenialReason = 'annotation' | 'resolution' | 'pod';

function podName(pod: V1Pod): string {
  return pod.metadata?.name ?? (pod.metadata?.generateName ? `${pod.metadata.generateName}*` : '(unnamed)');
}

function deny(pod: V1Pod, reason: DenialReason, problems: string[]): AdmitResult {
  return { kind: 'denied', reason, message: `ESI cannot inject secrets into pod "${podName(pod)}": ${problems.join('; ')}` };
}

function warningsFor(pod: V1Pod, mode: string, resolved: Resolved): string[] {
  const warnings: string[] = [];
  if (mode === 'sidecar' && pod.metadata?.ownerReferences?.some((o) => o.kind === 'Job')) {
    warnings.push('esi.dev/mode: "sidecar" keeps a Job\'s pod running after its containers finish; use "native-sidecar" or "init-only"');
  }
  for (const store of resolved.stores.values()) {
    if (store.warning) warnings.push(`${store.kind} "${store.name}" ${store.warning}`);
  }
  return warnings;
}

export function admit(pod: V1Pod, ctx: AdmitContext): AdmitResult {
  if (pod.metadata?.labels?.[INJECT_LABEL] !== 'true') return { kind: 'skipped' };
  if (isInjected(pod)) return { kind: 'unchanged' };
  const parsed = parseAnnotations(pod.metadata?.annotations);
  if (!parsed.ok) return deny(pod, 'annotation', parsed.problems);
  const request = parsed.request;
  const podProblems = checkPod(pod, request);
  if (podProblems.length) return deny(pod, 'pod', podProblems);
  const facts = { namespace: ctx.namespace, serviceAccountName: pod.spec?.serviceAccountName || 'default' };
  const resolved = resolve(facts, request, ctx.lookup, ctx.resolve);
  if (!resolved.ok) return deny(pod, 'resolution', resolved.problems);
  const agent = request.tokenAudience ? { ...ctx.agent, defaultTokenAudience: request.tokenAudience } : ctx.agent;
  const mutated = mutatePod(pod, { namespace: ctx.namespace, request, resolved: resolved.resolved, agent });
  const warnings = warningsFor(pod, request.mode, resolved.resolved);
  return { kind: 'mutated', pod: mutated, patch: fastJsonPatch.compare(pod, mutated), warnings };
}
