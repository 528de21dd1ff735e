// The `azurekv` provider (ESO's `spec.provider.azurekv`): Azure Key Vault secrets through
// @azure/keyvault-secrets and @azure/identity (service principal, managed identity,
// workload identity). Loaded only by processes whose stores use it.
//
// TLS: the vault and the token endpoints are verified against the system CA store;
// ESI_AZUREKV_CA_FILE adds CA certificates to it for this provider's connections only
// (never a process-wide switch, never verification turned off).
import { readFile } from 'node:fs/promises';
import { rootCertificates } from 'node:tls';
import type { TlsSettings } from '@azure/core-rest-pipeline';
import type { AzureKVProvider } from '../../api/types.js';
import { defineProvider } from '../define.js';
import { ProviderError, type ProviderContext } from '../types.js';
import { credentialFor } from './auth.js';
import { AzureKVClient } from './client.js';
import { meta } from './meta.js';
import { ENV, validateSpec, vaultHostPolicy } from './spec.js';

export { validateSpec };
export { AzureKVClient, MANAGED_BY_TAG, MANAGED_BY_VALUE } from './client.js';

/** Retries of one HTTP request (vault or token endpoint); ctx.timeoutMs bounds the total. */
const MAX_RETRIES = 2;

/** System roots plus the operator's extra CA file, when ESI_AZUREKV_CA_FILE is set. */
async function tlsOptions(storeId: string, env: NodeJS.ProcessEnv): Promise<TlsSettings | undefined> {
  const file = env[ENV.caFile]?.trim();
  if (!file) return undefined;
  let pem: string;
  try {
    pem = await readFile(file, 'utf8');
  } catch (err) {
    throw new ProviderError('InvalidSpec', storeId, `${ENV.caFile} (${file}) cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new ProviderError('InvalidSpec', storeId, `${ENV.caFile} (${file}) holds no PEM certificate`);
  }
  return { ca: [...rootCertificates, pem] };
}

/** Builds a client; `env` is a test seam (the operator's ESI_AZUREKV_* settings). */
async function connect(ctx: ProviderContext, spec: AzureKVProvider, env: NodeJS.ProcessEnv = process.env): Promise<AzureKVClient> {
  const host = vaultHostPolicy(spec.vaultUrl, env);
  if (!host.allowed) {
    throw new ProviderError('InvalidSpec', ctx.storeId,
      `azurekv.vaultUrl host "${new URL(spec.vaultUrl).host}" is not an Azure Key Vault endpoint (*.vault.azure.net and the sovereign-cloud suffixes); ` +
      `an operator can allow a private endpoint with ${ENV.allowedVaultHosts}`);
  }
  const tls = await tlsOptions(ctx.storeId, env);
  const credential = await credentialFor(ctx, spec, { maxRetries: MAX_RETRIES, ...(tls ? { tlsOptions: tls } : {}) }, env);
  const { SecretClient } = await import('@azure/keyvault-secrets');
  const kv = new SecretClient(spec.vaultUrl, credential, {
    // See vaultHostPolicy: on for Key Vault hosts, off only for operator-allowed hosts,
    // where the SDK's check cannot pass (it wants the vault host under the challenge's
    // resource domain, e.g. *.vault.azure.net).
    disableChallengeResourceVerification: !host.verifyChallengeResource,
    retryOptions: { maxRetries: MAX_RETRIES, retryDelayInMs: 200, maxRetryDelayInMs: 2000 },
    ...(tls ? { tlsOptions: tls } : {}),
    userAgentOptions: { userAgentPrefix: 'esi' },
  });
  return new AzureKVClient(ctx.storeId, kv, ctx.timeoutMs, ctx.logger);
}

export const provider = defineProvider<AzureKVProvider>(meta, (ctx, spec) => connect(ctx, spec));

/** A client with an explicit environment (tests). */
export const newClient = (ctx: ProviderContext, env: NodeJS.ProcessEnv = process.env): Promise<AzureKVClient> =>
  defineProvider<AzureKVProvider>(meta, (c, spec) => connect(c, spec, env)).newClient(ctx) as Promise<AzureKVClient>;

export default provider;
