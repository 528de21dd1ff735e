// What ESI knows about the `akeyless` provider without loading its client.
import { capabilities } from '../define.js';
import { field } from '../refs.js';
import type { ProviderMeta } from '../types.js';
import { references, validateSpec } from './spec.js';

/** Kubernetes auth that names no token Secret logs in with a service-account token. */
const withoutTokenSecret = (spec: unknown) => field(spec, 'authSecretRef.kubernetesAuth') !== undefined && field(spec, 'authSecretRef.kubernetesAuth.secretRef') === undefined;

export const meta: ProviderMeta = {
  name: 'akeyless',
  // Reads and writes (ESO's store is ReadWrite; pushes write static secrets, a property is
  // one key of the item's JSON object); find by name regexp, by tag values and under a
  // folder (`path`); static and rotated secrets are versioned. The tag on created items is
  // ESO's and guards only deletion, so the reconciler's own record decides (no mark).
  capabilities: capabilities(['name', 'tags', 'path'], { versions: true, pushProperty: 'key' }),
  validateSpec,
  references,
  identity: { ambient: withoutTokenSecret, audience: () => undefined },
  ambientIdentity: (spec) => withoutTokenSecret(spec) && field(spec, 'authSecretRef.kubernetesAuth.serviceAccountRef') === undefined
    ? { field: 'akeyless.authSecretRef.kubernetesAuth.serviceAccountRef', source: 'the service-account token of the process running the client (kubernetes auth)', kind: 'token' }
    : undefined,
};
