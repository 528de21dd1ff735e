// What ESI knows about the `gcpsm` provider without loading the Google SDKs.
import { fieldReferences } from '../fields.js';
import { field } from '../refs.js';
import { capabilities } from '../define.js';
import type { ProviderMeta } from '../types.js';
import { validatePushMetadata } from './push-metadata.js';
import { FIELDS, federationPlan, validateSpec } from './spec.js';

export const meta: ProviderMeta = {
  name: 'gcpsm',
  // ESO sets a pushed property with sjson: a dotted path into a nested object.
  capabilities: capabilities(['name', 'tags', 'path'], { versions: true, pushProperty: 'path', ownershipMark: true }),
  validateSpec,
  validatePushMetadata,
  references: (spec) => fieldReferences('gcpsm', FIELDS, spec),
  identity: {
    // No auth = Application Default Credentials, which on GKE is the pod's identity.
    ambient: (spec) => field(spec, 'auth') === undefined || field(spec, 'auth.workloadIdentity') !== undefined,
    audience: (spec) => {
      const wi = field(spec, 'auth.workloadIdentity');
      const project = (spec as { projectID?: unknown } | null)?.projectID;
      const plan = wi ? federationPlan(wi as never, typeof project === 'string' ? project : undefined) : undefined;
      return plan && !Array.isArray(plan) ? plan.tokenAudience : undefined;
    },
  },
  // Neither a key nor workload identity = Application Default Credentials (auth.ts, authMode).
  ambientIdentity: (spec) => field(spec, 'auth.secretRef.secretAccessKeySecretRef') === undefined && field(spec, 'auth.workloadIdentity') === undefined
    ? { field: 'gcpsm.auth', source: 'the Application Default Credentials of the process running the client (metadata server, GOOGLE_APPLICATION_CREDENTIALS)', kind: 'environment' }
    : undefined,
};
