// Whether a store refused a read because of its rate or its quota (HTTP 429 or 503, AWS
// ThrottlingException, GCP RESOURCE_EXHAUSTED, Azure's 429, "rate limit" / "quota" in the
// provider's message). The one rule, used by the agent to slow its refreshes and by the
// controller to shrink the store's fleet budget (docs/fleet.md, "When a store throttles").
// Providers fold these answers into their codes (mostly Unreachable) with the status or the
// service's own name in the message, which is what is matched here.
import { ProviderError } from './types.js';

const THROTTLED = /\b(429|503)\b|throttl|too many requests|rate.?limit|quota|resource_exhausted|slow ?down|requestlimitexceeded/i;

export function isThrottled(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof ProviderError && (e.code === 'NotFound' || e.code === 'AuthFailed' || e.code === 'Forbidden' || e.code === 'InvalidSpec')) return false;
    if (e instanceof Error && THROTTLED.test(e.message)) return true;
  }
  return false;
}
