// Authenticated metrics (docs/metrics.md, "Authentication"), on the real apiserver: the
// controller's and the webhook's /metrics answer a ServiceAccount allowed to get /metrics
// (200), refuse one without the right (403), a request without a token or with a made-up one
// (401), over HTTPS verified against the CA the process keeps in its Secret; plain mode still
// serves the probe port when asked. The chart's two ClusterRoles are applied as rendered and
// shown to be what each side needs.
import { CoreV1Api, RbacAuthorizationV1Api, type V1ClusterRole } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request } from 'node:https';
import t, { type Test } from 'tap';
import { MetricsAccessReview } from '../../../src/kube/access-review.js';
import { KubeRest } from '../../../src/kube/rest.js';
import { findHelm, Helm } from '../../support/helm.js';
import { createNamespace, kubeConfigForToken, serviceAccountToken } from '../../support/kube.js';
import { startWebhook } from '../../support/webhook.js';
import { freePort } from '../../support/platform/processes.js';
import { controllerEnv, startController, until } from '../../support/fixtures/controller.js';

const env = await controllerEnv(t);
const rbac = env.kc.makeApiClient(RbacAuthorizationV1Api);
const core = env.kc.makeApiClient(CoreV1Api);
const id = randomBytes(3).toString('hex');
const ns = await createNamespace(env.kc, 'metrics-auth', t);

/** The chart's ClusterRoles as rendered (helm template), or the same rules written here when
 *  helm cannot be built (the chart tests then say so). */
async function chartRoles(): Promise<{ auth: V1ClusterRole; reader: V1ClusterRole }> {
  const found = await findHelm();
  if (!found.path) {
    t.comment(`helm unavailable (${found.reason}); the ClusterRoles are written out`);
    return {
      auth: { rules: [{ apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] }, { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] }] },
      reader: { rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }] },
    };
  }
  const objs = await new Helm(found.path).template('esi', ns);
  const role = (name: string) => objs.find((o) => o.kind === 'ClusterRole' && o.metadata.name === name) as unknown as V1ClusterRole;
  return { auth: role('esi-metrics-auth'), reader: role('esi-metrics-reader') };
}

/** A ServiceAccount of `ns`, bound to a copy of `role` (unique name: the plane is shared). */
async function accountWith(name: string, role?: V1ClusterRole): Promise<string> {
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } });
  if (role) {
    const roleName = `esi-test-${name}-${id}`;
    await rbac.createClusterRole({ body: { metadata: { name: roleName }, rules: role.rules } });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: roleName }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: roleName },
        subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
      },
    });
    t.teardown(async () => {
      await rbac.deleteClusterRoleBinding({ name: roleName }).catch(() => undefined);
      await rbac.deleteClusterRole({ name: roleName }).catch(() => undefined);
    });
  }
  return serviceAccountToken(env.kc, ns, name);
}

const roles = await chartRoles();
const scraper = await accountWith('scraper', roles.reader);
const nobody = await accountWith('nobody');
const reviewer = await accountWith('esi-reviewer', roles.auth);

interface Answer { status: number; body: string }

function scrape(port: number, o: { ca: string; servername?: string; token?: string }): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers = o.token === undefined ? {} : { authorization: `Bearer ${o.token}` };
    const req = request({ host: '127.0.0.1', port, path: '/metrics', ca: o.ca, ...(o.servername ? { servername: o.servername } : {}), headers, agent: false, timeout: 15_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

function plainGet(port: number, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The CA bundle a ServiceMonitor's tlsConfig reads from the process's Secret. */
const caBundle = (secret: string) => until(`the CA bundle in ${secret}`, async () => {
  const s = await core.readNamespacedSecret({ name: secret, namespace: ns }).catch(() => undefined);
  const b = s?.data?.['ca-bundle.crt'];
  return b ? Buffer.from(b, 'base64').toString('utf8') : undefined;
});

/** The four answers a scraper can get, and the series the allowed one sees. */
async function fourAnswers(t: Test, port: number, o: { ca: string; servername?: string }, series: RegExp): Promise<void> {
  // The metrics port opens once its certificate is loaded, beside the rest of the process.
  const ok = await until('the metrics port answers', () => scrape(port, { ...o, token: scraper }).catch(() => undefined));
  t.equal(ok.status, 200, 'a ServiceAccount granted get on /metrics reads them');
  t.match(ok.body, series);
  const forbidden = await scrape(port, { ...o, token: nobody });
  t.equal(forbidden.status, 403, 'a ServiceAccount without the right is refused');
  t.match(forbidden.body, new RegExp(`user "system:serviceaccount:${ns}:nobody" may not get /metrics`), 'the refusal names who and what');
  t.notMatch(forbidden.body, series, 'and carries no metric');
  const none = await scrape(port, o);
  t.equal(none.status, 401, 'no token: 401');
  t.match(none.body, /needs a bearer token/);
  const bad = await scrape(port, { ...o, token: `${scraper.slice(0, -8)}AAAAAAAA` });
  t.equal(bad.status, 401, 'a token the apiserver does not accept: 401');
  t.match(bad.body, /the bearer token is not valid/);
}

t.test('the controller: HTTPS on its metrics port, reviewed; the probe port keeps the probes only', async (t) => {
  const metricsPort = await freePort();
  const ctl = await startController(env.cp.kubeconfigPath, [
    '--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--namespace', ns,
    '--metrics-secure=true', '--metrics-port', String(metricsPort), '--metrics-secret-name', 'ctl-metrics-tls', '--metrics-service-name', 'esi-controller-metrics',
  ], t);
  const ca = await caBundle('ctl-metrics-tls');
  // Verified as Prometheus verifies it: the CA from the Secret, the Service's DNS name.
  await fourAnswers(t, metricsPort, { ca, servername: `esi-controller-metrics.${ns}.svc` }, /^esi_controller_queue_depth /m);
  t.equal((await plainGet(ctl.port, '/metrics')).status, 404, 'no unauthenticated /metrics on the plain port');
  t.equal((await plainGet(ctl.port, '/readyz')).status, 200, 'the kubelet probes stay plain');
});

t.test('the controller in plain mode, when the operator asks: /metrics to anyone on the probe port', async (t) => {
  const ctl = await startController(env.cp.kubeconfigPath, ['--controller-class', env.cls, '--claim-unclassed=false', '--leader-elect=false', '--metrics-secure=false'], t);
  const plain = await plainGet(ctl.port, '/metrics');
  t.equal(plain.status, 200);
  t.match(plain.body, /^esi_controller_queue_depth /m);
});

t.test('the webhook: /metrics on its HTTPS port, reviewed', async (t) => {
  const configName = `esi-metrics-${id}`;
  const wh = await startWebhook({ kubeconfigPath: env.cp.kubeconfigPath, namespace: ns, configName, extraArgs: ['--metrics-secure=true'] });
  t.teardown(() => wh.stop());
  const ca = await caBundle(`${configName}-tls`);
  // The test's webhook certificate names 127.0.0.1 (--cert-extra-sans), where it is reached.
  await fourAnswers(t, wh.port, { ca }, /^esi_cache_synced /m);
});

t.test("the chart's ClusterRoles are what each side needs", async (t) => {
  const asReviewer = new KubeRest(kubeConfigForToken(env.kc, reviewer));
  const asNobody = new KubeRest(kubeConfigForToken(env.kc, nobody));
  t.teardown(() => { asReviewer.close(); asNobody.close(); });
  const access = new MetricsAccessReview(asReviewer);
  t.equal((await access.check(`Bearer ${scraper}`)).status, 200, 'the metrics-auth role lets ESI review a token; the metrics-reader role lets its owner in');
  t.equal((await access.check(`Bearer ${nobody}`)).status, 403);
  const unbound = await new MetricsAccessReview(asNobody).check(`Bearer ${scraper}`);
  t.equal(unbound.status, 500, 'without the metrics-auth role the review itself is refused');
  t.match(unbound.message, /tokenreviews/, 'and the message says which review');
});
