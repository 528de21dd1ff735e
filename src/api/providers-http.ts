// Provider configurations of the stores ESI reaches over their documented HTTP APIs: ESO's field names, so
// existing stores apply unchanged. The rest of the provider union is in src/api/providers.ts.
import type { CAProvider, SecretKeySelector } from './selectors.js';

/** ESO's generic webhook store (docs/providers/webhook.md). */
export interface WebhookSecret {
  /** The name templates read the Secret's keys under: `{{ .<name>.<key> }}`. */
  name: string;
  secretRef: { name: string; key?: string; namespace?: string };
}

export interface WebhookProvider {
  /** Default GET. */
  method?: string;
  /** A template; `{{ .remoteRef.key }}` and the other remoteRef fields are URL-escaped in it. */
  url: string;
  headers?: Record<string, string>;
  body?: string;
  /** A Go duration, e.g. `10s`. */
  timeout?: string;
  result?: { jsonPath?: string };
  secrets?: WebhookSecret[];
  caBundle?: string;
  caProvider?: CAProvider;
  auth?: { ntlm?: { usernameSecret: SecretKeySelector; passwordSecret: SecretKeySelector } };
}

/** ESO's 1Password Connect store (docs/providers/onepassword.md). */
export interface OnePasswordProvider {
  /** URL of the 1Password Connect server. */
  connectHost: string;
  /** Vault names and their lookup order (lowest first). */
  vaults: Record<string, number>;
  auth: { secretRef: { connectTokenSecretRef: SecretKeySelector } };
}

/** ESO's Doppler store (docs/providers/doppler.md). */
export interface DopplerProvider {
  auth: { secretRef?: { dopplerToken: { name: string; key?: string; namespace?: string } }; oidcConfig?: Record<string, unknown> };
  /** Required unless the token is a service token (scoped to one config). */
  project?: string;
  config?: string;
  nameTransformer?: 'upper-camel' | 'camel' | 'lower-snake' | 'tf-var' | 'dotnet-env' | 'lower-kebab';
  /** Download the whole config as one file (`DOPPLER_SECRETS_FILE`) in this format. */
  format?: 'json' | 'dotnet-json' | 'env' | 'yaml' | 'docker';
}

/** ESO's Bitwarden Secrets Manager store, through the Bitwarden SDK server (docs/providers/bitwardensecretsmanager.md). */
export interface BitwardenSecretsManagerProvider {
  organizationID: string;
  projectID: string;
  apiURL?: string;
  identityURL?: string;
  /** The SDK server (https only). */
  bitwardenServerSDKURL?: string;
  caBundle?: string;
  caProvider?: CAProvider;
  auth: { secretRef: { credentials: SecretKeySelector } };
}

/** ESO's Infisical store (docs/providers/infisical.md). One of the auth kinds is set. */
export interface InfisicalProvider {
  auth: {
    universalAuthCredentials?: { clientId: SecretKeySelector; clientSecret: SecretKeySelector };
    tokenAuthCredentials?: { accessToken: SecretKeySelector };
    jwtAuthCredentials?: { identityId: SecretKeySelector; jwt: SecretKeySelector };
    ldapAuthCredentials?: { identityId: SecretKeySelector; ldapUsername: SecretKeySelector; ldapPassword: SecretKeySelector };
    /** The cloud and Kubernetes kinds ESO accepts; refused by ESI (docs/providers/infisical.md). */
    [other: string]: unknown;
  };
  secretsScope: {
    projectSlug: string;
    environmentSlug: string;
    /** Default `/`. */
    secretsPath?: string;
    /** Default false. */
    recursive?: boolean;
    /** Default true. */
    expandSecretReferences?: boolean;
    organizationSlug?: string;
  };
  /** Default `https://app.infisical.com/api`. */
  hostAPI?: string;
  caBundle?: string;
  caProvider?: CAProvider;
}

/** ESO's Akeyless store (docs/providers/akeyless.md). */
export interface AkeylessProvider {
  /** Akeyless's API (`https://api.akeyless.io`) or a gateway's `…/v2` endpoint. */
  akeylessGWApiURL: string;
  authSecretRef: {
    /** Access ID, access type and its parameter (the access key for `api_key`). */
    secretRef?: { accessID: SecretKeySelector; accessType: SecretKeySelector; accessTypeParam?: SecretKeySelector };
    kubernetesAuth?: {
      accessID: string;
      k8sConfName: string;
      serviceAccountRef?: { name: string; namespace?: string; audiences?: string[] };
      secretRef?: { name: string; key?: string; namespace?: string };
    };
  };
  caBundle?: string;
  caProvider?: CAProvider;
  ignoreCache?: boolean;
}

/** ESO's CyberArk Conjur store (docs/providers/conjur.md). Exactly one auth kind is set. */
export interface ConjurProvider {
  /** The Conjur appliance (`https://conjur.example.com`). */
  url: string;
  auth: {
    apikey?: { account: string; userRef: SecretKeySelector; apiKeyRef: SecretKeySelector };
    jwt?: {
      account: string;
      /** The authn-jwt authenticator's service ID. */
      serviceID: string;
      /** When the authenticator does not take the host from the token. */
      hostId?: string;
      secretRef?: { name: string; key?: string; namespace?: string };
      serviceAccountRef?: { name: string; namespace?: string; audiences?: string[] };
    };
    /** Client-certificate auth (authn-cert); refused by ESI (docs/providers/conjur.md). */
    cert?: unknown;
  };
  caBundle?: string;
  caProvider?: CAProvider;
}
