// ECR GetAuthorizationToken with a store-shaped AWS configuration (region, role, auth):
// what ESO's ECRAuthorizationToken generator calls. The credentials are built by auth.ts
// from the caller's ProviderContext, so the consumer's rules apply unchanged (the reconciler
// reads credential Secrets only from the tenant's namespace: src/controller/clients.ts).
// Private registries only: ECR Public has its own API (docs/generators.md).
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
  proxyEndpoint: string;
  expiresAt: Date;
}

/** A registry token for the spec's region, with the spec's credentials. */
export async function ecrAuthorizationToken(ctx: ProviderContext, spec: Pick<AWSProvider, 'region' | 'role' | 'auth'>): Promise<EcrAuthorization> {
  const aws: AWSProvider = { service: 'SecretsManager', region: spec.region, ...(spec.role ? { role: spec.role } : {}), ...(spec.auth ? { auth: spec.auth } : {}) };
  const creds = await buildCredentials(ctx, aws);
  const { ECRClient, GetAuthorizationTokenCommand } = await import('@aws-sdk/client-ecr');
  const client = new ECRClient(commonConfig({ region: spec.region, service: 'api.ecr', endpoint: endpointFromEnv('ecr'), credentials: creds.provider, timeoutMs: ctx.timeoutMs }));
  try {
    const out = await client.send(new GetAuthorizationTokenCommand({}), callOptions(ctx.timeoutMs));
    const data = out.authorizationData?.[0];
    const decoded = Buffer.from(data?.authorizationToken ?? '', 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (!data || colon < 0) throw new ProviderError('Unknown', ctx.storeId, 'ecr:GetAuthorizationToken returned no token');
    return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1), proxyEndpoint: data.proxyEndpoint ?? '', expiresAt: data.expiresAt ?? new Date() };
  } catch (err) {
    if (err instanceof ProviderError) throw err;
    throw toProviderError(err, { storeId: ctx.storeId, op: 'ecr:GetAuthorizationToken' }, classifyAws);
  } finally {
    client.destroy();
    creds.close();
  }
}
