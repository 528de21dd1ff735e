// Helpers of the stores reached by their documented HTTP API (webhook, onepassword, doppler,
// bitwardensecretsmanager, infisical, akeyless, conjur): the status → error code map, the
// classifier of the egress module's errors and the CA bundle of a spec. The call itself, its
// bounds and the address policy are src/egress/http.ts (SECURITY.md, "The controller's
// network boundary").
import type { CAProvider } from '../api/types.js';
import { EgressError } from '../egress/connect.js';
import { ProviderError, type ProviderContext } from './types.js';

const PEM = '-----BEGIN CERTIFICATE-----';

/** ProviderError code for an HTTP status of a store's API. */
export function statusCode(status: number): 'AuthFailed' | 'Forbidden' | 'NotFound' | 'Unreachable' | 'Unknown' {
  if (status === 401) return 'AuthFailed';
  if (status === 403) return 'Forbidden';
  if (status === 404) return 'NotFound';
  if (status === 429 || status >= 500) return 'Unreachable';
  return 'Unknown';
}

/** The classifier of src/providers/errors.ts for the egress module's errors. */
export function classifyHttp(err: unknown): { code: ProviderError['code']; message: string } | undefined {
  return err instanceof EgressError ? { code: err.code, message: err.message } : undefined;
}

/** The PEM bundle of a store's `caBundle` (base64 of PEM, as ESO; a raw PEM is accepted
 *  too) and `caProvider` (a Secret key read like a credential, or a ConfigMap key). */
export async function storeCa(ctx: ProviderContext, field: string, caBundle?: string, caProvider?: CAProvider): Promise<string | undefined> {
  const parts: string[] = [];
  if (caBundle) parts.push(caBundle.includes(PEM) ? caBundle : Buffer.from(caBundle, 'base64').toString('utf8'));
  if (caProvider) {
    const ref = { name: caProvider.name, key: caProvider.key ?? '', ...(caProvider.namespace ? { namespace: caProvider.namespace } : {}) };
    const what = `${field}.caProvider (${caProvider.type} "${ref.name}", key "${ref.key}")`;
    if (caProvider.type === 'ConfigMap' && !ctx.readConfigMap) throw new ProviderError('InvalidSpec', ctx.storeId, `${what} cannot be read here; use caBundle or a caProvider of type Secret`);
    const raw = caProvider.type === 'ConfigMap' ? await ctx.readConfigMap!(ref) : await ctx.readCredential(ref);
    parts.push(Buffer.from(raw).toString('utf8'));
  }
  if (parts.length === 0) return undefined;
  if (!parts.every((p) => p.includes(PEM))) throw new ProviderError('InvalidSpec', ctx.storeId, `${field}.caBundle / caProvider holds no PEM certificate`);
  return parts.join('\n');
}
