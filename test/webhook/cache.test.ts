// What the webhook's caches keep of each object (webhook/cache.ts slim): everything
// admission reads (spec, labels, other annotations), nothing of what it never reads.
import t from 'tap';
import { slim } from '../../webhook/cache.js';

t.test('slim drops managedFields, last-applied-configuration and status; keeps spec, labels and other annotations', (t) => {
  const obj = {
    apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret',
    metadata: {
      name: 'db', namespace: 'team-a', labels: { app: 'x' },
      annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"big":true}', 'esi.dev/template-engine': 'handlebars' },
      managedFields: [{ manager: 'kubectl', operation: 'Apply' }],
    },
    spec: { secretStoreRef: { name: 'vault', kind: 'SecretStore' }, data: [{ secretKey: 'k', remoteRef: { key: 'a' } }] },
    status: { conditions: [{ type: 'Ready', status: 'True' }] },
  };
  const spec = structuredClone(obj.spec);
  slim(obj);
  t.same(obj.metadata, { name: 'db', namespace: 'team-a', labels: { app: 'x' }, annotations: { 'esi.dev/template-engine': 'handlebars' } });
  t.same(obj.spec, spec);
  t.notOk('status' in obj);
  t.end();
});

t.test('slim accepts objects without metadata or annotations', (t) => {
  const bare = { kind: 'Namespace' };
  slim(bare);
  t.same(bare, { kind: 'Namespace' });
  const ns = { kind: 'Namespace', metadata: { name: 'a', labels: { env: 'prod' } }, status: { phase: 'Active' } };
  slim(ns);
  t.same(ns, { kind: 'Namespace', metadata: { name: 'a', labels: { env: 'prod' } } });
  t.end();
});
