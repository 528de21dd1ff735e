// Provider configurations of SecretStore / ClusterSecretStore (`spec.provider.<name>`).
// Field names follow the public external-secrets.io v1 API so existing stores apply
// unchanged. The providers ESI serves are listed by src/providers/registry.ts; `grpc` (the
// out-of-tree store contract of docs/providers/grpc.md) is an ESI addition that needs
// ESI's CRDs. Every other external-secrets.io provider is accepted as an opaque object
// (see `OtherProviderName`) so stores meant for other controllers still apply; ESI
// reports them as unsupported instead of serving them.

import type { CAProvider, SecretKeySelector, ServiceAccountSelector } from './selectors.js';
import type { WebhookProvider, OnePasswordProvider, DopplerProvider, BitwardenSecretsManagerProvider, InfisicalProvider, AkeylessProvider, ConjurProvider } from './providers-http.js';

export * from './selectors.js';
export * from './providers-http.js';

// ---------------------------------------------------------------- vault / OpenBao

export interface VaultAppRole {
  /** Mount path of the AppRole auth method, `approle` when omitted. */
  path?: string;
  roleId?: string;
  /** A Secret key holding the role id, instead of `roleId`. */
  roleRef?: SecretKeySelector;
  secretRef: SecretKeySelector;
}

export interface VaultKubernetesAuth {
  /** Mount path of the Kubernetes auth method, `kubernetes` when omitted. */
  mountPath?: string;
  role: string;
  serviceAccountRef?: ServiceAccountSelector;
  /** A Secret holding a service-account token, instead of a requested one. */
  secretRef?: SecretKeySelector;
}

export interface VaultKubernetesServiceAccountTokenAuth {
  serviceAccountRef: ServiceAccountSelector;
  audiences?: string[];
  expirationSeconds?: number;
}

export interface VaultJwtAuth {
  /** Mount path of the JWT/OIDC auth method, `jwt` when omitted. */
  path?: string;
  role?: string;
  /** A Secret holding a JWT. */
  secretRef?: SecretKeySelector;
  /** Or a service-account token requested from the Kubernetes API. */
  kubernetesServiceAccountToken?: VaultKubernetesServiceAccountTokenAuth;
}

export interface VaultLdapAuth {
  path?: string;
  username: string;
  secretRef?: SecretKeySelector;
}

export interface VaultUserPassAuth {
  path?: string;
  username: string;
  secretRef?: SecretKeySelector;
}

export interface VaultCertAuth {
  clientCert?: SecretKeySelector;
  secretRef?: SecretKeySelector;
  path?: string;
  vaultRole?: string;
}

/** One auth method is set. */
export interface VaultAuth {
  tokenSecretRef?: SecretKeySelector;
  appRole?: VaultAppRole;
  kubernetes?: VaultKubernetesAuth;
  jwt?: VaultJwtAuth;
  ldap?: VaultLdapAuth;
  userPass?: VaultUserPassAuth;
  cert?: VaultCertAuth;
  /** AWS IAM auth: accepted, not implemented by ESI. */
  iam?: Record<string, unknown>;
  /** GCP auth: accepted, not implemented by ESI. */
  gcp?: Record<string, unknown>;
  /** Namespace to log in to, when it differs from the provider's. */
  namespace?: string;
}

export interface VaultClientTLS {
  certSecretRef?: SecretKeySelector;
  keySecretRef?: SecretKeySelector;
}

/** ESO's `openBao` store kind: a subset of the vault fields (the same HTTP API; ESI serves
 *  it with the vault implementation). */
export interface OpenBaoProvider extends Pick<VaultProvider, 'server' | 'path' | 'version' | 'namespace' | 'caBundle' | 'caProvider'> {
  auth?: Pick<VaultAuth, 'tokenSecretRef' | 'appRole' | 'userPass' | 'namespace'>;
}

export interface VaultProvider {
  /** Base URL, e.g. `https://vault.example.com:8200`. */
  server: string;
  /** Mount path of the KV secrets engine, e.g. `secret`. */
  path?: string;
  /** KV engine version, `v2` when omitted. */
  version?: 'v1' | 'v2';
  /** Vault Enterprise / OpenBao namespace. */
  namespace?: string;
  /** PEM CA bundle, base64-encoded. */
  caBundle?: string;
  caProvider?: CAProvider;
  auth?: VaultAuth;
  tls?: VaultClientTLS;
  readYourWrites?: boolean;
  forwardInconsistent?: boolean;
  headers?: Record<string, string>;
  /** Check-and-set for KV v2 writes. */
  checkAndSet?: { required?: boolean };
}

// ---------------------------------------------------------------- AWS

export interface AWSAuthSecretRef {
  accessKeyIDSecretRef?: SecretKeySelector;
  secretAccessKeySecretRef?: SecretKeySelector;
  sessionTokenSecretRef?: SecretKeySelector;
}

export interface AWSJWTAuth {
  serviceAccountRef?: ServiceAccountSelector;
}

export interface AWSAuth {
  secretRef?: AWSAuthSecretRef;
  /** Web identity (IRSA-style) with a service-account token. */
  jwt?: AWSJWTAuth;
}

export interface AWSTag {
  key: string;
  value: string;
}

export interface AWSProvider {
  /** `CertificateManager` is accepted; ESI serves the other two. */
  service: 'SecretsManager' | 'ParameterStore' | 'CertificateManager';
  sessionTagsPolicy?: 'None' | 'Simple' | 'Custom';
  customSessionTags?: Record<string, string>;
  region: string;
  /** Role ARN to assume. */
  role?: string;
  additionalRoles?: string[];
  externalID?: string;
  sessionTags?: AWSTag[];
  transitiveTagKeys?: string[];
  /** Prefix added to every key. */
  prefix?: string;
  auth?: AWSAuth;
  secretsManager?: { forceDeleteWithoutRecovery?: boolean; recoveryWindowInDays?: number };
}

// ---------------------------------------------------------------- Azure Key Vault

export interface AzureKVAuthSecretRef {
  clientId?: SecretKeySelector;
  clientSecret?: SecretKeySelector;
  clientCertificate?: SecretKeySelector;
  tenantId?: SecretKeySelector;
}

export type AzureAuthType = 'ServicePrincipal' | 'ManagedIdentity' | 'WorkloadIdentity';
export type AzureEnvironmentType =
  | 'PublicCloud'
  | 'USGovernmentCloud'
  | 'ChinaCloud'
  | 'GermanCloud'
  | 'AzureStackCloud';

export interface AzureKVProvider {
  /** e.g. `https://my-vault.vault.azure.net`. */
  vaultUrl: string;
  tenantId?: string;
  /** `ServicePrincipal` when omitted. */
  authType?: AzureAuthType;
  authSecretRef?: AzureKVAuthSecretRef;
  serviceAccountRef?: ServiceAccountSelector;
  /** Client id of a user-assigned managed identity. */
  identityId?: string;
  environmentType?: AzureEnvironmentType;
  /** Upstream implementation switch; ESI has one implementation and ignores it. */
  useAzureSDK?: boolean;
  /** Endpoints of a custom cloud: accepted, not implemented by ESI. */
  customCloudConfig?: Record<string, unknown>;
}

// ---------------------------------------------------------------- GCP Secret Manager

export interface GCPWorkloadIdentity {
  serviceAccountRef: ServiceAccountSelector;
  clusterLocation?: string;
  clusterName?: string;
  clusterProjectID?: string;
}

export interface GCPSMAuth {
  secretRef?: { secretAccessKeySecretRef?: SecretKeySelector };
  workloadIdentity?: GCPWorkloadIdentity;
  /** Workload identity federation: accepted, not implemented by ESI. */
  workloadIdentityFederation?: Record<string, unknown>;
}

export interface GCPSMProvider {
  projectID?: string;
  /** Region of regional secrets; global secrets when omitted. */
  location?: string;
  auth?: GCPSMAuth;
  /** How a version is chosen when none is named (upstream `LatestOrFail` / `LatestOrFetch`). */
  secretVersionSelectionPolicy?: string;
}

// ---------------------------------------------------------------- Kubernetes

export interface KubernetesServer {
  /** API server URL, the in-cluster one when omitted. */
  url?: string;
  caBundle?: string;
  caProvider?: CAProvider;
}

export interface KubernetesAuth {
  token?: { bearerToken?: SecretKeySelector };
  serviceAccount?: ServiceAccountSelector;
  cert?: { clientCert?: SecretKeySelector; clientKey?: SecretKeySelector };
}

export interface KubernetesProvider {
  /** Namespace the Secrets are read from; `default` when omitted. */
  remoteNamespace?: string;
  server?: KubernetesServer;
  auth?: KubernetesAuth;
  /** A Secret holding a kubeconfig, instead of `auth`. */
  authRef?: SecretKeySelector;
}

// ---------------------------------------------------------------- fake

export interface FakeProviderData {
  key: string;
  value?: string;
  version?: string;
  /** Deprecated upstream: a JSON object in `value` serves `dataFrom` instead. */
  valueMap?: Record<string, string>;
}

export interface FakeProvider {
  data: FakeProviderData[];
  /** Upstream test hook: the validation result the store reports. */
  validationResult?: number;
}

// ---------------------------------------------------------------- gRPC (ESI addition, docs/providers/grpc.md)

/** The Secret holding `tls.crt`, `tls.key` (client certificate) and `ca.crt`. */
export interface TLSSecretRef {
  name: string;
  /** Required on ClusterSecretStores; a SecretStore uses its own namespace. */
  namespace?: string;
}

export interface GRPCProvider {
  /** `host:port` or `https://host:port` of a `SecretsServer`. */
  url: string;
  tlsSecretRef?: TLSSecretRef;
}

// ---------------------------------------------------------------- the provider union


/** Providers of the external-secrets.io API ESI accepts but does not serve. */
export const OTHER_PROVIDER_NAMES = [
  'alibaba',
  'barbican',
  'beyondtrust',
  'beyondtrustworkloadcredentials',
  'chef',
  'cloudrusm',
  'crd',
  'delinea',
  'device42',
  'dvls',
  'fortanix',
  'github',
  'gitlab',
  'ibm',
  'keepersecurity',
  'ngrok',
  'nebiusmysterybox',
  'onboardbase',
  'onepasswordSDK',
  'oracle',
  'ovh',
  'passbolt',
  'passworddepot',
  'previder',
  'pulumi',
  'scaleway',
  'secretserver',
  'senhasegura',
  'volcengine',
  'yandexcertificatemanager',
  'yandexlockbox',
] as const;
export type OtherProviderName = (typeof OTHER_PROVIDER_NAMES)[number];

/** Exactly one member is set (the CRD enforces it). */
export interface SecretStoreProvider extends Partial<Record<OtherProviderName, Record<string, unknown>>> {
  vault?: VaultProvider;
  openBao?: OpenBaoProvider;
  aws?: AWSProvider;
  azurekv?: AzureKVProvider;
  gcpsm?: GCPSMProvider;
  kubernetes?: KubernetesProvider;
  fake?: FakeProvider;
  grpc?: GRPCProvider;
  webhook?: WebhookProvider;
  onepassword?: OnePasswordProvider;
  doppler?: DopplerProvider;
  bitwardensecretsmanager?: BitwardenSecretsManagerProvider;
  infisical?: InfisicalProvider;
  akeyless?: AkeylessProvider;
  conjur?: ConjurProvider;
}

/** The key of the one provider a store configures, or undefined when none or several
 *  are set. Which names ESI serves is the provider registry's business
 *  (src/providers/registry.ts), not the API types'. */
export function providerName(provider: SecretStoreProvider | Record<string, unknown>): string | undefined {
  const set = Object.keys(provider).filter((k) => (provider as Record<string, unknown>)[k] != null);
  return set.length === 1 ? set[0] : undefined;
}
