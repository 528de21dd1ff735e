// The toy provider's client (loaded lazily through the registry, like every provider's).
import { defineProvider } from '../../../src/providers/define.js';
import { guard } from '../../../src/providers/errors.js';
import { selectProperty } from '../../../src/providers/json-path.js';
import { emptySecretMap, ProviderError, type SecretsClient } from '../../../src/providers/types.js';
import { meta, type ToySpec } from './meta.js';

export const provider = defineProvider<ToySpec>(meta, async (ctx, spec) => {
  const token = spec.tokenRef ? Buffer.from(await ctx.readCredential(spec.tokenRef)).toString('utf8').trim() : '';
  const identity = spec.audience ? await ctx.serviceAccountToken(spec.audience) : '';
  const value = (key: string) => new TextEncoder().encode(`${spec.greeting}, ${key}${token ? ` (token ${token.length} bytes)` : ''}${identity ? ' as the pod' : ''}`);
  const unsupported = async (): Promise<never> => {
    throw new ProviderError('Unsupported', ctx.storeId, 'the toy provider only reads');
  };
  const client: SecretsClient = {
    getSecret: async (ref) => selectProperty(value(ref.key), ref, ctx.storeId),
    getSecretMap: async (ref) => guard({ storeId: ctx.storeId, key: ref.key }, () => {
      const out = emptySecretMap();
      out[ref.key] = value(ref.key);
      return out;
    }),
    getAllSecrets: unsupported,
    pushSecret: unsupported,
    deleteSecret: unsupported,
    secretExists: unsupported,
    validate: async () => undefined,
    close: async () => undefined,
  };
  return client;
});
