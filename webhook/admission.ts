// One admission decision, shared by the webhook server and `esi inject`:
// parse annotations → resolve against the caches → check the pod → mutate → diff.
import type { V1Pod } from '@kubernetes/client-node';
import fastJsonPatch from 'fast-json-patch';
import { INJECT_LABEL } from '../src/pod-contract/annotations.js';
import { AGENT_CONFIG_ENV } from '../src/agent-config/types.js';
import { configVerdict } from './config-verdict.js';
import { checkCredentials, checkPod, checkResolved } from './admission-checks.js';
import { isAgent, isInjected, mutatePod, placeAfterNativeSidecars, type AgentSettings } from './mutate.js';
import { agentForNamespace, podSecurityProblems } from './namespace-policy.js';
import { joinProblems, parseAnnotations, quoteShort } from '../src/pod-contract/parse.js';
import { podShapeProblems } from './pod-shape.js';
import { resolve, type ObjectLookup, type Resolved, type ResolveOptions } from './resolve.js';
import { envClusterProblem, type ClusterVersion } from '../src/pod-contract/env.js';
import { isObject } from '../src/json-object.js';

export type JsonPatchOp = fastJsonPatch.Operation;

export interface AdmitContext {
  namespace: string;
  lookup: ObjectLookup;
  resolve: ResolveOptions;
  agent: AgentSettings;
  /** The apiserver's version when the webhook knows it (esi.dev/env needs 1.35+). */
  clusterVersion?: ClusterVersion;
}

export type AdmitResult =
  | { kind: 'skipped' }
  | { kind: 'unchanged' }
  /** An injected pod re-admitted after another webhook added a native sidecar behind the
   *  agent: the agent moved behind it, nothing else changed. */
  | { kind: 'moved'; pod: V1Pod; patch: JsonPatchOp[] }
  | { kind: 'denied'; reason: DenialReason; message: string }
  | { kind: 'mutated'; pod: V1Pod; patch: JsonPatchOp[]; warnings: string[] };

export type DenialReason = 'annotation' | 'resolution' | 'pod';

function podName(pod: V1Pod): string {
  const { name, generateName } = pod.metadata ?? {};
  if (typeof name === 'string') return quoteShort(name);
  return typeof generateName === 'string' ? quoteShort(`${generateName}*`) : '(unnamed)';
}

/** The denial; its message is bounded (MAX_DENIAL_LENGTH) whatever the input. */
function deny(pod: V1Pod, reason: DenialReason, problems: string[]): AdmitResult {
  return { kind: 'denied', reason, message: `ESI cannot inject secrets into pod ${podName(pod)}: ${joinProblems(problems)}` };
}


function injectLabel(pod: unknown): unknown {
  const meta = isObject(pod) ? pod.metadata : undefined;
  const labels = isObject(meta) ? meta.labels : undefined;
  return isObject(labels) ? labels[INJECT_LABEL] : undefined;
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

/** The agent validates its configuration with the same checker: a config it would refuse
 *  (and exit 2, the app never starting) is refused here instead, naming the field. */
function agentConfigProblems(pod: V1Pod): string[] {
  const problems: string[] = [];
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    if (!isAgent(c)) continue;
    const verdict = configVerdict(c.env?.find((e) => e.name === AGENT_CONFIG_ENV)?.value ?? '');
    if (verdict) problems.push(`the agent configuration ESI would write is invalid: ${verdict}`);
  }
  return [...new Set(problems)];
}

export function admit(pod: V1Pod, ctx: AdmitContext): AdmitResult {
  if (injectLabel(pod) !== 'true') return { kind: 'skipped' };
  const shape = podShapeProblems(pod);
  if (shape.length) return deny(pod, 'pod', shape);
  if (isInjected(pod)) {
    const placed = placeAfterNativeSidecars(pod);
    return placed === pod ? { kind: 'unchanged' } : { kind: 'moved', pod: placed, patch: fastJsonPatch.compare(pod, placed) };
  }
  const parsed = parseAnnotations(pod.metadata?.annotations);
  if (!parsed.ok) return deny(pod, 'annotation', parsed.problems);
  const request = parsed.request;
  const cluster = request.env ? envClusterProblem(ctx.clusterVersion) : undefined;
  if (cluster) return deny(pod, 'annotation', [cluster]);
  const ns = ctx.lookup.namespace(ctx.namespace);
  const operator = agentForNamespace(ctx.agent, ns);
  const podProblems = [...checkPod(pod, request), ...podSecurityProblems(pod, request, operator, ns)];
  if (podProblems.length) return deny(pod, 'pod', podProblems);
  const facts = { namespace: ctx.namespace, serviceAccountName: pod.spec?.serviceAccountName || 'default' };
  const resolved = resolve(facts, request, ctx.lookup, ctx.resolve);
  if (!resolved.ok) return deny(pod, 'resolution', resolved.problems);
  const credentialProblems = checkCredentials(resolved.resolved);
  if (credentialProblems.length) return deny(pod, 'resolution', credentialProblems);
  const resolvedProblems = checkResolved(pod, request, resolved.resolved);
  if (resolvedProblems.length) return deny(pod, 'pod', resolvedProblems);
  const agent = request.tokenAudience ? { ...operator, defaultTokenAudience: request.tokenAudience } : operator;
  const mutated = mutatePod(pod, { namespace: ctx.namespace, request, resolved: resolved.resolved, agent });
  const configProblems = agentConfigProblems(mutated);
  if (configProblems.length) return deny(pod, 'pod', configProblems);
  const warnings = warningsFor(pod, request.mode, resolved.resolved);
  return { kind: 'mutated', pod: mutated, patch: fastJsonPatch.compare(pod, mutated), warnings };
}
