// Whether this controller serves stores without spec.controller ("unclassed") when
// --claim-unclassed is `auto` (the default): not where another controller, External Secrets
// Operator first of all, already serves them. Two reconcilers writing one Secret fight, and
// ESO cannot be asked; the external-secrets.io CRDs tell. ESI's carry
// `app.kubernetes.io/part-of: esi` (charts/esi/files/crds/); CRDs without it were installed by
// someone else, ESO's chart or bundle in practice, so unclassed stores are left to them.
// docs/controller.md "Next to External Secrets Operator".
import { isKubeStatus, type KubeRest } from '../../kube/rest.js';
import { CUSTOM_RESOURCE_DEFINITIONS, resourcePath } from '../../kube/paths.js';

const PROBE_CRD = 'externalsecrets.external-secrets.io';
const ESI_MARK = ['app.kubernetes.io/part-of', 'esi'] as const;

export interface ClaimDecision {
  claim: boolean;
  /** Why, for the start-up log line (and what to pass to decide otherwise). */
  why: string;
}

/** `true`/`false` as given; `auto` decided from the ExternalSecret CRD's origin. */
export async function decideClaimUnclassed(flag: 'true' | 'false' | 'auto', rest: KubeRest): Promise<ClaimDecision> {
  if (flag !== 'auto') return { claim: flag === 'true', why: `--claim-unclassed=${flag}` };
  let labels: Record<string, string> | undefined;
  try {
    labels = (await rest.get<{ metadata?: { labels?: Record<string, string> } }>(resourcePath(CUSTOM_RESOURCE_DEFINITIONS, { name: PROBE_CRD }))).metadata?.labels ?? {};
  } catch (err) {
    if (isKubeStatus(err, 404)) return { claim: true, why: `no ${PROBE_CRD} CRD yet: nothing else serves the API` };
    // Unknown (RBAC, an outage): the side that cannot make two writers.
    return { claim: false, why: `cannot read the ${PROBE_CRD} CRD (${(err as Error).message}): unclassed stores are left alone; pass --claim-unclassed=true to serve them` };
  }
  if (labels[ESI_MARK[0]] === ESI_MARK[1]) return { claim: true, why: `the ${PROBE_CRD} CRD is ESI's` };
  return {
    claim: false,
    why: `the ${PROBE_CRD} CRD was not installed by ESI (External Secrets Operator's?): stores without spec.controller are left to it; pass --claim-unclassed=true to serve them (after removing ESO)`,
  };
}
