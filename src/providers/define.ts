// The shared opening of every provider's client factory: the store spec is validated
// by the provider's own rules (the same ones the webhook runs at admission) before the
// provider-specific `connect` sees it, typed.
import { ProviderError, type Provider, type ProviderContext, type ProviderMeta, type SecretsClient } from './types.js';

export function defineProvider<Spec>(meta: ProviderMeta, connect: (ctx: ProviderContext, spec: Spec) => Promise<SecretsClient>): Provider {
  return {
    ...meta,
    async newClient(ctx: ProviderContext): Promise<SecretsClient> {
      const problems = meta.validateSpec(ctx.spec);
      if (problems.length > 0) throw new ProviderError('InvalidSpec', ctx.storeId, problems.join('; '));
      return connect(ctx, ctx.spec as Spec);
    },
  };
}
