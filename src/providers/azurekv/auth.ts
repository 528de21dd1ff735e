// Builds the @azure/identity credential for a store's `authType`:
//  - ServicePrincipal: client secret or certificate from the referenced Secret keys
//    (read through ctx.readCredential: mounted files in the agent);
//  - ManagedIdentity: the identity of the node/pod environment (IMDS, App Service…),
//    `identityId` selecting a user-assigned identity;
//  - WorkloadIdentity: the pod's own projected service-account token exchanged at Entra
//    ID as a client assertion (federated identity credential).
// No credential value is logged or put in an error.
import type { AccessToken, GetTokenOptions, TokenCredential } from '@azure/core-auth';
import {
  ClientAssertionCredential,
  ClientCertificateCredential,
  ClientSecretCredential,
  ManagedIdentityCredential,
  type ClientSecretCredentialOptions,
} from '@azure/identity';
import type { TlsSettings } from '@azure/core-rest-pipeline';
import type { AzureKVProvider, SecretKeySelector as ApiSelector } from '../../api/types.js';
import { ProviderError, type ProviderContext } from '../types.js';
import { readFile } from 'node:fs/promises';
import { authority, ENV, WORKLOAD_IDENTITY_AUDIENCE } from './spec.js';

export interface CredentialOptions {
  tlsOptions?: TlsSettings;
  /** Retries of one token request; the caller's deadline bounds the total. */
  maxRetries: number;
}

async function read(ctx: ProviderContext, ref: ApiSelector, field: string): Promise<string> {
  const raw = Buffer.from(await ctx.readCredential({ name: ref.name, key: ref.key ?? '', ...(ref.namespace ? { namespace: ref.namespace } : {}) }))
    .toString('utf8');
  if (raw.trim() === '') throw new ProviderError('InvalidSpec', ctx.storeId, `azurekv.authSecretRef.${field} (${ref.name}/${ref.key}) is empty`);
  return raw;
}

/** An identifier (client or tenant id): surrounding whitespace is a copy-paste accident. */
async function readId(ctx: ProviderContext, ref: ApiSelector, field: string): Promise<string> {
  return (await read(ctx, ref, field)).trim();
}

async function tenantOf(ctx: ProviderContext, spec: AzureKVProvider, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const fromRef = spec.authSecretRef?.tenantId ? await readId(ctx, spec.authSecretRef.tenantId, 'tenantId') : undefined;
  if (fromRef && spec.tenantId && fromRef !== spec.tenantId) {
    throw new ProviderError('InvalidSpec', ctx.storeId, 'azurekv.tenantId and authSecretRef.tenantId name different tenants');
  }
  return fromRef ?? spec.tenantId ?? (spec.authType === 'WorkloadIdentity' ? env.AZURE_TENANT_ID?.trim() || undefined : undefined);
}

function common(ctx: ProviderContext, spec: AzureKVProvider, opts: CredentialOptions, env: NodeJS.ProcessEnv): ClientSecretCredentialOptions {
  const { host, disableInstanceDiscovery } = authority(spec, env);
  return {
    authorityHost: host,
    disableInstanceDiscovery,
    retryOptions: { maxRetries: opts.maxRetries, retryDelayInMs: 200, maxRetryDelayInMs: 2000 },
    ...(opts.tlsOptions ? { tlsOptions: opts.tlsOptions } : {}),
    // The SDK's own logging is off unless AZURE_LOG_LEVEL is set; never log PII.
    loggingOptions: { enableUnsafeSupportLogging: false, allowLoggingAccountIdentifiers: false },
  };
}

async function servicePrincipal(ctx: ProviderContext, spec: AzureKVProvider, o: ClientSecretCredentialOptions, env: NodeJS.ProcessEnv) {
  const ref = spec.authSecretRef!;
  const tenantId = await tenantOf(ctx, spec, env);
  if (!tenantId) throw new ProviderError('InvalidSpec', ctx.storeId, 'azurekv.tenantId is required for authType ServicePrincipal');
  const clientId = await readId(ctx, ref.clientId!, 'clientId');
  if (ref.clientCertificate) {
    // A PEM holding the certificate and its private key, as ESO expects it.
    const certificate = await read(ctx, ref.clientCertificate, 'clientCertificate');
    return new ClientCertificateCredential(tenantId, clientId, { certificate }, o);
  }
  return new ClientSecretCredential(tenantId, clientId, await read(ctx, ref.clientSecret!, 'clientSecret'), o);
}

/** Workload identity. ESO reads the client and tenant ids from the service account's
 *  `azure.workload.identity/*` annotations; the agent cannot read its service account,
 *  so ESI takes them from the store: clientId from authSecretRef.clientId or
 *  `identityId`, tenantId from `tenantId` or authSecretRef.tenantId, and falls back to
 *  AZURE_CLIENT_ID / AZURE_TENANT_ID, which the Azure workload-identity webhook sets in
 *  the containers of pods labelled `azure.workload.identity/use: "true"`. */
async function workloadIdentity(ctx: ProviderContext, spec: AzureKVProvider, o: ClientSecretCredentialOptions, env: NodeJS.ProcessEnv) {
  const clientId = spec.authSecretRef?.clientId
    ? await readId(ctx, spec.authSecretRef.clientId, 'clientId')
    : spec.identityId ?? (env.AZURE_CLIENT_ID?.trim() || undefined);
  const tenantId = await tenantOf(ctx, spec, env);
  if (!clientId || !tenantId) {
    throw new ProviderError('InvalidSpec', ctx.storeId,
      `authType WorkloadIdentity needs the ${!clientId ? 'client id (authSecretRef.clientId or identityId)' : 'tenant id (tenantId or authSecretRef.tenantId)'}`);
  }
  const audience = spec.serviceAccountRef?.audiences?.[0] ?? WORKLOAD_IDENTITY_AUDIENCE;
  const token = ownTokenFile(ctx, spec, env) ?? (() => ctx.serviceAccountToken(audience));
  // Re-read on every token request: the kubelet rotates the projected token.
  let failure: ProviderError | undefined;
  const assertion = async () => {
    failure = undefined;
    try {
      return await token();
    } catch (err) {
      if (err instanceof ProviderError) failure = err;
      throw err;
    }
  };
  return new PodTokenCredential(new ClientAssertionCredential(tenantId, clientId, assertion, o), () => failure);
}

/** The controller's own workload identity as the Azure webhook set it up
 *  (AZURE_FEDERATED_TOKEN_FILE), for a store the operator lends it to that names no
 *  ServiceAccount, as ESO reads it; otherwise undefined (a token is requested instead). */
function ownTokenFile(ctx: ProviderContext, spec: AzureKVProvider, env: NodeJS.ProcessEnv): (() => Promise<string>) | undefined {
  const file = env[ENV.federatedTokenFile]?.trim();
  if (!file || spec.serviceAccountRef || ctx.environmentIdentity !== true) return undefined;
  return async () => {
    let text: string;
    try {
      text = (await readFile(file, 'utf8')).trim();
    } catch (err) {
      throw new ProviderError('AuthFailed', ctx.storeId, `${ENV.federatedTokenFile} (${file}) cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    if (!text) throw new ProviderError('AuthFailed', ctx.storeId, `${ENV.federatedTokenFile} (${file}) is empty`);
    return text;
  };
}

/** MSAL rewraps whatever the assertion callback throws into a message-only error; this
 *  keeps the agent's own error about the pod token (not mounted, wrong audience). */
class PodTokenCredential implements TokenCredential {
  constructor(
    private readonly inner: TokenCredential,
    private readonly failure: () => ProviderError | undefined,
  ) {}

  async getToken(scopes: string | string[], options?: GetTokenOptions): Promise<AccessToken | null> {
    try {
      return await this.inner.getToken(scopes, options);
    } catch (err) {
      throw this.failure() ?? err;
    }
  }
}

export async function credentialFor(ctx: ProviderContext, spec: AzureKVProvider, opts: CredentialOptions,
  env: NodeJS.ProcessEnv = process.env): Promise<TokenCredential> {
  const o = common(ctx, spec, opts, env);
  switch (spec.authType ?? 'ServicePrincipal') {
    case 'ServicePrincipal':
      return servicePrincipal(ctx, spec, o, env);
    case 'WorkloadIdentity':
      return workloadIdentity(ctx, spec, o, env);
    case 'ManagedIdentity':
      // The managed-identity endpoint is plain HTTP on a link-local/loopback address by
      // design (IMDS, App Service); the SDK enables that for this credential only.
      return new ManagedIdentityCredential({
        ...(spec.identityId ? { clientId: spec.identityId } : {}),
        retryOptions: o.retryOptions!,
        ...(o.tlsOptions ? { tlsOptions: o.tlsOptions } : {}),
      });
    default:
      throw new ProviderError('InvalidSpec', ctx.storeId, `unknown azurekv.authType "${String(spec.authType)}"`);
  }
}
