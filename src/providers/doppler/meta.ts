// What ESI knows about the `doppler` provider without loading its client.
import { capabilities } from '../define.js';
import type { ProviderMeta } from '../types.js';
import { references, validateSpec } from './spec.js';

export const meta: ProviderMeta = {
  name: 'doppler',
  // Reads only (ESO's Doppler provider has no PushSecret); find by name regexp and by name
  // prefix (`path`) over the config's secrets.
  capabilities: capabilities(['name', 'path'], { versions: false, pushProperty: 'key', readOnly: true }),
  validateSpec,
  references,
};
