// What ESI knows about the `grpc` provider (the out-of-tree store contract,
// docs/providers/grpc.md) without loading gRPC.
import { capabilities } from '../define.js';
import type { ProviderMeta } from '../types.js';
import { references, validateSpec } from './spec.js';

export const meta: ProviderMeta = {
  name: 'grpc',
  // The contract has no list call; versions go to the plugin, which applies a pushed
  // property as one flat key of a JSON object (the contract and the reference plugin).
  capabilities: capabilities([], { versions: true, pushProperty: 'key' }),
  validateSpec,
  // The whole TLS Secret (ca.crt, tls.crt, tls.key) is mounted.
  references,
};
