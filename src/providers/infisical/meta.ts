// What ESI knows about the `infisical` provider without loading its client.
import { capabilities } from '../define.js';
import type { ProviderMeta } from '../types.js';
import { references, validateSpec } from './spec.js';

export const meta: ProviderMeta = {
  name: 'infisical',
  // Reads and writes (ESO's store creates, updates and deletes for PushSecret; a property is
  // a dotted path into the secret's JSON value, as ESO sets it); find by name regexp and by name
  // prefix (`path`) over the scope's secrets. No ownership mark: the reconciler's record decides.
  capabilities: capabilities(['name', 'path'], { versions: false, pushProperty: 'path' }),
  validateSpec,
  references,
};
