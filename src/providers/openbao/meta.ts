// What ESI knows about the `openBao` provider (ESO's `spec.provider.openBao`) without loading
// its client. OpenBao speaks the Vault HTTP API and ESO's openBao fields are a subset of its
// vault fields, so the vault implementation serves it (one implementation: the same spec
// rules, references and client: a fix to one reaches both). Only
// the field names differ in messages; fields ESO's openBao kind does not have are refused.
import { metadataChecker, stringMap } from '../push-metadata.js';
import { fieldReferences } from '../fields.js';
import type { ProviderMeta } from '../types.js';
import { meta as vault } from '../vault/meta.js';
import { FIELDS as VAULT_FIELDS, validateSpecAs } from '../vault/spec.js';
import { isObject } from '../../json-object.js';

export const NAME = 'openBao';

/** ESO's openBao fields (everything else is vault-only and refused under openBao). */
const FIELDS = ['server', 'path', 'version', 'namespace', 'caBundle', 'caProvider', 'auth'];
const AUTH_FIELDS = ['tokenSecretRef', 'appRole', 'userPass', 'namespace'];


function foreignFields(spec: unknown): string[] {
  if (!isObject(spec)) return [];
  const extra = Object.keys(spec).filter((k) => !FIELDS.includes(k)).map((k) => `${NAME}.${k}`);
  if (isObject(spec.auth)) extra.push(...Object.keys(spec.auth).filter((k) => !AUTH_FIELDS.includes(k)).map((k) => `${NAME}.auth.${k}`));
  return extra.map((f) => `${f} is not a field of the openBao provider; use spec.provider.vault (same server) for it`);
}

export const meta: ProviderMeta = {
  name: NAME,
  capabilities: vault.capabilities,
  validateSpec: (spec) => [...foreignFields(spec), ...validateSpecAs(NAME, spec, ['tokenSecretRef', 'appRole'])],
  // The vault client applies push metadata: the same field, this provider's name in messages.
  validatePushMetadata: metadataChecker(NAME, { customMetadata: stringMap }),
  // The vault table under this name: fields openBao does not have are refused above.
  references: (spec) => fieldReferences(NAME, VAULT_FIELDS, spec),
};
