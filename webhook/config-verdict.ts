// The agent validator's verdict on an injected configuration text, remembered per text.
// Pods of one ReplicaSet carry the same configuration, so an admission burst (a scale-out,
// a rollout) validates each distinct text once. The validator is a pure function of the
// text, so the remembered verdict is the verdict; the memory is bounded by count and size.
import { LRUCache } from 'lru-cache';
import { agentConfigProblem } from '../src/agent-config/check.js';

/** ~2–4 KiB per text in practice: 256 distinct texts stay well under the size bound. */
const verdicts = new LRUCache<string, string>({ max: 256, maxSize: 2 * 1024 * 1024, sizeCalculation: (_v, text) => Math.max(1, text.length) });

/** '' when the agent accepts `text`, else "field: problem" (the agent's own words).
 *  Throws on text that is not JSON (the webhook wrote it: a bug, not an input). */
export function configVerdict(text: string): string {
  let verdict = verdicts.get(text);
  if (verdict === undefined) {
    const problem = agentConfigProblem(JSON.parse(text));
    verdict = problem ? `${problem.field}: ${problem.problem}` : '';
    verdicts.set(text, verdict);
  }
  return verdict;
}

/** Texts remembered now (for tests of the bound). */
export function rememberedVerdicts(): number {
  return verdicts.size;
}
