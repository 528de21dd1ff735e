// What ESI knows about the `aws` provider without loading an AWS SDK.
import type { AWSProvider } from '../../api/types.js';
import { fieldReferences } from '../fields.js';
import { field } from '../refs.js';
import { capabilities } from '../define.js';
import type { ProviderMeta } from '../types.js';
import { validatePushMetadata } from './push-metadata.js';
import { FIELDS, STS_AUDIENCE, usesWebIdentity, validateSpec } from './spec.js';

export const meta: ProviderMeta = {
  name: 'aws',
  // ESO sets a pushed property with sjson: a dotted path into a nested object.
  capabilities: capabilities(['name', 'tags', 'path'], { versions: true, pushProperty: 'path', ownershipMark: true }),
  validateSpec,
  validatePushMetadata,
  references: (spec) => fieldReferences('aws', FIELDS, spec),
  identity: {
    // Without static keys, ESI assumes the role with the pod's token (STS web identity).
    ambient: (spec) => typeof spec === 'object' && spec !== null && usesWebIdentity(spec as AWSProvider),
    audience: () => STS_AUDIENCE,
  },
  // Web identity without a serviceAccountRef exchanges the token of whatever runs the client;
  // in the controller, no auth may use its EKS Pod Identity instead (auth.ts).
  ambientIdentity: (spec) => typeof spec === 'object' && spec !== null && usesWebIdentity(spec as AWSProvider) && field(spec, 'auth.jwt.serviceAccountRef') === undefined
    ? { field: field(spec, 'auth') ? 'aws.auth.jwt.serviceAccountRef' : 'aws.auth', source: 'the service-account token of the process running the client (STS web identity) or, without auth, its EKS Pod Identity', kind: 'token' }
    : undefined,
};
