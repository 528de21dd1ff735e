// What ESI knows about the `kubernetes` provider without loading its client.
import { fieldReferences } from '../fields.js';
import { field } from '../refs.js';
import { capabilities } from '../define.js';
import { metadataChecker, oneOf, stringMap } from '../push-metadata.js';
import type { ProviderMeta } from '../types.js';
import { FIELDS, validateSpec } from './spec.js';

export const meta: ProviderMeta = {
  name: 'kubernetes',
  // Find by name or labels; a pushed property is the data key of the Secret.
  capabilities: capabilities(['name', 'tags'], { versions: false, pushProperty: 'key' }),
  validateSpec,
  // Push metadata: the remote Secret's labels and annotations.
  validatePushMetadata: metadataChecker('kubernetes', { labels: stringMap, annotations: stringMap, targetMergePolicy: oneOf('Merge', 'Replace', 'Ignore') }, {
    sourceMergePolicy: "the provider never sees the source Secret's own labels and annotations",
  }),
  references: (spec) => fieldReferences('kubernetes', FIELDS, spec),
  identity: {
    // No auth (in-cluster) or auth.serviceAccount: the pod's own token.
    ambient: (spec) => field(spec, 'auth') === undefined || field(spec, 'auth.serviceAccount') !== undefined,
    // '' = a token for the Kubernetes API itself.
    audience: () => '',
  },
  // The order of connection.ts (resolveConnection): authRef, a token, a certificate, then
  // the token of whatever runs the client, for the ServiceAccount auth.serviceAccount names or its own.
  ambientIdentity: (spec) => field(spec, 'authRef') === undefined && field(spec, 'auth.token.bearerToken') === undefined &&
    (field(spec, 'auth.cert.clientCert') === undefined || field(spec, 'auth.cert.clientKey') === undefined) &&
    field(spec, 'auth.serviceAccount') === undefined
    ? { field: 'kubernetes.auth', source: 'the service-account token of the process running the client (in-cluster)', kind: 'token' }
    : undefined,
};
