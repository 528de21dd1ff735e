// What ESI knows about the `conjur` provider without loading its client.
import { capabilities } from '../define.js';
import type { ProviderMeta } from '../types.js';
import { references, validateSpec } from './spec.js';

export const meta: ProviderMeta = {
  name: 'conjur',
  // Reads only (ESO's Conjur store is read-only); find by name regexp and by annotations
  // (`tags`), over every variable the identity can see.
  capabilities: capabilities(['name', 'tags'], { versions: false, pushProperty: 'key', readOnly: true }),
  validateSpec,
  references,
  // JWT auth with serviceAccountRef authenticates with that ServiceAccount's token: in a
  // pod, the pod's own (its ServiceAccount must be the one named).
  identity: { ambient: () => false, audience: () => undefined },
};
