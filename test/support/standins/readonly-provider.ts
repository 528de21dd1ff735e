// A read-only provider for the controller tests, loaded into the controller process with
// `node --import` (startController's `imports`) and added through the registry's own seam
// (registerProvider): ESI has no read-only provider of its own, so this is how a ReadOnly
// store is exercised end to end. It takes the key of an ESO provider ESI does not
// implement (`passworddepot`, read-only in ESO too) because the SecretStore CRD keeps that
// key's fields; what it reports is its own: capabilities.write = false, and every write
// call fails (they must never be reached).
import { capabilities, defineProvider } from '../../../src/providers/define.js';
import { NO_REFERENCES } from '../../../src/providers/refs.js';
import { registerProvider } from '../../../src/providers/registry.js';
import { ProviderError, type ProviderMeta, type SecretsClient } from '../../../src/providers/types.js';

export const READ_ONLY_PROVIDER = 'passworddepot';

const meta: ProviderMeta = {
  name: READ_ONLY_PROVIDER,
  capabilities: capabilities([], { versions: false, pushProperty: 'key', readOnly: true }),
  validateSpec: () => [],
  references: NO_REFERENCES,
};

const provider = defineProvider(meta, async (ctx) => {
  const refuse = async (): Promise<never> => {
    throw new ProviderError('Unsupported', ctx.storeId, 'the read-only test provider was asked to write');
  };
  const client: SecretsClient = {
    getSecret: async (ref) => new TextEncoder().encode(`value of ${ref.key}`),
    getSecretMap: refuse,
    getAllSecrets: refuse,
    pushSecret: refuse,
    deleteSecret: refuse,
    secretExists: refuse,
    validate: async () => undefined,
    close: async () => undefined,
  };
  return client;
});

registerProvider({ meta, load: async () => ({ provider }) });
