// Static checks of `spec.provider.azurekv` (ESO v1 field names) and the pieces of
// configuration derived from it without I/O: the Entra ID authority for an
// `environmentType`, whether a vault host is an Azure Key Vault endpoint, and which
// operator-level environment variables widen what the provider accepts.
import type { AzureAuthType, AzureEnvironmentType, AzureKVProvider } from '../../api/types.js';
import { fieldProblems, type FieldRule } from '../fields.js';
import { isObject } from '../../json-object.js';

const AUTH_TYPES: readonly AzureAuthType[] = ['ServicePrincipal', 'ManagedIdentity', 'WorkloadIdentity'];

/** Token audience a workload-identity token is issued for, as Entra ID expects it. */
export const WORKLOAD_IDENTITY_AUDIENCE = 'api://AzureADTokenExchange';

/** Entra ID authority host of each cloud ESO names. Germany was shut down in 2021 and
 *  Azure Stack needs a custom cloud configuration (ESO's `customCloudConfig`), which
 *  ESI does not implement: both are refused with the reason. */
const AUTHORITY_HOSTS: Partial<Record<AzureEnvironmentType, string>> = {
  PublicCloud: 'https://login.microsoftonline.com',
  ChinaCloud: 'https://login.chinacloudapi.cn',
  USGovernmentCloud: 'https://login.microsoftonline.us',
};
const REFUSED_ENVIRONMENTS: Partial<Record<AzureEnvironmentType, string>> = {
  GermanCloud: 'azurekv.environmentType GermanCloud: Microsoft Cloud Deutschland was discontinued in 2021',
  AzureStackCloud: 'azurekv.environmentType AzureStackCloud needs ESO\'s customCloudConfig, which ESI does not implement',
};

/** Microsoft's own Entra ID hosts: MSAL validates these with instance discovery. */
const MICROSOFT_AUTHORITY_HOSTS = new Set(Object.values(AUTHORITY_HOSTS).map((u) => new URL(u!).host));

/** DNS suffixes of Key Vault and Managed HSM data planes in the public and sovereign clouds. */
const KEY_VAULT_SUFFIXES = [
  'vault.azure.net', 'vault.azure.cn', 'vault.usgovcloudapi.net', 'vault.microsoftazure.de',
  'managedhsm.azure.net', 'managedhsm.azure.cn', 'managedhsm.usgovcloudapi.net',
];

/** Operator settings, read from the environment of the process that runs the provider
 *  (the agent container, the reconciler). None of them comes from a tenant's object. */
export const ENV = {
  /** PEM file of extra CA certificates trusted for the vault and the token endpoints, in
   *  addition to the system store (private endpoints behind a TLS-inspecting proxy, a
   *  private cloud, the local test vault). */
  caFile: 'ESI_AZUREKV_CA_FILE',
  /** Comma-separated vault hosts outside the Key Vault DNS suffixes that stores may
   *  name (`host`, `host:port` or `*.suffix`); see `vaultHostPolicy`. */
  allowedVaultHosts: 'ESI_AZUREKV_ALLOWED_VAULT_HOSTS',
  /** The Azure SDK's own override of the Entra ID authority host. */
  authorityHost: 'AZURE_AUTHORITY_HOST',
  /** The projected token the Azure workload-identity webhook mounts into a labelled pod
   *  (with AZURE_CLIENT_ID and AZURE_TENANT_ID): the controller's own federated token. */
  federatedTokenFile: 'AZURE_FEDERATED_TOKEN_FILE',
} as const;


function vaultUrlProblems(url: unknown): string[] {
  if (typeof url !== 'string' || url === '') return ['azurekv.vaultUrl is required'];
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [`azurekv.vaultUrl "${url}" is not a URL`];
  }
  const problems: string[] = [];
  if (u.protocol !== 'https:') problems.push('azurekv.vaultUrl must use https');
  if (u.pathname !== '/' && u.pathname !== '') problems.push('azurekv.vaultUrl must not have a path (e.g. https://my-vault.vault.azure.net)');
  if (u.username || u.password) problems.push('azurekv.vaultUrl must not carry credentials');
  return problems;
}

type Ref = Record<string, unknown> | undefined;

/** Every field that references a Secret key or a ServiceAccount. */
export const FIELDS: readonly FieldRule[] = [
  ...(['clientId', 'clientSecret', 'clientCertificate', 'tenantId'] as const).map((f): FieldRule => ({ path: `authSecretRef.${f}`, kind: 'secretKey' })),
  { path: 'serviceAccountRef', kind: 'serviceAccount' },
];

function servicePrincipalProblems(p: Record<string, unknown>, ref: Ref): string[] {
  const problems: string[] = [];
  if (!ref?.clientId) problems.push('azurekv.authSecretRef.clientId is required for authType ServicePrincipal');
  if (!ref?.clientSecret && !ref?.clientCertificate) {
    problems.push('azurekv.authSecretRef needs clientSecret or clientCertificate for authType ServicePrincipal');
  }
  if (ref?.clientSecret && ref?.clientCertificate) problems.push('azurekv.authSecretRef: set clientSecret or clientCertificate, not both');
  if (!p.tenantId && !ref?.tenantId) problems.push('azurekv.tenantId (or authSecretRef.tenantId) is required for authType ServicePrincipal');
  return problems;
}

function authProblems(p: Record<string, unknown>, authType: AzureAuthType): string[] {
  const problems: string[] = [];
  const ref: Ref = isObject(p.authSecretRef) ? p.authSecretRef : undefined;
  if (p.authSecretRef !== undefined && !ref) problems.push('azurekv.authSecretRef must be an object');
  if (authType === 'ServicePrincipal') return [...problems, ...servicePrincipalProblems(p, ref)];
  if (ref?.clientSecret || ref?.clientCertificate) {
    problems.push(`azurekv.authSecretRef.clientSecret/clientCertificate are not used with authType ${authType}; remove them`);
  }
  return problems;
}

export function validateSpec(spec: unknown): string[] {
  if (!isObject(spec)) return ['azurekv must be an object'];
  const problems = [...vaultUrlProblems(spec.vaultUrl), ...fieldProblems('azurekv', FIELDS, spec)];
  const authType = (spec.authType ?? 'ServicePrincipal') as AzureAuthType;
  if (!AUTH_TYPES.includes(authType)) {
    problems.push(`azurekv.authType must be one of ${AUTH_TYPES.join(', ')}`);
  } else {
    problems.push(...authProblems(spec, authType));
  }
  if (spec.tenantId !== undefined && (typeof spec.tenantId !== 'string' || spec.tenantId === '')) {
    problems.push('azurekv.tenantId must be a non-empty string');
  }
  if (spec.identityId !== undefined && (typeof spec.identityId !== 'string' || spec.identityId === '')) {
    problems.push('azurekv.identityId must be a non-empty string');
  }
  const env = spec.environmentType as AzureEnvironmentType | undefined;
  if (env !== undefined) {
    if (REFUSED_ENVIRONMENTS[env]) problems.push(REFUSED_ENVIRONMENTS[env]!);
    else if (!AUTHORITY_HOSTS[env]) problems.push(`azurekv.environmentType "${String(env)}" is unknown`);
  }
  return problems;
}

/** The Entra ID authority host and whether MSAL may validate it by instance discovery.
 *  `AZURE_AUTHORITY_HOST` (the Azure SDK's variable) lets the operator point every store
 *  at a private authority; MSAL's instance discovery only knows Microsoft's hosts and
 *  would call out to login.microsoftonline.com to vet any other one, so it is turned
 *  off for those: the operator's explicit configuration is the trust decision. */
export function authority(spec: AzureKVProvider, env: NodeJS.ProcessEnv = process.env): { host: string; disableInstanceDiscovery: boolean } {
  const override = env[ENV.authorityHost]?.trim();
  const host = (override || AUTHORITY_HOSTS[spec.environmentType ?? 'PublicCloud'] || AUTHORITY_HOSTS.PublicCloud!).replace(/\/+$/, '');
  let parsed: string;
  try {
    parsed = new URL(host).host;
  } catch {
    parsed = '';
  }
  return { host, disableInstanceDiscovery: !MICROSOFT_AUTHORITY_HOSTS.has(parsed) };
}

function hostMatches(pattern: string, host: string, hostPort: string): boolean {
  const p = pattern.trim().toLowerCase();
  if (!p) return false;
  if (p.startsWith('*.')) return host.endsWith(p.slice(1));
  return p === host || p === hostPort;
}

/** Whether the provider may send an Azure access token to this vault host, and whether
 *  the SDK's challenge-resource check can stay on.
 *
 *  The Key Vault client learns which token to get from the vault's 401 challenge; the
 *  SDK verifies that the challenge's resource (e.g. `https://vault.azure.net`) is a DNS
 *  parent of the vault host, so a look-alike host cannot obtain a Key Vault token. That
 *  check can only pass for hosts under the Key Vault suffixes; for any other host (a
 *  private cloud, the local test vault on 127.0.0.1) `disableChallengeResourceVerification`
 *  must be set or no request ever succeeds. Turning it off means the host decides which
 *  token it receives, so ESI only does that for hosts the operator listed in
 *  ESI_AZUREKV_ALLOWED_VAULT_HOSTS; a store naming any other host is refused. */
export function vaultHostPolicy(vaultUrl: string, env: NodeJS.ProcessEnv = process.env): { allowed: boolean; verifyChallengeResource: boolean } {
  const u = new URL(vaultUrl);
  const host = u.hostname.toLowerCase();
  if (KEY_VAULT_SUFFIXES.some((s) => host.endsWith(`.${s}`))) return { allowed: true, verifyChallengeResource: true };
  const hostPort = `${host}:${u.port || '443'}`;
  const allowed = (env[ENV.allowedVaultHosts] ?? '').split(',').some((p) => hostMatches(p, host, hostPort));
  return { allowed, verifyChallengeResource: false };
}
