// ESO's GeneratorState for the leases a VaultDynamicSecret mints in the reconciler
// (docs/generators.md, "Generator state"), on the real apiserver with Kubernetes' garbage
// collector, against a real OpenBao whose database engine manages a real PostgreSQL. What a
// user would check, counted on the servers: one database user and one lease per
// ExternalSecret; a refresh mints a new user, the old one keeps working for the grace period
// (--generator-gc-grace-period) and is then revoked and dropped, never before its
// GeneratorState's deadline; deleting the ExternalSecret revokes the last lease and leaves no
// user, lease or GeneratorState. No lease id in the controller's logs, Events or status.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { GENERATORS_GROUP, type GeneratorState } from '../../../src/api/types.js';
import { controllerEnv, decoded, getSecret, GROUP, ready, startController, until } from '../../support/fixtures/controller.js';
import { createNamespace } from '../../support/kube.js';
import { createToken } from '../../support/platform/backends/openbao.js';
import { dynamicFixture } from '../../support/fixtures/dynamic.js';

const GRACE_S = 20;
const env = await controllerEnv(t, { controllers: ['garbage-collector-controller'] });
const run = randomBytes(3).toString('hex');
const ns = await createNamespace(env.kc, 'ctl-gs', t, { 'esi-gs-run': run });
const f = await dynamicFixture(t);
// Generator-only ExternalSecrets have no store class: this controller serves the unclassed
// ones, in this test's namespace only.
const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--leader-elect=false', '--coalesce-window', '0s',
  '--namespace-selector', `esi-gs-run=${run}`, '--generator-gc-grace-period', `${GRACE_S}s`], t);

const v1alpha1 = { group: GENERATORS_GROUP, version: 'v1alpha1', namespace: ns };
const states = async () => ((await env.custom.listNamespacedCustomObject({ ...v1alpha1, plural: 'generatorstates' })) as { items: GeneratorState[] }).items;

t.test('a lease superseded at refresh is revoked after the grace period; the last one when the ExternalSecret is deleted', async (t) => {
  const rolesBefore = await f.pg.roles();
  const newRoles = async () => (await f.pg.roles()).filter((r) => !rolesBefore.includes(r));
  await env.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'bao-token' }, stringData: { token: await createToken(f.vault, ['esi-dynamic']) } } });
  await env.custom.createNamespacedCustomObject({ ...v1alpha1, plural: 'vaultdynamicsecrets', body: {
    apiVersion: `${GENERATORS_GROUP}/v1alpha1`, kind: 'VaultDynamicSecret', metadata: { name: 'db' },
    spec: { path: 'database/creds/app', provider: { server: f.vault.addr, auth: { tokenSecretRef: { name: 'bao-token', key: 'token' } } } },
  } });
  await env.custom.createNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', body: {
    apiVersion: `${GROUP}/v1`, kind: 'ExternalSecret', metadata: { name: 'db' },
    spec: { refreshInterval: '1h', dataFrom: [{ sourceRef: { generatorRef: { apiVersion: `${GENERATORS_GROUP}/v1alpha1`, kind: 'VaultDynamicSecret', name: 'db' } } }] },
  } });
  await ready(env, ns, 'db', 'True');
  const first = decoded(await getSecret(env, ns, 'db'));
  t.same(await newRoles(), [first.username], 'one database user: the one in the Secret');
  const [lease1] = await f.dbLeases();
  t.equal((await f.dbLeases()).length, 1, 'one lease on the server');
  const [state1] = await states();
  t.match(state1, {
    metadata: {
      labels: { 'generators.external-secrets.io/owner-key': 'externalsecret-db-0' },
      ownerReferences: [{ kind: 'ExternalSecret', name: 'db' }],
      finalizers: ['esi.dev/generator-state-cleanup'],
    },
    spec: { resource: { kind: 'VaultDynamicSecret', metadata: { name: 'db' } }, state: { leaseId: `database/creds/app/${lease1}` } },
  }, 'a GeneratorState (ESO\'s owner key, owned by the ExternalSecret) holds the lease');
  t.notOk(state1!.spec.garbageCollectionDeadline, 'the lease in use has no deadline');

  // A refresh (ESO's force-sync) mints a new credential; the old one works through the overlap.
  await env.custom.patchNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'db',
    body: [{ op: 'add', path: '/metadata/annotations', value: { 'force-sync': '1' } }] });
  const second = await until('the rotated credential', async () => {
    const d = decoded(await getSecret(env, ns, 'db'));
    return d.username && d.username !== first.username ? d : undefined;
  });
  await f.pg.psql('SELECT 1', { user: first.username!, password: first.password! });
  t.pass('the superseded credential still logs in during the overlap');
  const old = (await states()).find((s) => s.metadata.name === state1!.metadata.name);
  const deadline = Date.parse(old?.spec.garbageCollectionDeadline ?? '');
  t.ok(deadline > Date.now(), `the superseded state is due in about ${GRACE_S} s`);
  await until('the superseded user dropped', async () => !(await f.pg.roles()).includes(first.username!) || undefined, (GRACE_S + 60) * 1000);
  t.ok(Date.now() >= deadline, 'revoked once its deadline had passed, not before');
  t.same(await newRoles(), [second.username], 'one database user: the new one');
  const leases = await f.dbLeases();
  t.equal(leases.length, 1, 'one lease on the server');
  t.notOk(leases.includes(lease1!), 'the superseded lease is revoked');
  await until('the superseded state gone', async () => (await states()).length === 1 || undefined);
  await f.pg.psql('SELECT 1', { user: second.username!, password: second.password! });
  t.pass('the credential in the Secret logs in');

  // No lease id where a user or another tenant reads.
  const texts = {
    'controller log': ctl.output(),
    events: JSON.stringify((await env.core.listNamespacedEvent({ namespace: ns })).items),
    status: JSON.stringify((await env.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'db' })).status),
  };
  for (const [where, text] of Object.entries(texts)) t.notOk(leases.some((l) => text.includes(l)) || text.includes(lease1!), `no lease id in the ${where}`);

  // Deleting the ExternalSecret: the garbage collector deletes its states, whose finalizer
  // revokes the last lease.
  await env.custom.deleteNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'db' });
  await until('no database user left', async () => (await newRoles()).length === 0 || undefined, 90_000);
  t.same(await f.dbLeases(), [], 'no lease left on the server');
  await until('no GeneratorState left', async () => (await states()).length === 0 || undefined);
  t.pass('no GeneratorState left');
});

t.test('a credential that reached no Secret is revoked at once (the sync failed after the mint)', async (t) => {
  const rolesBefore = await f.pg.roles();
  // The template source is read after the generator ran: the sync fails with TemplateError
  // and is retried with backoff, minting (and revoking) each time.
  await env.custom.createNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', body: {
    apiVersion: `${GROUP}/v1`, kind: 'ExternalSecret', metadata: { name: 'unused' },
    spec: {
      refreshInterval: '1h', dataFrom: [{ sourceRef: { generatorRef: { apiVersion: `${GENERATORS_GROUP}/v1alpha1`, kind: 'VaultDynamicSecret', name: 'db' } } }],
      target: { template: { templateFrom: [{ configMap: { name: 'absent', items: [{ key: 'k' }] } }] } },
    },
  } });
  await ready(env, ns, 'unused', 'False', 'TemplateError');
  t.notOk(await getSecret(env, ns, 'unused'), 'no Secret');
  await until('a failed sync\'s lease revoked', async () => ctl.output().split('\n').some((l) => l.includes('revoked the lease') && l.includes(`${ns}/gen-externalsecret-unused-`)) || undefined);
  t.pass('the controller revoked the lease of a failed sync');
  // Between two retries nothing is left: each mint was revoked when its sync failed.
  await until('no database user and no lease left between retries', async () =>
    ((await f.pg.roles()).every((r) => rolesBefore.includes(r)) && (await f.dbLeases()).length === 0) || undefined, 90_000);
  t.pass('no database user and no lease left while the ExternalSecret still exists');
  await env.custom.deleteNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name: 'unused' });
  await until('no GeneratorState left', async () => (await states()).length === 0 || undefined);
  t.same(await f.dbLeases(), [], 'no lease left');
});
