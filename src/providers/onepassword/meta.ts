// What ESI knows about the `onepassword` provider (1Password Connect) without loading its client.
import { capabilities } from '../define.js';
import type { ProviderMeta } from '../types.js';
import { references, validateSpec } from './spec.js';

export const meta: ProviderMeta = {
  name: 'onepassword',
  // find: path = an item's title, name = field labels (ESO). A pushed property is one
  // field label of the item (default `password`).
  capabilities: capabilities(['name', 'path'], { versions: false, pushProperty: 'key' }),
  validateSpec,
  references,
};
