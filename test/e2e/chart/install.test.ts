// The chart installed for real with the pinned helm on the test control plane: Helm
// creates every object, leaves existing external-secrets.io CRDs alone, the webhook's
// ServiceAccount holds exactly the permissions it needs (SubjectAccessReview), the pod
// template passes Pod Security "restricted", `esi webhook` run with the Deployment's own
// flags and the ServiceAccount's token bootstraps its certificate and publishes the
// caBundle, the admission selectors behave on the apiserver, `helm upgrade` keeps the
// published caBundle, and `helm uninstall` removes what Helm created.
//
// The MutatingWebhookConfiguration is scoped (webhook.namespaceSelectorExpressions) to
// namespaces labelled for this run, so it never intercepts other tests' pods.
import {
  AdmissionregistrationV1Api, ApiextensionsV1Api, AppsV1Api, AuthorizationV1Api, CoreV1Api, RbacAuthorizationV1Api,
  type V1MutatingWebhookConfiguration, type V1Pod,
} from '@kubernetes/client-node';
import { randomBytes, X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import t from 'tap';
import { installCrds } from '../../../src/api/crds.js';
import { createNamespace, kubeConfigForToken, serviceAccountToken } from '../../support/kube.js';
import { esiProcess } from '../../support/webhook.js';
import { freePort } from '../../support/platform/processes.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import { CHART, findHelm, Helm, KUBE_VERSION } from '../../support/helm.js';

const found = await findHelm();
if (found.path) await suite(new Helm(found.path));
else t.plan(0, `helm is not available, chart install tests skipped: ${found.reason}`);

const status = (err: unknown) => (err as { code?: number }).code;

function httpsReady(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', rejectUnauthorized: false, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

/** Connects verifying the served chain against `ca` for `servername`; resolves the leaf. */
function verifiedCert(port: number, ca: string, servername: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, ca, servername }, () => {
      const raw = s.getPeerCertificate().raw;
      s.end();
      resolve(new X509Certificate(raw));
    });
    s.on('error', reject);
  });
}

async function suite(helm: Helm): Promise<void> {
  const cp = await useControlPlane(t);
  const kc = cp.kc;
  await installCrds(kc);
  const runId = randomBytes(3).toString('hex');
  const release = `esi-it-${runId}`;
  const webhookName = `${release}-webhook`;
  const tlsSecret = `${webhookName}-tls`;
  // The release namespace carries the run label: only the chart's own NotIn rule keeps it out.
  const ns = await createNamespace(kc, 'esi-chart', t, { 'esi-test-run': runId, 'pod-security.kubernetes.io/enforce': 'restricted' });
  const appNs = await createNamespace(kc, 'esi-chart-app', t, { 'esi-test-run': runId });
  const scope = ['--set-json', `webhook.namespaceSelectorExpressions=[{"key":"esi-test-run","operator":"In","values":["${runId}"]}]`];
  const helmCluster = ['--namespace', ns, '--kubeconfig', cp.kubeconfigPath];
  const core = kc.makeApiClient(CoreV1Api);
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  const readMwc = () => admission.readMutatingWebhookConfiguration({ name: release });
  let installed = false;
  t.teardown(async () => {
    if (installed) await helm.run(['uninstall', release, ...helmCluster]);
  });

  t.test('helm install creates the release and leaves existing CRDs untouched', async (t) => {
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    const crdNames = ['externalsecrets', 'secretstores', 'clustersecretstores', 'pushsecrets'].map((p) => `${p}.external-secrets.io`);
    const versions = async () => Promise.all(crdNames.map(async (name) => (await ext.readCustomResourceDefinition({ name })).metadata!.resourceVersion));
    const before = await versions();
    const r = await helm.run(['install', release, CHART, ...helmCluster, ...scope], 180_000);
    t.equal(r.code, 0, `helm install: ${r.stdout}${r.stderr}`);
    installed = r.code === 0;
    t.match(r.stdout, /STATUS: deployed/);
    t.same(await versions(), before, 'CRDs installed by someone else are not modified (templates/crds.yaml renders only absent or own ones)');
    const d = await kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name: webhookName, namespace: ns });
    t.equal(d.spec!.replicas, 2);
    t.ok(await core.readNamespacedService({ name: webhookName, namespace: ns }));
    t.equal((await readMwc()).webhooks![0]!.clientConfig.service!.name, webhookName);
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    t.ok(await rbac.readClusterRole({ name: webhookName }));
    t.ok(await rbac.readNamespacedRole({ name: `${webhookName}-certs`, namespace: ns }));
  });

  t.test('the webhook ServiceAccount can do exactly what the webhook needs', async (t) => {
    const authz = kc.makeApiClient(AuthorizationV1Api);
    const user = `system:serviceaccount:${ns}:${webhookName}`;
    const can = async (verb: string, resource: string, opts: { group?: string; namespace?: string; name?: string } = {}) => {
      const review = await authz.createSubjectAccessReview({ body: {
        spec: { user, groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'], resourceAttributes: {
          verb, resource, group: opts.group ?? '', namespace: opts.namespace, name: opts.name,
        } },
      } });
      return review.status!.allowed;
    };
    const eso = { group: 'external-secrets.io' };
    const mwc = { group: 'admissionregistration.k8s.io' };
    const allowed: [string, string, Parameters<typeof can>[2]?][] = [
      ['list', 'externalsecrets', eso], ['watch', 'secretstores', eso], ['watch', 'clustersecretstores', eso],
      ['list', 'namespaces'], ['watch', 'namespaces'],
      ['create', 'secrets', { namespace: ns }], ['get', 'secrets', { namespace: ns, name: tlsSecret }],
      ['update', 'secrets', { namespace: ns, name: tlsSecret }], ['watch', 'secrets', { namespace: ns, name: tlsSecret }],
      ['get', 'mutatingwebhookconfigurations', { ...mwc, name: release }], ['update', 'mutatingwebhookconfigurations', { ...mwc, name: release }],
      // metrics.secure: who scrapes /metrics is asked of the apiserver (docs/metrics.md).
      ['create', 'tokenreviews', { group: 'authentication.k8s.io' }], ['create', 'subjectaccessreviews', { group: 'authorization.k8s.io' }],
    ];
    const denied: [string, string, Parameters<typeof can>[2]?][] = [
      ['list', 'secrets'], ['get', 'secrets', { namespace: appNs, name: 'db' }], ['list', 'secrets', { namespace: ns }],
      ['watch', 'secrets', { namespace: ns }], ['get', 'secrets', { namespace: ns, name: 'another' }],
      ['create', 'secrets', { namespace: appNs }], ['delete', 'secrets', { namespace: ns, name: tlsSecret }],
      ['update', 'mutatingwebhookconfigurations', { ...mwc, name: 'someone-else' }],
      ['delete', 'mutatingwebhookconfigurations', { ...mwc, name: release }], ['create', 'mutatingwebhookconfigurations', mwc],
      ['create', 'externalsecrets', { ...eso, namespace: appNs }], ['update', 'secretstores', { ...eso, namespace: appNs, name: 'x' }],
      ['list', 'pods'], ['create', 'serviceaccounts/token', { namespace: appNs, name: 'default' }],
    ];
    for (const [verb, resource, opts] of allowed) t.ok(await can(verb, resource, opts), `may ${verb} ${resource} ${JSON.stringify(opts ?? {})}`);
    for (const [verb, resource, opts] of denied) t.notOk(await can(verb, resource, opts), `may not ${verb} ${resource} ${JSON.stringify(opts ?? {})}`);
  });

  t.test('the webhook pod template passes Pod Security "restricted"', async (t) => {
    const d = await kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name: webhookName, namespace: ns });
    const pod: V1Pod = { metadata: { name: 'esi-webhook-psa', namespace: ns, labels: d.spec!.template.metadata!.labels }, spec: d.spec!.template.spec };
    const created = await core.createNamespacedPod({ namespace: ns, body: pod, dryRun: 'All' });
    t.equal(created.metadata!.name, 'esi-webhook-psa', 'admitted in a namespace enforcing restricted');
    const privileged: V1Pod = { metadata: { name: 'privileged' }, spec: { containers: [{ name: 'c', image: 'x', securityContext: { privileged: true } }] } };
    const refused = await core.createNamespacedPod({ namespace: ns, body: privileged, dryRun: 'All' }).then(() => undefined, (err: unknown) => err);
    t.equal(status(refused), 403, 'control: the same namespace refuses a privileged pod (PodSecurity admission is on)');
  });

  t.test('esi webhook with the chart flags and ServiceAccount bootstraps and publishes its certificate', async (t) => {
    const d = await kc.makeApiClient(AppsV1Api).readNamespacedDeployment({ name: webhookName, namespace: ns });
    const container = d.spec!.template.spec!.containers[0]!;
    t.equal(container.env!.find((e) => e.name === 'POD_NAMESPACE')!.valueFrom!.fieldRef!.fieldPath, 'metadata.namespace');
    const token = await serviceAccountToken(kc, ns, webhookName);
    const dir = await mkdtemp(join(tmpdir(), 'esi-chart-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const kubeconfig = join(dir, 'kubeconfig');
    await writeFile(kubeconfig, kubeConfigForToken(kc, token).exportConfig(), { mode: 0o600 });
    const port = await freePort();
    // The Deployment's own args; the test only moves the listener to a free local port
    // (later flags win) and points the client at the apiserver as the ServiceAccount.
    const args = [...container.args!, '--listen', '127.0.0.1', `--port=${port}`, '--kubeconfig', kubeconfig];
    const hook = esiProcess(args, { POD_NAMESPACE: ns, ESI_LOG_LEVEL: 'debug' });
    t.teardown(() => void hook.child.kill('SIGKILL'));
    const deadline = Date.now() + 30_000;
    while (!(await httpsReady(port))) {
      if (hook.child.exitCode !== null || Date.now() > deadline) throw new Error(`esi webhook never became ready:\n${hook.output()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    t.notMatch(hook.output(), /forbidden/i, 'no RBAC refusal in the log');
    const secret = await core.readNamespacedSecret({ name: tlsSecret, namespace: ns });
    const bundle = Buffer.from(secret.data!['ca-bundle.crt']!, 'base64').toString();
    let cfg: V1MutatingWebhookConfiguration = await readMwc();
    while (!cfg.webhooks![0]!.clientConfig.caBundle && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      cfg = await readMwc();
    }
    t.equal(Buffer.from(cfg.webhooks![0]!.clientConfig.caBundle ?? '', 'base64').toString(), bundle, 'caBundle = the CA bundle of its Secret');
    const leaf = await verifiedCert(port, bundle, `${webhookName}.${ns}.svc`);
    t.match(leaf.subjectAltName, `DNS:${webhookName}.${ns}.svc`, 'serving certificate for the chart Service, trusted by the published CA');
    const exited = new Promise((r) => hook.child.once('exit', r));
    hook.child.kill('SIGTERM');
    await exited;
  });

  t.test('admission: only opted-in pods, never in the release namespace', async (t) => {
    // No kubelet or kube-proxy here: the chart's Service has no reachable endpoint, so a pod
    // the apiserver sends to the webhook is refused (failurePolicy Fail), and a pod it
    // does not send is admitted. That shows which pods the selectors match.
    const pod = (name: string, labels: Record<string, string>): V1Pod => ({
      metadata: { name, labels }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
    });
    const create = (namespace: string, body: V1Pod) => core.createNamespacedPod({ namespace, body, dryRun: 'All' }).then(() => 'admitted', (err: unknown) => String((err as Error).message));
    t.equal(await create(appNs, pod('plain', {})), 'admitted', 'a pod without the label is never sent');
    t.equal(await create(appNs, pod('no', { 'esi.dev/inject': 'false' })), 'admitted', 'esi.dev/inject=false is not opted in');
    t.match(await create(appNs, pod('opted-in', { 'esi.dev/inject': 'true' })), /failed calling webhook \\*"inject\.esi\.dev/, 'an opted-in pod is sent (and Fail refuses it while ESI is unreachable)');
    t.equal(await create(ns, { ...pod('own', { 'esi.dev/inject': 'true' }), spec: { containers: [{
      name: 'app', image: 'x', securityContext: { allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } },
    }] } }), 'admitted', 'the release namespace is never sent, even opted in');
  });

  t.test('helm upgrade keeps the published caBundle (the webhook is stopped: nobody re-patches it)', async (t) => {
    const before = await readMwc();
    const ca = before.webhooks![0]!.clientConfig.caBundle;
    t.ok(ca, 'published before the upgrade');
    for (const extra of [['--set', 'logLevel=debug'], ['--set', 'webhook.timeoutSeconds=7']]) {
      const r = await helm.run(['upgrade', release, CHART, ...helmCluster, '--reuse-values', ...extra], 180_000);
      t.equal(r.code, 0, `helm upgrade ${extra.join(' ')}: ${r.stderr}`);
      const after = await readMwc();
      t.equal(after.webhooks![0]!.clientConfig.caBundle, ca, `caBundle unchanged after upgrade ${extra.join(' ')}`);
      t.equal(after.metadata!.annotations?.['esi.dev/ca-bundle-version'], before.metadata!.annotations?.['esi.dev/ca-bundle-version'], 'bundle version annotation kept');
    }
    t.equal((await readMwc()).webhooks![0]!.timeoutSeconds, 7, 'the upgrade itself was applied');
  });

  t.test('helm uninstall removes what Helm created; the webhook-created TLS Secret stays', async (t) => {
    const r = await helm.run(['uninstall', release, ...helmCluster, '--wait', '--timeout', '60s'], 120_000);
    t.equal(r.code, 0, r.stderr);
    installed = r.code !== 0;
    t.equal(status(await readMwc().catch((e: unknown) => e)), 404, 'MutatingWebhookConfiguration deleted');
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    t.equal(status(await rbac.readClusterRole({ name: webhookName }).catch((e: unknown) => e)), 404, 'ClusterRole deleted');
    t.ok(await core.readNamespacedSecret({ name: tlsSecret, namespace: ns }), 'TLS Secret left (docs/install.md: delete it by hand)');
  });

  t.comment(`chart installed with ${helm.path} on Kubernetes ${KUBE_VERSION}`);
}
