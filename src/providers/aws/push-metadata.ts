// PushSecret metadata for the `aws` provider (SDK-free; meta.ts exports the check).
// Secrets Manager applies ESO's fields: `tags` (added to the secret; the managed-by mark
// stays), `description`, `kmsKeyID` (the KMS key encrypting new versions) and
// `secretPushFormat` (`string`: SecretString, `binary`: SecretBinary; default: text as
// SecretString, other bytes as SecretBinary). Parameter Store applies none of them.
import { metadataChecker, oneOf, stringMap, text } from '../push-metadata.js';

export interface SecretsManagerPushMetadata {
  tags?: Record<string, string>;
  description?: string;
  kmsKeyID?: string;
  secretPushFormat?: 'string' | 'binary';
}

export const validatePushMetadata = metadataChecker('aws', {
  tags: stringMap,
  description: text,
  kmsKeyID: text,
  secretPushFormat: oneOf('string', 'binary'),
});
