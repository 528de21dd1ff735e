// The stores a PushSecret may push to (src/controller/pushsecret/targets.ts): no loop back into
// the store a Secret came from, no ReadOnly store.
import t from 'tap';
import type { AnySecretStore } from '../../../../src/api/types.js';
import { loopProblems, storeProblems } from '../../../../src/controller/pushsecret/targets.js';

const store = (kind: 'SecretStore' | 'ClusterSecretStore', name: string) => ({ kind, metadata: { name, namespace: 'n' }, spec: { provider: { fake: { data: [] } } } }) as unknown as AnySecretStore;

t.test('loop check: a Secret is not pushed back into the store it came from', async (t) => {
  const secret = { metadata: { name: 'from-es', labels: { 'esi.dev/store-kind': 'SecretStore', 'esi.dev/store': 'vault' }, annotations: { 'esi.dev/source-store': 'SecretStore/vault' } } };
  t.match(loopProblems(secret, [store('SecretStore', 'vault'), store('SecretStore', 'aws')]).join(), /pushing it back into the store it came from is refused/);
  t.same(loopProblems(secret, [store('SecretStore', 'aws'), store('ClusterSecretStore', 'vault')]), []);
  t.same(loopProblems({ metadata: { name: 'plain' } }, [store('SecretStore', 'vault')]), []);
});

t.test('a ReadOnly store refuses pushes', async (t) => {
  const ready = { ensure: async () => ({ version: '1', ready: true, reason: 'Valid', message: 'ok' }) };
  const problems = await storeProblems([store('SecretStore', 'ro')], ready, async () => ({ capabilities: { write: false } }));
  t.match(problems.join(), /SecretStore "n\/ro" is ReadOnly \(provider "fake" cannot write\)/);
  t.same(await storeProblems([store('SecretStore', 'rw')], ready, async () => ({ capabilities: { write: true } })), []);
});
