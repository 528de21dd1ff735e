// Rotation decisions as a pure function of (stored state, time, what the webhook config
// trusts), plus the step that carries them out. Every replica runs the same decision on
// every tick; the Secret's resourceVersion makes exactly one replica's result stick.
import {
  generateCa, hasIdentity, isDue, isSignedBy, issueServingCert, keyMatchesCert, parseCert, pemLine, splitPemBundle,
  type CertInfo, type KeyPair, type ServingIdentity,
} from './pki.js';

/** What the Secret holds, decoded. */
export interface CertState {
  /** The active CA: it signs new serving certificates. */
  ca?: KeyPair;
  /** Older CAs that are still valid and stay trusted (in the bundle) until they expire. */
  previousCas: string[];
  /** The serving certificate and key. */
  serving?: KeyPair;
  /** Bumped on every bundle change; orders caBundle writes between replicas. */
  bundleVersion: number;
  /** When the active CA was created (ms); the serving cert switches to it only later. */
  caRotatedAt: number;
}

export type Action = 'new-ca' | 'drop-expired-cas' | 'new-serving';

export interface Plan {
  actions: Action[];
  /** Human-readable reasons, for the log (no key material). */
  reasons: string[];
}

export interface PlanInput {
  state: CertState;
  nowMs: number;
  identity: ServingIdentity;
  renewBeforeRatio: number;
  /** Time the bundle with a new CA must have been published before serving from that CA. */
  propagationDelayMs: number;
  /** The webhook configuration trusts the active CA (or does not exist: nobody to break). */
  activeCaPublished: boolean;
}

export interface Lifetimes {
  caLifetimeMs: number;
  certLifetimeMs: number;
}

/** PEM bundle of every CA to trust: the active one first, then the older ones. */
export function caBundle(state: CertState): string {
  return [state.ca?.certPem ?? '', ...state.previousCas].filter(Boolean).map(pemLine).join('');
}

function usableCa(state: CertState, nowMs: number): CertInfo | undefined {
  const info = parseCert(state.ca?.certPem);
  if (!info || !state.ca || !info.x509.ca || nowMs >= info.notAfter) return undefined;
  return keyMatchesCert(state.ca.certPem, state.ca.keyPem) ? info : undefined;
}

function planCa(input: PlanInput, plan: Plan): CertInfo | undefined {
  const { state, nowMs } = input;
  const ca = usableCa(state, nowMs);
  if (!ca) {
    plan.actions.push('new-ca');
    plan.reasons.push(state.ca ? 'CA is invalid, expired or does not match its key' : 'no CA yet');
  } else if (isDue(ca, nowMs, input.renewBeforeRatio)) {
    plan.actions.push('new-ca');
    plan.reasons.push(`CA ${ca.serial} passed ${input.renewBeforeRatio} of its lifetime`);
  }
  if (state.previousCas.some((pem) => (parseCert(pem)?.notAfter ?? 0) <= nowMs)) {
    plan.actions.push('drop-expired-cas');
    plan.reasons.push('an old CA expired');
  }
  return plan.actions.includes('new-ca') ? undefined : ca;
}

/**
 * Why the serving cert must be replaced, and whether it is urgent (the current one is
 * unusable, so waiting for the new CA to propagate would only prolong an outage).
 */
function servingProblem(input: PlanInput, activeCa: CertInfo | undefined): { reason: string; urgent: boolean } | undefined {
  const { state, nowMs } = input;
  const cert = parseCert(state.serving?.certPem);
  if (!cert || !state.serving || !keyMatchesCert(state.serving.certPem, state.serving.keyPem)) {
    return { reason: 'no usable serving certificate', urgent: true };
  }
  if (nowMs >= cert.notAfter) return { reason: `serving cert ${cert.serial} expired`, urgent: true };
  const trusted = [state.ca?.certPem, ...state.previousCas].map((p) => parseCert(p))
    .filter((c): c is CertInfo => c !== undefined && nowMs < c.notAfter);
  if (!trusted.some((ca) => isSignedBy(cert, ca))) {
    return { reason: `serving cert ${cert.serial} is not signed by a trusted CA`, urgent: true };
  }
  if (!hasIdentity(cert, input.identity)) return { reason: 'serving cert names changed', urgent: false };
  if (!activeCa || !isSignedBy(cert, activeCa)) return { reason: 'switching serving cert to the new CA', urgent: false };
  if (isDue(cert, nowMs, input.renewBeforeRatio)) {
    return { reason: `serving cert ${cert.serial} passed ${input.renewBeforeRatio} of its lifetime`, urgent: false };
  }
  return undefined;
}

/** Decides what to change. Empty actions means the stored state is fine as it is. */
export function decide(input: PlanInput): Plan {
  const plan: Plan = { actions: [], reasons: [] };
  const activeCa = planCa(input, plan);
  const problem = servingProblem(input, activeCa);
  if (!problem) return plan;
  // A serving cert from a CA the apiserver does not trust yet fails every admission: wait
  // until the bundle holding that CA has been published and had time to propagate.
  const newCaNow = plan.actions.includes('new-ca');
  const propagated = !newCaNow && input.activeCaPublished
    && input.nowMs - input.state.caRotatedAt >= input.propagationDelayMs;
  if (problem.urgent || propagated) {
    plan.actions.push('new-serving');
    plan.reasons.push(problem.reason);
  } else {
    plan.reasons.push(`${problem.reason}: waiting for the CA bundle to propagate`);
  }
  return plan;
}

/** Carries out a plan; returns the new state (the input is not modified). */
// eslint-disable-next-line max-params -- the plan's inputs, each a separate concept; see plan() above.
export async function applyPlan(
  state: CertState, plan: Plan, identity: ServingIdentity, nowMs: number, life: Lifetimes,
): Promise<CertState> {
  const next: CertState = { ...state, previousCas: [...state.previousCas] };
  if (plan.actions.includes('new-ca')) {
    const old = parseCert(state.ca?.certPem);
    if (state.ca && old && nowMs < old.notAfter) next.previousCas.unshift(state.ca.certPem);
    next.ca = await generateCa(nowMs, life.caLifetimeMs);
    next.caRotatedAt = nowMs;
  }
  next.previousCas = next.previousCas.filter((pem) => (parseCert(pem)?.notAfter ?? 0) > nowMs);
  if (plan.actions.includes('new-serving')) {
    if (!next.ca) throw new Error('no CA to sign the serving certificate');
    next.serving = await issueServingCert(next.ca, identity, nowMs, life.certLifetimeMs);
  }
  if (caBundle(next) !== caBundle(state)) {
    // max(): a replica whose clock is behind must still produce a larger version.
    next.bundleVersion = Math.max(nowMs, state.bundleVersion + 1);
  }
  return next;
}

/** Certificates of a PEM bundle other than `exclude` (used to recover previous CAs). */
export function otherCerts(bundle: string, exclude: string | undefined): string[] {
  const ex = parseCert(exclude)?.x509.fingerprint256;
  return splitPemBundle(bundle).filter((pem) => parseCert(pem)?.x509.fingerprint256 !== ex);
}
