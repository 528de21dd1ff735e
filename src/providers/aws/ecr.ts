// ECR GetAuthorizationToken with a store-shaped AWS configuration (region, role, auth):
// what ESO's ECRAuthorizationToken generator calls. The credentials are built by auth.ts
// from the caller's ProviderContext, so the consumer's rules apply unchanged (the reconciler
// reads credential Secrets only from the tenant's namespace: src/controller/runtime/clients.ts).
// `scope: public` calls ECR Public's own API (a different service: `ecr-public`), which AWS
// serves in us-east-1 only (docs/generators.md).
import type { AWSProvider } from '../../api/types.js';
import { toProviderError } from '../errors.js';
import { ProviderError, type ProviderContext } from '../types.js';
import { buildCredentials } from './auth.js';
import { classifyAws } from './errors.js';
import { callOptions, commonConfig } from './sdk.js';
import { endpointFromEnv } from './spec.js';

export interface EcrAuthorization {
  username: string;
  password: string;
  /** The registry's address; ECR Public's answer has none (its registry is public.ecr.aws). */
  proxyEndpoint?: string;
  expiresAt: Date;
}

/** The only region ECR Public's API (and its GetAuthorizationToken) is served in. */
const ECR_PUBLIC_REGION = 'us-east-1';

/** `user:password`, base64, as both APIs return it. */
function decodeToken(ctx: ProviderContext, token: string | undefined, op: string): { username: string; password: string } {
  const decoded = Buffer.from(token ?? '', 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new ProviderError('Unknown', ctx.storeId, `${op} returned no token`);
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** A registry token for the spec's region, with the spec's credentials; `scope: 'public'`:
 *  a token of ECR Public (the spec's region and role still decide the credentials). */
export async function ecrAuthorizationToken(ctx: ProviderContext, spec: Pick<AWSProvider, 'region' | 'role' | 'auth'> & { scope?: 'private' | 'public' }): Promise<EcrAuthorization> {
  const aws: AWSProvider = { service: 'SecretsManager', region: spec.region, ...(spec.role ? { role: spec.role } : {}), ...(spec.auth ? { auth: spec.auth } : {}) };
  const creds = await buildCredentials(ctx, aws);
  const op = spec.scope === 'public' ? 'ecr-public:GetAuthorizationToken' : 'ecr:GetAuthorizationToken';
  try {
    return spec.scope === 'public' ? await publicToken(ctx, creds.provider) : await privateToken(ctx, spec.region, creds.provider);
  } catch (err) {
    if (err instanceof ProviderError) throw err;
    throw toProviderError(err, { storeId: ctx.storeId, op }, classifyAws);
  } finally {
    creds.close();
  }
}

async function privateToken(ctx: ProviderContext, region: string, credentials: Parameters<typeof commonConfig>[0]['credentials']): Promise<EcrAuthorization> {
  const { ECRClient, GetAuthorizationTokenCommand } = await import('@aws-sdk/client-ecr');
  const client = new ECRClient(commonConfig({ region, service: 'api.ecr', endpoint: endpointFromEnv('ecr'), credentials, timeoutMs: ctx.timeoutMs }));
  try {
    const out = await client.send(new GetAuthorizationTokenCommand({}), callOptions(ctx.timeoutMs));
    const data = out.authorizationData?.[0];
    if (!data) throw new ProviderError('Unknown', ctx.storeId, 'ecr:GetAuthorizationToken returned no token');
    return { ...decodeToken(ctx, data.authorizationToken, 'ecr:GetAuthorizationToken'), proxyEndpoint: data.proxyEndpoint ?? '', expiresAt: data.expiresAt ?? new Date() };
  } finally {
    client.destroy();
  }
}

async function publicToken(ctx: ProviderContext, credentials: Parameters<typeof commonConfig>[0]['credentials']): Promise<EcrAuthorization> {
  const { ECRPUBLICClient, GetAuthorizationTokenCommand } = await import('@aws-sdk/client-ecr-public');
  const client = new ECRPUBLICClient(commonConfig({ region: ECR_PUBLIC_REGION, service: 'api.ecr-public', endpoint: endpointFromEnv('ecrpublic'), credentials, timeoutMs: ctx.timeoutMs }));
  try {
    const data = (await client.send(new GetAuthorizationTokenCommand({}), callOptions(ctx.timeoutMs))).authorizationData;
    return { ...decodeToken(ctx, data?.authorizationToken, 'ecr-public:GetAuthorizationToken'), expiresAt: data?.expiresAt ?? new Date() };
  } finally {
    client.destroy();
  }
}
