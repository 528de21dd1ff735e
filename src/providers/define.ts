// The shared opening of every provider's client factory: the store spec is validated
// by the provider's own rules (the same ones the webhook runs at admission) before the
// provider-specific `connect` sees it, typed; the client it returns honours the caller's
// deadline (`CallOptions.signal`) on every call.
import { honourCallerDeadline } from './client.js';
import { ProviderError, type Capabilities, type PropertyMode, type Provider, type ProviderContext, type ProviderMeta, type SecretsClient } from './types.js';

export function defineProvider<Spec>(meta: ProviderMeta, connect: (ctx: ProviderContext, spec: Spec) => Promise<SecretsClient>): Provider {
  return {
    ...meta,
    async newClient(ctx: ProviderContext): Promise<SecretsClient> {
      const problems = meta.validateSpec(ctx.spec);
      if (problems.length > 0) throw new ProviderError('InvalidSpec', ctx.storeId, problems.join('; '));
      return honourCallerDeadline(await connect(ctx, ctx.spec as Spec), ctx.storeId);
    },
  };
}

type FindBy = keyof Capabilities['find'];

/** A provider's Capabilities in one line: what `find` supports, whether versions are
 *  addressable, what a pushed property means; reads and writes unless `readOnly`. */
export function capabilities(find: FindBy[], opts: { versions: boolean; pushProperty: PropertyMode; ownershipMark?: boolean; readOnly?: boolean }): Capabilities {
  const by = (k: FindBy) => find.includes(k);
  return {
    read: true,
    write: !opts.readOnly,
    find: { name: by('name'), tags: by('tags'), path: by('path') },
    versions: opts.versions,
    pushProperty: opts.pushProperty,
    ownershipMark: opts.ownershipMark ?? false,
  };
}

/** The write half of the contract for a provider that only reads (`readOnly` above): every
 *  write refused with one message naming the provider. The reconciler refuses pushes to a
 *  store whose capabilities cannot write before any call; these are the backstop. */
export abstract class ReadOnlyClient {
  protected constructor(private readonly readOnly: { storeId: string; provider: string }) {}

  private refused(): ProviderError {
    return new ProviderError('Unsupported', this.readOnly.storeId, `PushSecret is not supported by the ${this.readOnly.provider} provider`);
  }

  async pushSecret(): Promise<void> {
    throw this.refused();
  }

  async deleteSecret(): Promise<void> {
    throw this.refused();
  }

  async secretExists(): Promise<boolean> {
    throw this.refused();
  }
}
