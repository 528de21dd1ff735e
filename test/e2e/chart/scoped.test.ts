// Scoped mode (docs/install.md, "Scoped mode"): controller.scopedNamespaces runs the controller with
// --watch-namespaces; controller.scopedRBAC swaps the ClusterRole for a Role in each listed
// namespace. Then on the real apiserver, with the RBAC the chart renders applied as is and
// `esi controller` run with the Deployment's own flags as its ServiceAccount: an ExternalSecret
// in a listed namespace gets its Secret, one in another namespace is left alone, and the
// controller neither crashes nor retries refused requests; ExternalSecrets and PushSecrets of
// a ClusterSecretStore (a cluster kind) are left alone too.
import { AuthorizationV1Api, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { createNamespace, kubeConfigForToken, serviceAccountToken } from '../../support/kube.js';
import { controllerEnv, create, decoded, externalSecret, fakeStore, getES, getSecret, ready, startController, until } from '../../support/fixtures/controller.js';
import { CHART, findHelm, Helm, ofKind, one, rulesOf, type K8sObject } from '../../support/helm.js';

const NS = 'esi-system';
const ctl = (objs: K8sObject[]) => objs.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'controller' && o.kind !== 'CustomResourceDefinition');
const argsOf = (objs: K8sObject[]) => (one(objs, 'Deployment') as K8sObject & { spec: { template: { spec: { containers: { args: string[] }[] } } } }).spec.template.spec.containers[0]!.args;
const scoped = (namespaces: string[], extra: string[] = []) => ['--set', 'controller.scopedRBAC=true', '--set-json', `controller.scopedNamespaces=${JSON.stringify(namespaces)}`, ...extra];

const found = await findHelm();
if (found.path) await suite(new Helm(found.path));
else t.plan(0, `helm is not available, scoped mode tests skipped: ${found.reason}`);

async function suite(helm: Helm): Promise<void> {
  t.test('render: scopedNamespaces sets --watch-namespaces; scopedRBAC gives Roles there and no cluster-wide Secret right', async (t) => {
    const plain = ctl(await helm.template('esi', NS));
    t.notOk(argsOf(plain).some((a) => a.startsWith('--watch-namespaces')), 'default: every namespace');
    t.same(ofKind(plain, 'Role').map((r) => r.metadata.name), ['esi-controller-lease']);

    const watchOnly = ctl(await helm.template('esi', NS, ['--set-json', 'controller.scopedNamespaces=["team-a","team-b"]']));
    t.ok(argsOf(watchOnly).includes('--watch-namespaces=team-a,team-b'), 'scopedNamespaces alone: the flag, RBAC unchanged (as ESO\'s scopedNamespace)');
    t.equal(ofKind(watchOnly, 'ClusterRole').length, 1);

    const objs = ctl(await helm.template('esi', NS, scoped(['team-a', 'team-b'])));
    t.ok(argsOf(objs).includes('--watch-namespaces=team-a,team-b'));
    const roles = ofKind(objs, 'Role').filter((r) => r.metadata.name === 'esi-controller');
    t.same(roles.map((r) => r.metadata.namespace), ['team-a', 'team-b'], 'one Role per listed namespace');
    t.same(ofKind(objs, 'RoleBinding').map((r) => r.metadata.namespace).sort(), ['esi-system', 'team-a', 'team-b']);
    const secrets = rulesOf(roles[0]!).find((r) => r.resources?.includes('secrets'));
    t.same(secrets?.verbs, ['get', 'list', 'watch', 'create', 'update', 'delete'], 'Secrets: written in the listed namespaces');
    t.notOk(rulesOf(roles[0]!).some((r) => r.resources?.some((x) => x.startsWith('cluster'))), 'no cluster kind in the Role');
    const cluster = rulesOf(one(objs, 'ClusterRole'));
    t.same(cluster, [{ apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], resourceNames: ['externalsecrets.external-secrets.io'], verbs: ['get'] }],
      'cluster-wide, only the one CRD --claim-unclassed=auto reads');
    t.same(ofKind(ctl(await helm.template('esi', NS, scoped(['team-a'], ['--set', 'controller.claimUnclassed=false']))), 'ClusterRole'), [], 'claimUnclassed decided: no ClusterRole at all');

    const refused = await helm.run(['template', 'esi', CHART, '--set', 'controller.scopedRBAC=true']);
    t.match(refused.stderr, /controller\.scopedRBAC needs controller\.scopedNamespaces/);
    const bad = await helm.run(['template', 'esi', CHART, '--set-json', 'controller.scopedNamespaces=["Team_A"]']);
    t.match(bad.stderr, /scopedNamespaces/, 'the schema refuses a name that is no namespace');
  });

  t.test('on the apiserver, under the rendered RBAC: serves the listed namespace, leaves the others, no 403 loop', async (t) => {
    const env = await controllerEnv(t);
    const { kc } = env;
    const run = randomBytes(3).toString('hex');
    const home = await createNamespace(kc, 'esi-scoped', t);
    const listed = await createNamespace(kc, 'esi-scoped-a', t);
    const other = await createNamespace(kc, 'esi-scoped-b', t);
    const release = `sc-${run}`;
    // Its own class, decided: no other test's controller serves these stores, and no ClusterRole.
    const objs = ctl(await helm.template(release, home, scoped([listed], ['--set', `controller.class=${env.cls}`, '--set', 'controller.claimUnclassed=false'])));
    const client = KubernetesObjectApi.makeApiClient(kc);
    t.same(ofKind(objs, 'ClusterRole'), [], 'nothing cluster-wide');
    for (const o of objs.filter((x) => ['ServiceAccount', 'Role', 'RoleBinding'].includes(x.kind))) await client.create(o as KubernetesObject);
    const sa = one(objs, 'ServiceAccount').metadata.name;

    const authz = kc.makeApiClient(AuthorizationV1Api);
    const user = `system:serviceaccount:${home}:${sa}`;
    const can = async (verb: string, resource: string, namespace?: string) => (await authz.createSubjectAccessReview({ body: {
      spec: { user, groups: ['system:serviceaccounts', `system:serviceaccounts:${home}`, 'system:authenticated'], resourceAttributes: { verb, resource, namespace } },
    } })).status!.allowed;
    t.ok(await can('list', 'secrets', listed), 'may list Secrets in the listed namespace');
    t.notOk(await can('list', 'secrets', other), 'may not list Secrets in another namespace');
    t.notOk(await can('list', 'secrets'), 'may not list Secrets cluster-wide');
    t.notOk(await can('list', 'namespaces'), 'may not list namespaces');

    const dir = await mkdtemp(join(tmpdir(), 'esi-scoped-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(kubeconfig, kubeConfigForToken(kc, await serviceAccountToken(kc, home, sa)).exportConfig(), { mode: 0o600 });
    // The Deployment's own flags; the fixture picks the probe port, and the pod's namespace is passed.
    // The chart's own port and its authenticated metrics are for a cluster: here the test
    // reads the controller's counters on the fixture's plain metrics port.
    const args = argsOf(objs).slice(1).filter((a) => !a.startsWith('--port=') && !a.startsWith('--metrics-'));
    const c = await startController(kubeconfig, [...args, '--namespace', home], t, { createNamespace: false });

    for (const ns of [listed, other]) {
      await create(env, ns, 'secretstores', fakeStore('store', env.cls, [{ key: 'db', value: `pw-${ns}` }]));
      await create(env, ns, 'externalsecrets', externalSecret('app', 'store', { data: [{ secretKey: 'password', remoteRef: { key: 'db' } }] }));
    }
    // A ClusterSecretStore is a cluster kind: not served in scoped mode, even of the controller's
    // own class and used from a listed namespace. It exists, of this test's class: a store
    // missing from the API is reported as StoreNotFound by whichever controller sees the
    // ExternalSecret (externalsecret/spec.ts), and the other test files' controllers, sharing this
    // control plane and watching every namespace, did so.
    const css = `css-${run}`;
    await create(env, undefined, 'clustersecretstores', fakeStore(css, env.cls, [{ key: 'db', value: 'pw-cluster' }], 'ClusterSecretStore'));
    t.teardown(() => env.custom.deleteClusterCustomObject({ group: 'external-secrets.io', version: 'v1', plural: 'clustersecretstores', name: css }).catch(() => undefined));
    await create(env, listed, 'externalsecrets', externalSecret('shared', css, { data: [{ secretKey: 'password', remoteRef: { key: 'db' } }] }, {}, 'ClusterSecretStore'));
    const pushSecret = (name: string, store: { name: string; kind: string }) => ({ apiVersion: 'external-secrets.io/v1alpha1', kind: 'PushSecret', metadata: { name }, spec: {
      secretStoreRefs: [store], selector: { secret: { name: 'app' } },
      data: [{ match: { secretKey: 'password', remoteRef: { remoteKey: `copy-${name}` } } }],
    } });
    const createPush = (body: object) => env.custom.createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1alpha1', namespace: listed, plural: 'pushsecrets', body });
    const getPush = async (name: string) => await env.custom.getNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1alpha1', namespace: listed, plural: 'pushsecrets', name }) as {
      status?: { conditions?: { type: string; status: string }[] }; metadata: { finalizers?: string[] };
    };
    await createPush(pushSecret('push', { name: css, kind: 'ClusterSecretStore' }));
    // Created after it, in the same namespace, to a store the controller serves (not the one
    // "app" came from: pushing back is refused): the same watch delivers it later, so once it
    // is pushed the controller has seen "push" too.
    await create(env, listed, 'secretstores', fakeStore('sink', env.cls, []));
    await createPush(pushSecret('push-own', { name: 'sink', kind: 'SecretStore' }));
    await ready(env, listed, 'app', 'True');
    t.same(decoded(await getSecret(env, listed, 'app')), { password: `pw-${listed}` }, 'the listed namespace is served');
    // Conditions, not a pause: the controller has decided on the objects asserted untouched.
    await until('the ExternalSecret of the ClusterSecretStore is skipped', async () => (await c.counter('esi_controller_syncs_total', { result: 'skipped', reason: 'ClusterKindNotServed' })) >= 1);
    let lastPush = '';
    await until('the PushSecret to its own store is pushed', async () => {
      const st = (await getPush('push-own')).status;
      lastPush = JSON.stringify(st);
      return st?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True');
    }).catch((err: Error) => Promise.reject(new Error(`${err.message}; last status: ${lastPush}\n${c.output().slice(-3000)}`)));
    // The unlisted namespace is not watched at all (nothing to wait for) and not writable under the Role.
    t.same((await getES(env, other, 'app')).status ?? {}, {}, 'no status on the ExternalSecret of an unlisted namespace');
    t.notOk(await getSecret(env, other, 'app'), 'no Secret written there');
    t.same((await getES(env, listed, 'shared')).status ?? {}, {}, 'an ExternalSecret of a ClusterSecretStore is left to another controller');
    const pushed = await getPush('push');
    t.same([pushed.status ?? {}, pushed.metadata.finalizers ?? []], [{}, []], 'a PushSecret to a ClusterSecretStore too: no status, no finalizer');
    t.equal(c.child.exitCode, null, 'still running');
    t.notMatch(c.output(), /forbidden|403|watch failed/i, 'no refused request, no watch restarts');
    t.match(c.output(), new RegExp(`"watchNamespaces":\\["${listed}"\\]`), 'the start-up line names the namespaces it serves');
  });
}
