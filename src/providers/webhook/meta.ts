// What ESI knows about the `webhook` provider without loading its client.
import { capabilities } from '../define.js';
import type { ProviderMeta } from '../types.js';
import { references, validateSpec } from './spec.js';

export const meta: ProviderMeta = {
  name: 'webhook',
  // Reads only: one templated request per reference. No find, no versions (remoteRef.version
  // is template data), no PushSecret (docs/providers/webhook.md).
  capabilities: capabilities([], { versions: false, pushProperty: 'key', readOnly: true }),
  validateSpec,
  references,
};
