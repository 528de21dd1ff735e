// Static checks of `spec.provider.bitwardensecretsmanager` (ESO's Bitwarden Secrets Manager
// store, reached through the Bitwarden SDK server). No I/O.
import { References } from '../refs.js';
import type { StoreReferences } from '../types.js';
import { isObject, type Json } from '../../json-object.js';


/** ESO's defaults. */
export const DEFAULTS = {
  apiURL: 'https://api.bitwarden.com',
  identityURL: 'https://identity.bitwarden.com',
  bitwardenServerSDKURL: 'https://bitwarden-sdk-server.external-secrets.svc.cluster.local:9998',
} as const;

function urlProblem(field: string, v: unknown, httpsOnly: boolean): string | undefined {
  if (v === undefined) return undefined;
  try {
    const u = new URL(String(v));
    if (u.protocol !== 'https:' && (httpsOnly || u.protocol !== 'http:')) return `bitwardensecretsmanager.${field} must be an https:// URL`;
  } catch {
    return `bitwardensecretsmanager.${field} is not a valid URL`;
  }
  return undefined;
}

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['bitwardensecretsmanager must be an object'];
  const out: string[] = [];
  for (const f of ['organizationID', 'projectID'] as const) if (typeof spec[f] !== 'string' || spec[f] === '') out.push(`bitwardensecretsmanager.${f} must be a non-empty string`);
  // The SDK server holds the access token in transit: ESO requires https for it.
  for (const [f, https] of [['bitwardenServerSDKURL', true], ['apiURL', false], ['identityURL', false]] as const) {
    const p = urlProblem(f, spec[f], https);
    if (p) out.push(p);
  }
  const cred = isObject(spec.auth) && isObject(spec.auth.secretRef) ? spec.auth.secretRef.credentials : undefined;
  if (!isObject(cred) || typeof cred.name !== 'string' || cred.name === '' || typeof cred.key !== 'string' || cred.key === '') {
    out.push('bitwardensecretsmanager.auth.secretRef.credentials needs name and key (the machine account access token)');
  }
  out.push(...caProblems(spec));
  return out;
}

function caProblems(spec: Json): string[] {
  const out: string[] = [];
  if (spec.caBundle !== undefined && (typeof spec.caBundle !== 'string' || spec.caBundle === '')) out.push('bitwardensecretsmanager.caBundle must be a base64-encoded PEM bundle');
  const cp = spec.caProvider;
  if (cp !== undefined && (!isObject(cp) || (cp.type !== 'Secret' && cp.type !== 'ConfigMap') || typeof cp.name !== 'string' || typeof cp.key !== 'string')) {
    out.push('bitwardensecretsmanager.caProvider needs type (Secret or ConfigMap), name and key');
  }
  return out;
}

export function references(spec: unknown): StoreReferences {
  return new References('bitwardensecretsmanager', spec).secretKey('auth.secretRef.credentials').caProvider('caProvider');
}
