// A dynamic secret on the real node (kubelet + containerd, test/platform/node/): a pod
// annotated `esi.dev/dynamic-db` gets its own PostgreSQL user from OpenBao's database
// secrets engine (docs/dynamic-secrets.md), and that user lives exactly as long as the pod.
// What a user would check: the app's own process reads username and password from its files
// and logs in to the real PostgreSQL with them; exactly one database user and one lease
// exist for the pod; with a 30 s TTL the lease is renewed on the server and the app still
// logs in after the first TTL is over; after the pod is deleted the agent (a native sidecar,
// stopped after the app) revokes the lease before it could have expired and the database
// user is gone from pg_roles. The credential is in no pod spec, Event or log. At a role's
// max TTL the agent rotates: the app moves to the new user with no failed login and the old
// user is dropped after the overlap.
// OpenBao and PostgreSQL run on this host; pods reach them through forwarders into the
// node's network (reachableFromPods).
import { CoreV1Api, CustomObjectsApi, type V1Pod } from '@kubernetes/client-node';
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { dynamicFixture } from '../../support/fixtures/dynamic.js';
import { hashOf, logOf, nodeWithWebhook, reachableFromPods, until } from '../../support/fixtures/node.js';
import { holdsValue, pgApp } from '../../support/fixtures/pg-app.js';

// The first node file of a run waits for the node and the image build (see pods.test.ts).
t.setTimeout(900_000);
const { cp, node, run: RUN, webhook } = await nodeWithWebhook(t);
const kc = cp.kc;
const core = kc.makeApiClient(CoreV1Api);
const TTL_S = 30;
const f = await dynamicFixture(t, { defaultTtl: `${TTL_S}s`, maxTtl: '1h' });
const bao = await reachableFromPods(t, node, Number(new URL(f.vault.addr).port));
const pg = await reachableFromPods(t, node, f.pg.port);

const ready = (pod: V1Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const leaseOf = (id: string) => f.lookup(`database/creds/app/${id}`);

/** The pod's service account and an AppRole SecretStore `bao` in `ns`; then the database
 *  users created since (the pod's, as the agent mints them). */
async function withBaoStore(ns: string): Promise<() => Promise<string[]>> {
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'app' } } });
  await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'bao' }, stringData: { 'secret-id': await f.newSecretId() } } });
  await kc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: ns, plural: 'secretstores', body: {
    apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'bao' },
    spec: { provider: { vault: { server: `http://${bao.host}:${bao.port}`, auth: { appRole: { path: 'approle', roleId: f.roleId, secretRef: { name: 'bao', key: 'secret-id' } } } } } },
  } });
  const rolesBefore = await f.pg.roles();
  return async () => (await f.pg.roles()).filter((r) => !rolesBefore.includes(r));
}

t.test('a pod annotated for a database credential gets its own PostgreSQL user, renewed while it runs, revoked and dropped when it is deleted', async (t) => {
  const ns = await createNamespace(kc, 'node-dynamic', t, RUN);
  const newRoles = await withBaoStore(ns);
  const body: V1Pod = {
    metadata: { name: 'orders', labels: { 'esi.dev/inject': 'true' }, annotations: { 'esi.dev/dynamic-db': 'bao:database/creds/app' } },
    // Long enough for the agent's revocation at the end; the app exits on SIGTERM at once.
    spec: { serviceAccountName: 'app', terminationGracePeriodSeconds: 60, containers: [pgApp(node.esiImage, pg)] },
  };
  // The webhook resolves the store from its watch: retry until it has seen it.
  await until('the pod admitted', async () => core.createNamespacedPod({ namespace: ns, body }).then(() => true, () => undefined), 30_000);
  let last: V1Pod | undefined;
  const pod = await until('the pod Ready', async () => {
    last = await core.readNamespacedPod({ namespace: ns, name: 'orders' });
    return ready(last) ? last : undefined;
  }, 180_000).catch(async (err: Error) => {
    const agentLog = (await logOf(kc, ns, 'orders', 'esi-agent')).split('\n').slice(-5).join('\n');
    throw new Error(`${err.message}; statuses: ${JSON.stringify([...(last?.status?.initContainerStatuses ?? []), ...(last?.status?.containerStatuses ?? [])])}; agent log tail: ${agentLog}`);
  });
  t.equal(pod.spec!.nodeName, node.name, 'scheduled on the test node');
  t.equal(pod.spec!.initContainers!.find((c) => c.name === 'esi-agent')?.restartPolicy, 'Always', 'the agent is a native sidecar');

  const appLog = () => logOf(kc, ns, 'orders', 'app');
  const [, userHash, passwordHash, passwordLength] = /^cred (\w+) (\w+) (\d+)$/m.exec(await until('the app read its files', async () => {
    const log = await appLog();
    return /^cred /m.test(log) ? log : undefined;
  }, 60_000)) ?? [];
  t.ok(userHash && passwordHash, 'the app found username and password in its files');
  const [user] = await until('the database user', async () => {
    const roles = await newRoles();
    return roles.length > 0 ? roles : undefined;
  });
  t.equal(hashOf(user!), userHash, 'the username in the files is the database user minted for the pod');
  await until("the app's first login", async () => (await appLog()).includes(`login ok ${hashOf(user!)} `) || undefined, 60_000);
  t.pass("the app's own process logged in to PostgreSQL with the credential from its files (SELECT current_user is that user)");
  const [leaseId] = await until('the lease', async () => {
    const leases = await f.dbLeases();
    return leases.length > 0 ? leases : undefined;
  });

  // Renewed on the server, and still logging in once the first TTL is over: PostgreSQL's
  // VALID UNTIL moved with each renewal.
  await until('a renewal recorded on the server', async () => (await leaseOf(leaseId!))?.lastRenewal ?? undefined, 120_000);
  t.pass('the server recorded a renewal of the lease');
  const pastTtl = new RegExp(`^login ok ${hashOf(user!)} (\\d+)$`, 'gm');
  const log = await until('a login after the first TTL', async () => {
    const l = await appLog();
    return [...l.matchAll(pastTtl)].some((m) => Number(m[1]) > TTL_S + 5) ? l : undefined;
  }, 180_000);
  t.pass(`the app still logs in more than ${TTL_S + 5} s after it started (the lease was granted for ${TTL_S} s)`);
  t.notMatch(log, /^login failed/m, 'no failed login while the pod ran');
  t.same(await newRoles(), [user], 'exactly one database user for the pod');
  t.same(await f.dbLeases(), [leaseId], 'exactly one lease');

  // The credential is in the pod's files only: not in the pod, its Events, or any log.
  const texts = {
    pod: JSON.stringify(await core.readNamespacedPod({ namespace: ns, name: 'orders' })),
    events: JSON.stringify((await core.listNamespacedEvent({ namespace: ns })).items),
    logs: `${await appLog()}${await logOf(kc, ns, 'orders', 'esi-agent')}${webhook.output()}`,
  };
  for (const [where, text] of Object.entries(texts)) {
    t.notOk(text.includes(user!) || holdsValue(text, passwordHash!, Number(passwordLength)), `neither username nor password in the ${where}`);
    t.notOk(text.includes(leaseId!), `no lease id in the ${where}`);
  }

  // The pod ends: the lease is revoked (before the end its last renewal gave it) and the
  // database user dropped.
  const before = await leaseOf(leaseId!);
  let expiresAt = Date.now() + (before?.ttl ?? 0) * 1000;
  await core.deleteNamespacedPod({ namespace: ns, name: 'orders' });
  await until('the lease gone', async () => {
    const lease = await leaseOf(leaseId!);
    if (lease) expiresAt = Date.now() + lease.ttl * 1000;
    return lease ? undefined : true;
  }, 120_000);
  t.ok(Date.now() < expiresAt, `the lease was revoked, ${Math.round((expiresAt - Date.now()) / 1000)} s before it would have expired`);
  await until('the database user dropped', async () => !(await f.pg.roles()).includes(user!) || undefined, 60_000);
  t.pass('the database user is gone from pg_roles');
  await until('the pod gone', async () => core.readNamespacedPod({ namespace: ns, name: 'orders' }).then(() => undefined, () => true), 120_000);
  t.same(await newRoles(), [], 'no database user left');
  t.same(await f.dbLeases(), [], 'no lease left');
});

// The role's max TTL (45 s) ends the credential within the test: the agent renews it once
// (capped at 25 s), mints the successor ahead of the end, publishes it, and revokes the old
// lease after the overlap (5 s) — the app, logging in every 3 s with its files' current
// content, moves to the new user with no failed login, and the old user is dropped before
// its lease could have run out.
t.test('at the max TTL the pod gets a new database user without a failed login; the old one is revoked after the overlap', async (t) => {
  const ns = await createNamespace(kc, 'node-rotate', t, RUN);
  const newRoles = await withBaoStore(ns);
  const body: V1Pod = {
    metadata: { name: 'rotating', labels: { 'esi.dev/inject': 'true' }, annotations: { 'esi.dev/dynamic-db': 'bao:database/creds/rot', 'esi.dev/lease-overlap': '5s' } },
    spec: { serviceAccountName: 'app', terminationGracePeriodSeconds: 60, containers: [pgApp(node.esiImage, pg)] },
  };
  await until('the pod admitted', async () => core.createNamespacedPod({ namespace: ns, body }).then(() => true, () => undefined), 30_000);
  await until('the pod Ready', async () => ready(await core.readNamespacedPod({ namespace: ns, name: 'rotating' })) || undefined, 180_000);
  const appLog = () => logOf(kc, ns, 'rotating', 'app');
  const agentLog = () => logOf(kc, ns, 'rotating', 'esi-agent');
  const [first] = await until('the first database user', async () => {
    const roles = await newRoles();
    return roles.length > 0 ? roles : undefined;
  });
  const [firstLease] = await f.dbLeases('rot');
  await until('the app logged in as the first user', async () => (await appLog()).includes(`login ok ${hashOf(first!)} `) || undefined, 60_000);

  // Up to two users while the old credential is retiring, never more.
  let most = 0;
  const second = await until('the app logged in as a new user', async () => {
    const roles = await newRoles();
    most = Math.max(most, roles.length);
    const other = roles.find((r) => r !== first);
    return other && (await appLog()).includes(`login ok ${hashOf(other)} `) ? other : undefined;
  }, 120_000);
  t.pass('a new database user was minted ahead of the max TTL and the app logs in with it (it re-read its files)');
  await until('the old user dropped', async () => {
    most = Math.max(most, (await newRoles()).length);
    return !(await f.pg.roles()).includes(first!) || undefined;
  }, 60_000);
  t.ok((await agentLog()).includes('lease revoked'), 'the agent revoked the old lease after the overlap (not left to expire)');
  t.notOk(await f.lookup(`database/creds/rot/${firstLease}`), 'the old lease is gone from the server');
  t.ok(most <= 2, `at most two database users at once (the current and the retiring one): ${most}`);
  t.same(await newRoles(), [second], 'one database user once the overlap is over');
  t.notMatch(await appLog(), /^login failed/m, 'no failed login, before, during or after the rotation');
  t.notOk((await agentLog()).includes(firstLease!), 'no lease id in the agent\'s log');

  await core.deleteNamespacedPod({ namespace: ns, name: 'rotating' });
  await until('no database user left', async () => (await newRoles()).length === 0 || undefined, 120_000);
  t.same(await f.dbLeases('rot'), [], 'no lease left after the pod ended');
});
