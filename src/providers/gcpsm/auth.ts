// Credentials of the gcpsm provider, from the store's `auth`:
//  - `secretRef.secretAccessKeySecretRef`: a service-account key (JSON) mounted into the
//    agent; a JWT client signs its own tokens, no key ever leaves the process.
//  - `workloadIdentity`: the pod's own projected service-account token exchanged at
//    GCP STS (OAuth 2.0 token exchange, "workload identity federation") through an
//    external-account client whose subject token is `ctx.serviceAccountToken(audience)`.
//  - nothing: Application Default Credentials (GKE metadata server, …).
// Errors never quote the credential: only which part is missing or malformed.
import { IdentityPoolClient, JWT, type AuthClient } from 'google-auth-library';
import type { GCPSMProvider } from '../../api/types.js';
import { ProviderError, type ProviderContext } from '../types.js';
import { federationPlan, type FederationPlan } from './spec.js';

const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const STS_TOKEN_URL = 'https://sts.googleapis.com/v1/token';
export const JWT_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:jwt';

/** Test seams only (never read from the spec or the environment). */
export interface AuthOverrides {
  /** The STS endpoint (a local stand-in in tests). */
  stsTokenUrl?: string;
}

interface ServiceAccountKey {
  type?: unknown;
  client_email?: unknown;
  private_key?: unknown;
  private_key_id?: unknown;
  project_id?: unknown;
}

function parseKey(ctx: ProviderContext, raw: Uint8Array): ServiceAccountKey {
  let key: ServiceAccountKey;
  try {
    key = JSON.parse(Buffer.from(raw).toString('utf8')) as ServiceAccountKey;
  } catch {
    // JSON.parse messages quote the input: never propagate them.
    throw new ProviderError('AuthFailed', ctx.storeId, 'the service-account key (secretAccessKeySecretRef) is not valid JSON');
  }
  if (key === null || typeof key !== 'object') {
    throw new ProviderError('AuthFailed', ctx.storeId, 'the service-account key (secretAccessKeySecretRef) is not a JSON object');
  }
  if (key.type !== 'service_account') {
    throw new ProviderError('AuthFailed', ctx.storeId, 'the key in secretAccessKeySecretRef must be a service-account key (type "service_account")');
  }
  if (typeof key.client_email !== 'string' || typeof key.private_key !== 'string') {
    throw new ProviderError('AuthFailed', ctx.storeId, 'the service-account key lacks client_email or private_key');
  }
  return key;
}

/** A JWT client from the mounted service-account key; its project id as a fallback. */
export async function keyFileClient(ctx: ProviderContext, spec: GCPSMProvider): Promise<{ client: AuthClient; projectID?: string }> {
  const ref = spec.auth!.secretRef!.secretAccessKeySecretRef!;
  const key = parseKey(ctx, await ctx.readCredential({ name: ref.name, key: ref.key ?? '', namespace: ref.namespace }));
  const client = new JWT({
    email: key.client_email as string,
    key: key.private_key as string,
    keyId: typeof key.private_key_id === 'string' ? key.private_key_id : undefined,
    scopes: [CLOUD_PLATFORM_SCOPE],
  });
  // Self-signed JWT access tokens: no call to the OAuth token endpoint, the key signs.
  client.useJWTAccessWithScope = true;
  return { client, projectID: typeof key.project_id === 'string' ? key.project_id : undefined };
}

/** An external-account client that exchanges the pod's token at STS. */
function workloadIdentityClient(ctx: ProviderContext, plan: FederationPlan, overrides: AuthOverrides = {}): IdentityPoolClient {
  return new IdentityPoolClient({
    type: 'external_account',
    audience: plan.stsAudience,
    subject_token_type: JWT_TOKEN_TYPE,
    token_url: overrides.stsTokenUrl ?? STS_TOKEN_URL,
    scopes: [CLOUD_PLATFORM_SCOPE],
    // Re-read on every exchange: the kubelet rotates the projected token.
    subject_token_supplier: { getSubjectToken: () => ctx.serviceAccountToken(plan.tokenAudience) },
  });
}

/** Which credential the store uses; `adc` leaves it to Application Default Credentials. */
export type AuthMode = 'key' | 'workload-identity' | 'adc';

export function authMode(spec: GCPSMProvider): AuthMode {
  if (spec.auth?.secretRef?.secretAccessKeySecretRef) return 'key';
  if (spec.auth?.workloadIdentity) return 'workload-identity';
  return 'adc';
}

/** The auth client of the store (undefined = ADC), and a project id learnt from it. */
export async function storeCredentials(
  ctx: ProviderContext,
  spec: GCPSMProvider,
  overrides: AuthOverrides = {},
): Promise<{ client?: AuthClient; projectID?: string }> {
  switch (authMode(spec)) {
    case 'key':
      return keyFileClient(ctx, spec);
    case 'workload-identity': {
      const plan = federationPlan(spec.auth!.workloadIdentity!, spec.projectID);
      if (Array.isArray(plan)) throw new ProviderError('InvalidSpec', ctx.storeId, `workload identity needs ${plan.join(', ')}`);
      return { client: workloadIdentityClient(ctx, plan, overrides) };
    }
    default:
      return {};
  }
}
