// What ESI knows about the `bitwardensecretsmanager` provider without loading its client.
import { capabilities } from '../define.js';
import type { ProviderMeta } from '../types.js';
import { references, validateSpec } from './spec.js';

export const meta: ProviderMeta = {
  name: 'bitwardensecretsmanager',
  // find: every secret of the organization by id (ESO), narrowed by a name regexp on the id.
  // A push writes one secret (key = remoteKey) of the store's project; no property.
  capabilities: capabilities(['name'], { versions: false, pushProperty: 'key' }),
  validateSpec,
  references,
};
