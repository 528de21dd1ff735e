// PushSecret metadata for the `azurekv` provider (SDK-free; meta.ts exports the check):
// ESO's `tags` (set on the pushed version next to the managed-by mark, which wins) and
// `expirationDate` (the version's expiry, RFC 3339).
import { dateTime, metadataChecker, stringMap } from '../push-metadata.js';

export interface AzurePushMetadata {
  tags?: Record<string, string>;
  expirationDate?: string;
}

export const validatePushMetadata = metadataChecker('azurekv', { tags: stringMap, expirationDate: dateTime });
