// wrapClient (src/providers/client.ts) sees every store call and keeps the client's own members.
import t from 'tap';
import { clientFrom, wrapClient } from '../../../src/providers/client.js';
import { type SecretsClient } from '../../../src/providers/types.js';

t.test('wrapClient sees every store call and keeps the client\'s own members', async (t) => {
  const seen: string[] = [];
  const inner = Object.assign(clientFrom(async (name) => name, async () => undefined), { extra: 42 });
  const wrapped = wrapClient(inner, (name, _args, next) => (seen.push(name), next()));
  const calls: (keyof SecretsClient)[] = ['getSecret', 'getSecretMap', 'getAllSecrets', 'pushSecret', 'deleteSecret', 'secretExists', 'validate'];
  for (const c of calls) await (wrapped[c] as (...a: unknown[]) => Promise<unknown>)({ key: 'k', remoteKey: 'k' }, { remoteKey: 'k' });
  t.same(seen, calls);
  t.equal(wrapped.extra, 42);
});
