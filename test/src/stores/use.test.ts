// Using a store (src/stores/use.ts): the webhook's resolution says, for the same rule, the
// message the reconcilers write into status (they call the same functions; the platform
// tests test/e2e/controller/access.test.ts and test/e2e/webhook/denials.test.ts assert them on the
// stored objects). Here the webhook path is compared with the shared messages directly.
import t from 'tap';
import type { AnySecretStore } from '../../../src/api/types.js';
import { crossNamespaceRefs, describeStore, lookupStore, namespaceRefusal, storeNotFound } from '../../../src/stores/use.js';
import { ManifestLookup } from '../../../webhook/inject-cmd.js';
import { resolve } from '../../../webhook/resolve.js';
import type { InjectionRequest } from '../../../src/pod-contract/annotations.js';

const NS = 'team-a';
const vault = (tokenSecretRef: Record<string, string>) => ({ vault: { server: 'https://v:8200', auth: { tokenSecretRef } } });
const objects = [
  { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } },
  { apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'cross', namespace: NS },
    spec: { provider: vault({ name: 'root', key: 'token', namespace: 'kube-system' }) } },
  { apiVersion: 'external-secrets.io/v1', kind: 'ClusterSecretStore', metadata: { name: 'elsewhere' },
    spec: { conditions: [{ namespaces: ['team-b'] }], provider: { fake: { data: [] } } } },
  ...[['missing', 'SecretStore'], ['missing-css', 'ClusterSecretStore'], ['cross', 'SecretStore'], ['elsewhere', 'ClusterSecretStore']].map(([store, kind]) => ({
    apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: `es-${store}`, namespace: NS },
    spec: { secretStoreRef: { name: store, kind }, data: [{ secretKey: 'k', remoteRef: { key: 'k' } }] },
  })),
];
const lookup = new ManifestLookup(objects);
const request = (secret: string) => ({ secrets: [secret] }) as unknown as InjectionRequest;
const problems = (secret: string) => {
  const r = resolve({ namespace: NS, serviceAccountName: 'default' }, request(secret), lookup);
  return r.ok ? [] : r.problems;
};

t.test('not found: the one message, for both kinds', async (t) => {
  t.same(problems('es-missing'), [`ExternalSecret "es-missing": ${storeNotFound({ name: 'missing' }, NS, 'spec.secretStoreRef')}`]);
  t.equal(storeNotFound({ name: 'missing' }, NS, 'spec.secretStoreRef'), `SecretStore "${NS}/missing" not found; create it or fix spec.secretStoreRef`);
  t.equal(storeNotFound({ kind: 'ClusterSecretStore', name: 'missing-css' }, NS, 'spec.secretStoreRefs[0]'), 'ClusterSecretStore "missing-css" not found; create it or fix spec.secretStoreRefs[0]');
  t.same(problems('es-missing-css'), [`ExternalSecret "es-missing-css": ${storeNotFound({ kind: 'ClusterSecretStore', name: 'missing-css' }, NS, 'spec.secretStoreRef')}`]);
});

t.test('a ClusterSecretStore its conditions keep from a namespace: the one message', async (t) => {
  const store = lookupStore(lookup, { kind: 'ClusterSecretStore', name: 'elsewhere' }, NS)!;
  const refusal = namespaceRefusal(store, lookup, NS);
  t.equal(refusal, `ClusterSecretStore "elsewhere" may not be used from namespace "${NS}": its spec.conditions do not admit namespace "${NS}"`);
  t.same(problems('es-elsewhere'), [refusal]);
  t.match(namespaceRefusal(store, { namespace: () => undefined }, 'new-ns'), /namespace "new-ns" is not known yet; retry/);
  t.equal(namespaceRefusal(lookupStore(lookup, { name: 'cross' }, NS)!, lookup, 'team-b'), undefined, 'a SecretStore has no conditions');
});

t.test('a credential in another namespace: the webhook says what the reconciler writes', async (t) => {
  const store = lookupStore(lookup, { name: 'cross' }, NS) as AnySecretStore;
  const [cross] = crossNamespaceRefs(store.spec.provider, NS);
  t.equal(cross, `vault.auth.tokenSecretRef references Secret "kube-system/root" in another namespace; ESI reads store credentials only from namespace "${NS}", where the store is used — use pod identity or a SecretStore in "${NS}"`);
  t.same(problems('es-cross'), [`${describeStore(store)}: ${cross}`]);
});
