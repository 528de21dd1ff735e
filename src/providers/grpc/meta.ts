// What ESI knows about the `grpc` provider (the out-of-tree store contract,
// docs/providers/grpc.md) without loading gRPC.
import { References } from '../refs.js';
import type { ProviderMeta } from '../types.js';
import { validateSpec } from './spec.js';

export const meta: ProviderMeta = {
  name: 'grpc',
  capabilities: {
    read: true,
    write: true,
    // The contract has no list call.
    find: { name: false, tags: false, path: false },
    // RemoteRef.version is passed to the plugin.
    versions: true,
    // The plugin applies a pushed property; the contract (and the reference plugin) makes
    // it one flat key of a JSON object.
    pushProperty: 'key',
  },
  validateSpec,
  // The whole TLS Secret (ca.crt, tls.crt, tls.key) is mounted.
  references: (spec) => new References('grpc', spec).secret('tlsSecretRef'),
};
