// What ESI knows about the `infisical` provider without loading its client.
import { capabilities } from '../define.js';
import type { ProviderMeta } from '../types.js';
import { references, validateSpec } from './spec.js';

export const meta: ProviderMeta = {
  name: 'infisical',
  // Reads only (ESO's Infisical store is read-only in the API version ESI follows); find by
  // name regexp and by name prefix (`path`) over the scope's secrets.
  capabilities: capabilities(['name', 'path'], { versions: false, pushProperty: 'key', readOnly: true }),
  validateSpec,
  references,
};
