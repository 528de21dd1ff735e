// defineProvider (src/providers/define.ts) puts the caller's deadline on every client call.
import t from 'tap';
import { fetchExternalSecret } from '../../../src/externalsecret/fetch.js';
import { clientFrom } from '../../../src/providers/client.js';
import { capabilities, defineProvider } from '../../../src/providers/define.js';
import { NO_REFERENCES } from '../../../src/providers/refs.js';
import { type ProviderContext } from '../../../src/providers/types.js';

t.test('every client call honours the caller deadline', async (t) => {
  const never = () => new Promise<never>(() => undefined);
  // AbortSignal.timeout's timer does not keep the process alive; a store connection would.
  const alive = setInterval(() => undefined, 1000);
  t.teardown(() => clearInterval(alive));
  const provider = defineProvider({
    name: 'slow', capabilities: capabilities([], { versions: false, pushProperty: 'key' }), validateSpec: () => [], references: NO_REFERENCES,
  }, async () => clientFrom(never, async () => undefined));
  const client = await provider.newClient({ storeId: 'SecretStore/ns/slow', spec: {} } as ProviderContext);
  const started = Date.now();
  const err = await fetchExternalSecret(client, { name: 'es', data: [{ secretKey: 'k', remoteRef: { key: 'r' } }] }, { signal: AbortSignal.timeout(50) }).catch((e: Error) => e);
  t.match((err as Error).message, /ExternalSecret "es" data\[0\].*the caller's deadline passed \[Timeout\]/);
  t.ok(Date.now() - started < 5000, 'gave up at the deadline');
  await t.rejects(client.validate({ signal: AbortSignal.abort() }), { code: 'Timeout' }, 'an aborted signal fails at once');
});
