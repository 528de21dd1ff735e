// The gcpsm store spec without I/O or SDKs: validation and the workload identity
// federation plan (which token the pod presents, for which STS audience).
import type { GCPWorkloadIdentity } from '../../api/types.js';
import { fieldProblems, type FieldRule } from '../fields.js';
import { isObject } from '../../json-object.js';

/** A workload identity pool provider of IAM (non-GKE clusters federate through one). */
const WIF_PROVIDER = /^(?:https:)?(\/\/iam\.googleapis\.com\/projects\/\d+\/locations\/global\/workloadIdentityPools\/[^/]+\/providers\/[^/]+)$/;

/** What the token exchange needs: which token to present and for which STS audience. */
export interface FederationPlan {
  /** Audience of the pod's projected token (what the webhook mounts for this store). */
  tokenAudience: string;
  /** `audience` of the STS token exchange. */
  stsAudience: string;
  /** `gke` (the cluster's own identity namespace) or `pool` (an IAM workload identity pool provider). */
  kind: 'gke' | 'pool';
}

/** The token exchange of `auth.workloadIdentity`, or a list of what is missing.
 *  - `serviceAccountRef.audiences[0]` naming an IAM pool provider
 *    (`//iam.googleapis.com/projects/<number>/locations/global/workloadIdentityPools/<pool>/providers/<provider>`,
 *    optionally with `https:`): any cluster whose OIDC issuer the provider trusts.
 *  - otherwise GKE: `identitynamespace:<project>.svc.id.goog:https://container.googleapis.com/v1/projects/<project>/locations/<clusterLocation>/clusters/<clusterName>`,
 *    with a token for `<project>.svc.id.goog` (or `audiences[0]` when set). */
export function federationPlan(wi: GCPWorkloadIdentity, projectID: string | undefined): FederationPlan | string[] {
  const first = wi.serviceAccountRef?.audiences?.[0];
  const pool = first ? WIF_PROVIDER.exec(first) : null;
  if (pool) return { kind: 'pool', tokenAudience: first!, stsAudience: pool[1]! };
  const project = wi.clusterProjectID || projectID;
  const missing: string[] = [];
  if (!project) missing.push('workloadIdentity.clusterProjectID (or projectID)');
  if (!wi.clusterLocation) missing.push('workloadIdentity.clusterLocation');
  if (!wi.clusterName) missing.push('workloadIdentity.clusterName');
  if (missing.length > 0) return missing;
  const idPool = `${project}.svc.id.goog`;
  const idProvider = `https://container.googleapis.com/v1/projects/${project}/locations/${wi.clusterLocation}/clusters/${wi.clusterName}`;
  return { kind: 'gke', tokenAudience: first || idPool, stsAudience: `identitynamespace:${idPool}:${idProvider}` };
}

const optString = (v: unknown): boolean => v === undefined || typeof v === 'string';

const SERVICE_ACCOUNT: FieldRule = { path: 'auth.workloadIdentity.serviceAccountRef', kind: 'serviceAccount', required: 'withParent' };
/** Every field that references a Secret key or a ServiceAccount. */
export const FIELDS: readonly FieldRule[] = [
  { path: 'auth.secretRef.secretAccessKeySecretRef', kind: 'secretKey', required: 'withParent' },
  SERVICE_ACCOUNT,
];

function validateAuth(spec: Record<string, unknown>): string[] {
  const auth = spec.auth;
  if (auth === undefined) return [];
  if (!isObject(auth)) return ['gcpsm.auth must be an object'];
  const problems = fieldProblems('gcpsm', FIELDS, spec);
  if (auth.secretRef !== undefined && !isObject(auth.secretRef)) problems.push('gcpsm.auth.secretRef must be an object with secretAccessKeySecretRef');
  const wi = auth.workloadIdentity;
  const projectID = spec.projectID;
  if (wi !== undefined) {
    if (!isObject(wi)) {
      problems.push('gcpsm.auth.workloadIdentity must be an object with serviceAccountRef');
    } else if (fieldProblems('gcpsm', [SERVICE_ACCOUNT], spec).length === 0) {
      // The plan reads the ServiceAccount's audiences: only once the selector is valid.
      const plan = federationPlan(wi as never, typeof projectID === 'string' ? projectID : undefined);
      if (Array.isArray(plan)) problems.push(`gcpsm.auth.workloadIdentity needs ${plan.join(', ')} (or serviceAccountRef.audiences[0] naming an IAM workload identity pool provider)`);
    }
  }
  if (auth.secretRef !== undefined && wi !== undefined) problems.push('gcpsm.auth: set secretRef or workloadIdentity, not both');
  return problems;
}

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['gcpsm must be an object'];
  const problems: string[] = [];
  if (!optString(spec.projectID)) problems.push('gcpsm.projectID must be a string');
  if (!optString(spec.location) || (typeof spec.location === 'string' && !/^[a-z0-9-]*$/.test(spec.location))) {
    problems.push('gcpsm.location must be a region name such as europe-west1');
  }
  return [...problems, ...validateAuth(spec)];
}

