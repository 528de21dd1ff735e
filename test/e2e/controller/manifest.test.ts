// `spec.target.manifest` (ESO's non-Secret targets), served for v1 ConfigMaps behind
// --allow-configmap-targets (docs/controller.md, "ConfigMap targets"), in `esi controller` on the real apiserver, every
// object written by a tenant (test/support/tenant.ts). ESO's documented manifests
// (its guide "Targeting Custom Resources", snippets manifest-basic-configmap.yaml,
// manifest-templated-configmap.yaml, manifest-labeled-configmap.yaml) apply unchanged and
// produce their ConfigMaps — the store is the tenant's, a fake SecretStore under the
// examples' name. A ConfigMap ESI does not manage is never taken over; a hand edit is
// repaired at the next refresh; bytes that are not UTF-8 go to binaryData. Without the flag
// the same ExternalSecret is refused naming it (test/e2e/controller/unserved.test.ts).
import t from 'tap';
import { parseAllDocuments } from 'yaml';
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { ExternalSecret } from '../../../src/api/types.js';
import { createTenant } from '../../support/tenant.js';
import { controllerEnv, fakeStore, GROUP, ready, startController, until } from '../../support/fixtures/controller.js';

const CANARY = 'ctl-manifest-canary-5e21';
const env = await controllerEnv(t);
const tenant = await createTenant(env.kc, 'ctl-manifest', t);
const ns = tenant.namespace;
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--allow-configmap-targets=true'], t);

// ESO's three ConfigMap examples, as documented (the tenant's client puts them in its namespace).
const documented = `
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: application-config
spec:
  refreshInterval: 1h
  secretStoreRef:
    name: vault-backend
    kind: SecretStore
  target:
    name: app-config
    manifest:
      apiVersion: v1
      kind: ConfigMap
  data:
  - secretKey: database-host
    remoteRef:
      key: config/database/host
  - secretKey: api-endpoint
    remoteRef:
      key: config/api/endpoint
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: templated-config
spec:
  refreshInterval: 1h
  secretStoreRef:
    name: vault-backend
    kind: SecretStore
  target:
    name: database-config
    manifest:
      apiVersion: v1
      kind: ConfigMap
    template:
      engineVersion: v2
      data:
        database.yaml: |
          host: {{ .dbHost }}
          port: 5432
          database: {{ .dbName }}
          connection_string: "postgresql://user:{{ .dbPassword }}@{{ .dbHost }}:5432/{{ .dbName }}"
  data:
  - secretKey: dbHost
    remoteRef:
      key: database/hostname
  - secretKey: dbName
    remoteRef:
      key: database/name
  - secretKey: dbPassword
    remoteRef:
      key: database/password
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: labeled-config
spec:
  refreshInterval: 1h
  secretStoreRef:
    name: vault-backend
    kind: SecretStore
  target:
    name: labeled-configmap
    manifest:
      apiVersion: v1
      kind: ConfigMap
    template:
      engineVersion: v2
      metadata:
        labels:
          app: myapp
          environment: production
        annotations:
          description: "Managed by External Secrets Operator"
      data:
        config.json: |
          {
            "feature_flags": {
              "new_ui": {{ .featureNewUI }},
              "beta_api": {{ .featureBetaAPI }}
            }
          }
  data:
  - secretKey: featureNewUI
    remoteRef:
      key: features/new-ui
  - secretKey: featureBetaAPI
    remoteRef:
      key: features/beta-api
`;

const custom = (plural: string, body: object) => tenant.custom.createNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural, body: { apiVersion: `${GROUP}/v1`, ...body } }) as Promise<ExternalSecret>;
const configMap = (name: string) => tenant.core.readNamespacedConfigMap({ namespace: ns, name }).catch(() => undefined);
const message = (e: ExternalSecret) => e.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';

await custom('secretstores', fakeStore('vault-backend', env.cls, [
  { key: 'config/database/host', value: 'db.internal' },
  { key: 'config/api/endpoint', value: 'https://api.internal' },
  { key: 'database/hostname', value: 'pg.internal' },
  { key: 'database/name', value: 'orders' },
  { key: 'database/password', value: `${CANARY}-pw` },
  { key: 'features/new-ui', value: 'true' },
  { key: 'features/beta-api', value: 'false' },
  { key: 'binary', value: Buffer.from([0xff, 0x00, 0x41]).toString('base64') },
]));

t.test('ESO\'s documented ConfigMap targets apply unchanged as a tenant and produce their ConfigMaps', async (t) => {
  const docs = parseAllDocuments(documented).map((d) => d.toJS() as ExternalSecret);
  for (const doc of docs) {
    const stored = await custom('externalsecrets', doc);
    t.match(stored.spec, doc.spec, `${doc.metadata.name}: stored as written (the apiserver adds only defaults)`);
  }
  for (const doc of docs) await ready(env, ns, doc.metadata.name!, 'True', 'SecretSynced');

  const app = await configMap('app-config');
  t.same(app?.data, { 'database-host': 'db.internal', 'api-endpoint': 'https://api.internal' }, 'no template: each key as written');
  t.match(app?.metadata?.ownerReferences, [{ kind: 'ExternalSecret', name: 'application-config', controller: true }], 'creationPolicy Owner: owned by the ExternalSecret');
  const es = (await tenant.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'application-config' })) as ExternalSecret;
  t.equal(message(es), `ConfigMap "app-config" is in sync with SecretStore "${ns}/vault-backend"`);

  t.same((await configMap('database-config'))?.data, {
    'database.yaml': `host: pg.internal\nport: 5432\ndatabase: orders\nconnection_string: "postgresql://user:${CANARY}-pw@pg.internal:5432/orders"\n`,
  }, 'template.data rendered into data');

  const labeled = await configMap('labeled-configmap');
  t.same(JSON.parse(labeled?.data?.['config.json'] ?? '{}'), { feature_flags: { new_ui: true, beta_api: false } });
  t.match(labeled?.metadata?.labels, { app: 'myapp', environment: 'production' }, 'template.metadata.labels');
  t.match(labeled?.metadata?.annotations, { description: 'Managed by External Secrets Operator' }, 'template.metadata.annotations');
  for (const name of ['app-config', 'database-config', 'labeled-configmap']) {
    t.notOk(await tenant.core.readNamespacedSecret({ namespace: ns, name }).catch(() => undefined), `no Secret ${name}`);
  }
});

t.test('a ConfigMap ESI does not manage is never taken over', async (t) => {
  await tenant.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'settings' }, data: { mode: 'theirs' } } });
  await custom('externalsecrets', { kind: 'ExternalSecret', metadata: { name: 'grab' }, spec: {
    refreshInterval: '1h', secretStoreRef: { name: 'vault-backend' }, target: { name: 'settings', manifest: { apiVersion: 'v1', kind: 'ConfigMap' } },
    data: [{ secretKey: 'mode', remoteRef: { key: 'database/name' } }],
  } });
  const e = await ready(env, ns, 'grab', 'False', 'SecretConflict');
  t.match(message(e), `ConfigMap "${ns}/settings" exists and is not managed by ESI`);
  t.same((await configMap('settings'))?.data, { mode: 'theirs' }, 'left as it was');
});

t.test('a hand edit is repaired at the next refresh; bytes that are not UTF-8 go to binaryData', async (t) => {
  await custom('externalsecrets', { kind: 'ExternalSecret', metadata: { name: 'bytes' }, spec: {
    refreshInterval: '2s', secretStoreRef: { name: 'vault-backend' }, target: { manifest: { apiVersion: 'v1', kind: 'ConfigMap' } },
    data: [
      { secretKey: 'name', remoteRef: { key: 'database/name' } },
      { secretKey: 'raw', remoteRef: { key: 'binary', decodingStrategy: 'Base64' } },
    ],
  } });
  await ready(env, ns, 'bytes', 'True');
  const cm = (await configMap('bytes'))!;
  t.same(cm.data, { name: 'orders' });
  t.same(cm.binaryData, { raw: Buffer.from([0xff, 0x00, 0x41]).toString('base64') });
  await tenant.core.replaceNamespacedConfigMap({ namespace: ns, name: 'bytes', body: { ...cm, data: { name: 'edited' } } as V1ConfigMap });
  await until('the edit is repaired', async () => (await configMap('bytes'))?.data?.name === 'orders');
  t.pass('repaired');
});

t.test('no value in status or the controller\'s log', async (t) => {
  for (const n of ['application-config', 'templated-config', 'labeled-config', 'grab', 'bytes']) {
    const e = (await tenant.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: n })) as ExternalSecret;
    t.notOk(JSON.stringify(e.status).includes(CANARY), `${n}: no value in status`);
  }
  t.notOk(ctl.output().includes(CANARY), 'no value in the log');
});
