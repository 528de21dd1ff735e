// Static checks of `spec.provider.bitwardensecretsmanager` (ESO's Bitwarden Secrets Manager
// store, reached through the Bitwarden SDK server). No I/O.
import { fieldProblems, fieldReferences, type FieldRule } from '../fields.js';
import type { StoreReferences } from '../types.js';
import { isObject } from '../../json-object.js';

/** ESO's defaults. */
export const DEFAULTS = {
  apiURL: 'https://api.bitwarden.com',
  identityURL: 'https://identity.bitwarden.com',
  bitwardenServerSDKURL: 'https://bitwarden-sdk-server.external-secrets.svc.cluster.local:9998',
} as const;

export const FIELDS: readonly FieldRule[] = [
  { path: 'auth.secretRef.credentials', kind: 'secretKey', required: 'always' },
  // The SDK server holds the access token in transit: ESO requires https for it.
  { path: 'bitwardenServerSDKURL', kind: 'url', schemes: ['https:'] },
  { path: 'apiURL', kind: 'url' },
  { path: 'identityURL', kind: 'url' },
  { path: 'caBundle', kind: 'caBundle' },
  { path: 'caProvider', kind: 'caProvider' },
];

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['bitwardensecretsmanager must be an object'];
  const out: string[] = [];
  for (const f of ['organizationID', 'projectID'] as const) if (typeof spec[f] !== 'string' || spec[f] === '') out.push(`bitwardensecretsmanager.${f} must be a non-empty string`);
  out.push(...fieldProblems('bitwardensecretsmanager', FIELDS, spec));
  return out;
}

export function references(spec: unknown): StoreReferences {
  return fieldReferences('bitwardensecretsmanager', FIELDS, spec);
}
