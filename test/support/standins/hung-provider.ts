// A store that never answers, for the controller tests (loaded with `node --import`, like
// readonly-provider.ts): every read returns a promise that never settles and ignores the
// caller's signal, as a server that accepts the connection and then says nothing would.
// It takes the key of an ESO provider ESI does not implement (`chef`), whose fields the
// SecretStore CRD keeps. Only the reconciler's own per-call deadline can end such a call.
import { capabilities, defineProvider } from '../../../src/providers/define.js';
import { NO_REFERENCES } from '../../../src/providers/refs.js';
import { registerProvider } from '../../../src/providers/registry.js';
import type { ProviderMeta, SecretsClient } from '../../../src/providers/types.js';

export const HUNG_PROVIDER = 'chef';

const meta: ProviderMeta = {
  name: HUNG_PROVIDER,
  capabilities: capabilities([], { versions: false, pushProperty: 'key', readOnly: true }),
  validateSpec: () => [],
  references: NO_REFERENCES,
};

const never = (): Promise<never> => new Promise(() => undefined);

const provider = defineProvider(meta, async () => {
  const client: SecretsClient = {
    getSecret: never, getSecretMap: never, getAllSecrets: never,
    pushSecret: never, deleteSecret: never, secretExists: never,
    validate: async () => undefined,
    close: async () => undefined,
  };
  return client;
});

registerProvider({ meta, load: async () => ({ provider }) });
