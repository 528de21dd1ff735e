// Several stores in one ExternalSecret (ESO's per-entry `sourceRef.storeRef`) in
// `esi controller` on the real apiserver, every ExternalSecret written by a tenant
// (test/support/tenant.ts). ESO's documented example (its Bitwarden example, snippet
// bitwarden-secret.yaml: no spec.secretStoreRef, entries from three ClusterSecretStores)
// applies unchanged — only apiVersion v1 (ESI serves v1; ESO's v1beta1 has the same fields)
// and the tenant's namespace — and syncs; the stores are the operator's, fake stores under
// the example's names. A default store plus per-entry stores merge in ESO's order. The
// tenant boundary holds per store: a SecretStore only from the ExternalSecret's own
// namespace, each ClusterSecretStore's conditions and credential references checked for
// that namespace; a store of another controller class leaves the whole ExternalSecret to that
// controller (as ESO); a changed per-entry store re-fetches. No value in status or logs.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { parse } from 'yaml';
import type { ExternalSecret } from '../../../src/api/types.js';
import { createNamespace } from '../../support/kube.js';
import { createTenant } from '../../support/tenant.js';
import { controllerEnv, create, decoded, fakeStore, GROUP, patchSpec, ready, startController, until } from '../../support/fixtures/controller.js';

const CANARY = `multi-canary-${randomBytes(3).toString('hex')}`;
const env = await controllerEnv(t);
const run = randomBytes(3).toString('hex');
const tenant = await createTenant(env.kc, 'ctl-multi', t);
const ns = tenant.namespace;
const other = await createNamespace(env.kc, 'ctl-multi-oth', t);
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false'], t);

// ESO's snippet bitwarden-secret.yaml; apiVersion v1 and the tenant's namespace.
const documented = `
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata:
  name: my-db-secrets
  namespace: ${ns}
spec:
  target:
    name: my-db-secrets
    deletionPolicy: Delete
    template:
      type: Opaque
      data:
        username: |-
          {{ .username }}
        password: |-
          {{ .password }}
        postgres-password: |-
          {{ .postgres_password }}
        postgres-replication-password: |-
          {{ .postgres_replication_password }}
        db_url: |-
          postgresql://{{ .username }}:{{ .password }}@my-postgresql:5432/mydb
        seervice_account_key: |-
          {{ .service_account_key }}
  data:
    - secretKey: username
      sourceRef:
        storeRef:
          name: bitwarden-login
          kind: ClusterSecretStore  # or SecretStore
      remoteRef:
        key: aaaabbbb-cccc-dddd-eeee-000011112222
        property: username
    - secretKey: password
      sourceRef:
        storeRef:
          name: bitwarden-login
          kind: ClusterSecretStore  # or SecretStore
      remoteRef:
        key: aaaabbbb-cccc-dddd-eeee-000011112222
        property: password
    - secretKey: postgres_password
      sourceRef:
        storeRef:
          name: bitwarden-fields
          kind: ClusterSecretStore  # or SecretStore
      remoteRef:
        key: aaaabbbb-cccc-dddd-eeee-000011112222
        property: admin-password
    - secretKey: postgres_replication_password
      sourceRef:
        storeRef:
          name: bitwarden-fields
          kind: ClusterSecretStore  # or SecretStore
      remoteRef:
        key: aaaabbbb-cccc-dddd-eeee-000011112222
        property: postgres-replication-password
    - secretKey: service_account_key
      sourceRef:
        storeRef:
          name: bitwarden-notes
          kind: ClusterSecretStore  # or SecretStore
      remoteRef:
        key: service_account_key
`;

const ITEM = 'aaaabbbb-cccc-dddd-eeee-000011112222';
const clusterStores: string[] = [];
/** A fake ClusterSecretStore of this test's class admitting `namespaces` (spec.conditions). */
async function clusterStore(name: string, data: object[], namespaces: string[], provider?: object): Promise<void> {
  const body = fakeStore(name, env.cls, data as never, 'ClusterSecretStore', { conditions: [{ namespaces }] });
  if (provider) body.spec.provider = provider as never;
  await create(env, undefined, 'clustersecretstores', body);
  clusterStores.push(name);
}
t.teardown(async () => {
  for (const name of clusterStores) await env.custom.deleteClusterCustomObject({ group: GROUP, version: 'v1', plural: 'clustersecretstores', name }).catch(() => undefined);
});

const asTenant = (plural: string, body: object) => tenant.custom.createNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural, body: { apiVersion: `${GROUP}/v1`, ...body } }) as Promise<ExternalSecret>;
const es = (name: string, spec: object) => ({ apiVersion: `${GROUP}/v1`, kind: 'ExternalSecret', metadata: { name }, spec: { refreshInterval: '1h', ...spec } });
const secretOf = (name: string) => tenant.core.readNamespacedSecret({ namespace: ns, name }).catch(() => undefined);
const message = (e: ExternalSecret) => e.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';

await clusterStore('bitwarden-login', [{ key: ITEM, value: JSON.stringify({ username: 'orders', password: `${CANARY}-pw` }) }], [ns]);
await clusterStore('bitwarden-fields', [{ key: ITEM, value: JSON.stringify({ 'admin-password': `${CANARY}-admin`, 'postgres-replication-password': `${CANARY}-repl` }) }], [ns]);
await clusterStore('bitwarden-notes', [{ key: 'service_account_key', value: `${CANARY}-sa` }], [ns]);

t.test('ESO\'s documented multi-store ExternalSecret applies unchanged as a tenant and syncs from three stores', async (t) => {
  const doc = parse(documented) as ExternalSecret;
  const stored = await asTenant('externalsecrets', doc);
  t.match(stored.spec, doc.spec, 'stored as written (the apiserver adds only defaults)');
  t.equal(stored.spec.secretStoreRef, undefined, 'no spec.secretStoreRef: every entry names its store');
  await ready(env, ns, 'my-db-secrets', 'True', 'SecretSynced');
  const secret = await secretOf('my-db-secrets');
  t.same(decoded(secret), {
    username: 'orders', password: `${CANARY}-pw`, 'postgres-password': `${CANARY}-admin`, 'postgres-replication-password': `${CANARY}-repl`,
    db_url: `postgresql://orders:${CANARY}-pw@my-postgresql:5432/mydb`, seervice_account_key: `${CANARY}-sa`,
  });
  t.equal(secret?.type, 'Opaque');
  t.equal(secret?.metadata?.annotations?.['esi.dev/source-store'], 'ClusterSecretStore/bitwarden-login,ClusterSecretStore/bitwarden-fields,ClusterSecretStore/bitwarden-notes',
    'the Secret names every store its values came from (PushSecret refuses pushing it back into any of them)');
});

t.test('a default store and per-entry stores: dataFrom then data, as ESO merges them', async (t) => {
  await asTenant('secretstores', fakeStore('aws-store', env.cls, [{ key: 'database-credentials', value: JSON.stringify({ username: 'default-user', host: 'db.local' }) }]));
  await asTenant('secretstores', fakeStore('second', env.cls, [{ key: 'app/config', value: JSON.stringify({ host: 'second.local', port: '5432' }) }]));
  await asTenant('externalsecrets', es('mixed', {
    secretStoreRef: { name: 'aws-store', kind: 'SecretStore' },
    data: [
      { secretKey: 'username', remoteRef: { key: 'database-credentials', property: 'username' } },
      { secretKey: 'password', remoteRef: { key: ITEM, property: 'password' }, sourceRef: { storeRef: { name: 'bitwarden-login', kind: 'ClusterSecretStore' } } },
    ],
    dataFrom: [
      { extract: { key: 'database-credentials' } },
      { extract: { key: 'app/config' }, sourceRef: { storeRef: { name: 'second' } } },
    ],
  }));
  const e = await ready(env, ns, 'mixed', 'True', 'SecretSynced');
  t.same(decoded(await secretOf('mixed')), { username: 'default-user', host: 'second.local', port: '5432', password: `${CANARY}-pw` },
    'the later dataFrom entry wins over the earlier, data entries over both');
  t.equal(message(e), `Secret "mixed" is in sync with SecretStore "${ns}/aws-store", SecretStore "${ns}/second", ClusterSecretStore "bitwarden-login"`,
    'Ready names every store: the default, then each entry\'s (dataFrom, then data)');
});

t.test('tenant boundary, per store: own namespace only, each ClusterSecretStore\'s conditions and credential references', async (t) => {
  await create(env, other, 'secretstores', fakeStore('theirs', env.cls, [{ key: 'k', value: `${CANARY}-theirs` }]));
  await asTenant('externalsecrets', es('steal', {
    secretStoreRef: { name: 'aws-store' },
    data: [{ secretKey: 'x', remoteRef: { key: 'k' }, sourceRef: { storeRef: { name: 'theirs' } } }],
  }));
  const steal = await ready(env, ns, 'steal', 'False', 'StoreNotFound');
  t.match(message(steal), `SecretStore "${ns}/theirs" not found; create it or fix spec.data[0].sourceRef.storeRef`, 'a SecretStore is looked up in the ExternalSecret\'s namespace only');

  await clusterStore(`payments-${run}`, [{ key: 'k', value: `${CANARY}-pay` }], ['payments']);
  await asTenant('externalsecrets', es('pay', {
    secretStoreRef: { name: 'aws-store' },
    data: [{ secretKey: 'u', remoteRef: { key: 'database-credentials', property: 'username' } }],
    dataFrom: [{ extract: { key: 'k' }, sourceRef: { storeRef: { name: `payments-${run}`, kind: 'ClusterSecretStore' } } }],
  }));
  const pay = await ready(env, ns, 'pay', 'False', 'AccessDenied');
  t.match(message(pay), `ClusterSecretStore "payments-${run}" may not be used from namespace "${ns}"`, 'the conditions of the per-entry store apply');

  await env.core.createNamespacedSecret({ namespace: other, body: { metadata: { name: 'root-token' }, stringData: { token: `${CANARY}-root` } } });
  await clusterStore(`crossns-${run}`, [], [ns], { kubernetes: {
    remoteNamespace: other, server: { url: env.cp.server, caBundle: Buffer.from(env.cp.caPem).toString('base64') },
    auth: { token: { bearerToken: { name: 'root-token', key: 'token', namespace: other } } },
  } });
  await asTenant('externalsecrets', es('cross', {
    data: [
      { secretKey: 'a', remoteRef: { key: ITEM, property: 'username' }, sourceRef: { storeRef: { name: 'bitwarden-login', kind: 'ClusterSecretStore' } } },
      { secretKey: 'b', remoteRef: { key: 'root-token', property: 'token' }, sourceRef: { storeRef: { name: `crossns-${run}`, kind: 'ClusterSecretStore' } } },
    ],
  }));
  const cross = await ready(env, ns, 'cross', 'False', 'AccessDenied');
  t.match(message(cross), `references Secret "${other}/root-token" in another namespace`, 'credential references are checked for each store');
  for (const n of ['steal', 'pay', 'cross']) t.notOk(await secretOf(n), `no Secret ${n}`);
});

t.test('one store of another controller class: the ExternalSecret is left to that controller (as ESO)', async (t) => {
  await asTenant('secretstores', fakeStore('elsewhere', `${env.cls}-other`, [{ key: 'k', value: `${CANARY}-else` }]));
  const before = await ctl.counter('esi_controller_syncs_total', { result: 'skipped', reason: 'OtherClass' });
  await asTenant('externalsecrets', es('split', {
    secretStoreRef: { name: 'aws-store' },
    data: [
      { secretKey: 'u', remoteRef: { key: 'database-credentials', property: 'username' } },
      { secretKey: 'x', remoteRef: { key: 'k' }, sourceRef: { storeRef: { name: 'elsewhere' } } },
    ],
  }));
  await until('the controller skips it', async () => (await ctl.counter('esi_controller_syncs_total', { result: 'skipped', reason: 'OtherClass' })) > before);
  const e = (await tenant.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'split' })) as ExternalSecret;
  t.equal(e.status?.conditions, undefined, 'no status written: it belongs to the other class\'s controller');
  t.notOk(await secretOf('split'), 'no Secret');
});

t.test('a change of a per-entry store re-fetches (refreshInterval 1h)', async (t) => {
  await patchSpec(env, undefined, 'clustersecretstores', 'bitwarden-notes', (o) => {
    (o.spec as { provider: { fake: { data: object[] } } }).provider.fake.data = [{ key: 'service_account_key', value: `${CANARY}-sa2` }];
  });
  await until('the Secret holds the new note', async () => decoded(await secretOf('my-db-secrets')).seervice_account_key === `${CANARY}-sa2`);
  t.pass('re-fetched');
});

t.test('no value in status or the controller\'s log', async (t) => {
  for (const n of ['my-db-secrets', 'mixed', 'steal', 'pay', 'cross']) {
    const e = (await tenant.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: n })) as ExternalSecret;
    t.notOk(JSON.stringify(e.status).includes(CANARY), `${n}: no value in status`);
  }
  t.notOk(ctl.output().includes(CANARY), 'no value in the log');
});
