// The chart's metrics values as an operator wiring Prometheus checks them: metrics.secure (the
// default) makes both processes review scrapers and gives them the ClusterRole to; the
// ServiceMonitors scrape over HTTPS with a token, verifying the name the certificates carry;
// metrics.readers binds the reader ClusterRole; plain mode when asked; the controller's
// ServiceMonitor keeps the ExternalSecret's namespace (honorLabels); the PrometheusRule's
// alerts read series the product exports; agent.resources reaches the webhook's flags.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { findHelm, Helm, ofKind, ROOT, rulesOf, type K8sObject } from '../../../support/helm.js';

const NS = 'esi-system';
const MONITORING = ['--api-versions', 'monitoring.coreos.com/v1/ServiceMonitor', '--api-versions', 'monitoring.coreos.com/v1/PrometheusRule'];
const SCRAPED = ['--set', 'metrics.serviceMonitor.enabled=true', '--set', 'metrics.controller.serviceMonitor.enabled=true', ...MONITORING];

interface Endpoint {
  port: string; scheme?: string; bearerTokenFile?: string; authorization?: unknown; honorLabels?: boolean; relabelings?: unknown[];
  tlsConfig?: { serverName: string; ca: { secret: { name: string; key: string } } };
}
type Named = K8sObject & Record<string, unknown>;
const named = (objs: K8sObject[], kind: string, name: string) => {
  const o = objs.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind}/${name} rendered`);
  return o as Named;
};
const endpoint = (objs: K8sObject[], name: string) => (named(objs, 'ServiceMonitor', name) as unknown as { spec: { endpoints: Endpoint[] } }).spec.endpoints[0]!;
interface Pod { serviceAccountName: string; containers: { args: string[]; ports?: { name: string; containerPort: number }[]; readinessProbe?: { httpGet: { port: string } } }[] }
const pod = (objs: K8sObject[], name: string) => (named(objs, 'Deployment', name) as unknown as { spec: { template: { spec: Pod } } }).spec.template.spec;
const flag = (args: string[], name: string) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

const found = await findHelm();
if (found.path) suite(new Helm(found.path));
else t.plan(0, `helm is not available, chart tests skipped: ${found.reason}`);

function suite(helm: Helm): void {
  t.test('metrics.secure (default): both processes review scrapers, with the RBAC to do it', async (t) => {
    const objs = await helm.template('esi', NS);
    const webhook = pod(objs, 'esi-webhook');
    const controller = pod(objs, 'esi-controller');
    t.equal(flag(webhook.containers[0]!.args, 'metrics-secure'), 'true', 'the webhook reviews /metrics callers');
    const args = controller.containers[0]!.args;
    t.equal(flag(args, 'metrics-secure'), 'true');
    t.equal(flag(args, 'metrics-port'), '8443');
    t.same(controller.containers[0]!.ports?.map((p) => [p.name, p.containerPort]), [['http-metrics', 8080], ['https-metrics', 8443]], 'probes on 8080, metrics on 8443');
    t.equal(controller.containers[0]!.readinessProbe?.httpGet.port, 'http-metrics', 'the kubelet probes stay plain (they carry no token)');

    const auth = named(objs, 'ClusterRole', 'esi-metrics-auth');
    t.same(rulesOf(auth), [
      { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
      { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
    ], 'creating the two reviews, nothing else');
    const binding = named(objs, 'ClusterRoleBinding', 'esi-metrics-auth') as unknown as { roleRef: { name: string }; subjects: { name: string; namespace: string }[] };
    t.equal(binding.roleRef.name, 'esi-metrics-auth');
    t.same(binding.subjects.map((s) => `${s.namespace}/${s.name}`).sort(), [`${NS}/${webhook.serviceAccountName}`, `${NS}/${controller.serviceAccountName}`].sort(), 'bound to the two pods\' ServiceAccounts');
    t.same(rulesOf(named(objs, 'ClusterRole', 'esi-metrics-reader')), [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }], 'the right a scraper needs');
    t.notOk(objs.some((o) => o.kind === 'ClusterRoleBinding' && o.metadata.name === 'esi-metrics-reader'), 'bound to nobody until metrics.readers names someone');

    // The controller keeps its metrics certificate in one Secret of its namespace.
    const lease = rulesOf(named(objs, 'Role', 'esi-controller-lease'));
    t.ok(lease.some((r) => r.resources?.includes('secrets') && r.verbs.join() === 'create' && !r.resourceNames), 'creates the Secret (create cannot be scoped by name)');
    t.ok(lease.some((r) => r.resources?.includes('secrets') && r.resourceNames?.join() === flag(args, 'metrics-secret-name') && r.verbs.join() === 'get,update'), 'reads and renews that Secret only');
  });

  t.test('metrics.readers: a ClusterRoleBinding of the reader ClusterRole to the subjects given', async (t) => {
    const subjects = [{ kind: 'ServiceAccount', name: 'prometheus-k8s', namespace: 'monitoring' }];
    const objs = await helm.template('esi', NS, ['--set-json', `metrics.readers=${JSON.stringify(subjects)}`]);
    const b = named(objs, 'ClusterRoleBinding', 'esi-metrics-reader') as unknown as { roleRef: { name: string }; subjects: unknown[] };
    t.equal(b.roleRef.name, 'esi-metrics-reader');
    t.same(b.subjects, subjects);
    const bad = await helm.run(['template', 'esi', join(ROOT, 'charts/esi'), '--set-json', 'metrics.readers=[{"kind":"Robot","name":"x"}]']);
    t.not(bad.code, 0, 'a subject kind RBAC does not know is refused by the schema');
  });

  t.test('the ServiceMonitors scrape over HTTPS with a token and verify the certificates\' names', async (t) => {
    const objs = await helm.template('esi', NS, SCRAPED);
    const wh = endpoint(objs, 'esi-webhook');
    t.match(wh, { scheme: 'https', bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' }, 'the webhook: Prometheus\' own token');
    const ctl = endpoint(objs, 'esi-controller');
    t.match(ctl, { port: 'https-metrics', scheme: 'https', bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token', honorLabels: true });
    const args = pod(objs, 'esi-controller').containers[0]!.args;
    const svc = named(objs, 'Service', 'esi-controller-metrics') as unknown as { metadata: { name: string }; spec: { ports: { targetPort: string }[] } };
    t.equal(svc.spec.ports[0]!.targetPort, 'https-metrics');
    t.equal(flag(args, 'metrics-service-name'), svc.metadata.name, 'the certificate names the Service the ServiceMonitor scrapes');
    t.equal(ctl.tlsConfig?.serverName, `${svc.metadata.name}.${NS}.svc`, 'and that name is verified');
    t.same(ctl.tlsConfig?.ca.secret, { name: flag(args, 'metrics-secret-name'), key: 'ca-bundle.crt' }, 'against the CA bundle the controller keeps');

    const token = { type: 'Bearer', credentials: { name: 'scrape-token', key: 'token' } };
    const relabel = [{ action: 'labeldrop', regex: 'pod' }];
    const custom = await helm.template('esi', NS, [...SCRAPED, '--set-json', `metrics.serviceMonitor.authorization=${JSON.stringify(token)}`,
      '--set-json', `metrics.serviceMonitor.relabelings=${JSON.stringify(relabel)}`, '--set-json', `metrics.controller.serviceMonitor.relabelings=${JSON.stringify(relabel)}`]);
    for (const name of ['esi-webhook', 'esi-controller']) {
      const e = endpoint(custom, name);
      t.same(e.authorization, token, `${name}: metrics.serviceMonitor.authorization replaces the token file`);
      t.equal(e.bearerTokenFile, undefined);
      t.same(e.relabelings, relabel, `${name}: relabelings passed through`);
    }
  });

  t.test('metrics.secure=false: plain, open /metrics, no review RBAC', async (t) => {
    const objs = await helm.template('esi', NS, ['--set', 'metrics.secure=false', ...SCRAPED]);
    t.equal(flag(pod(objs, 'esi-webhook').containers[0]!.args, 'metrics-secure'), 'false');
    const controller = pod(objs, 'esi-controller').containers[0]!;
    t.equal(flag(controller.args, 'metrics-secure'), 'false');
    t.same(controller.ports?.map((p) => p.name), ['http-metrics'], 'no HTTPS metrics port');
    t.notOk(objs.some((o) => /^esi-metrics-(auth|reader)$/.test(o.metadata.name)), 'no review ClusterRoles');
    t.notOk(rulesOf(named(objs, 'Role', 'esi-controller-lease')).some((r) => r.resources?.includes('secrets')), 'no Secret right for a certificate it does not need');
    const ctl = endpoint(objs, 'esi-controller');
    t.match(ctl, { port: 'http-metrics', honorLabels: true });
    t.equal(ctl.scheme, undefined, 'plain HTTP');
    t.equal(ctl.bearerTokenFile, undefined, 'no token sent');
    t.equal(endpoint(objs, 'esi-webhook').bearerTokenFile, undefined);
  });

  t.test('NetworkPolicy: the controller\'s HTTPS metrics port is open with metrics.secure', async (t) => {
    const ports = async (secure: boolean) => {
      const objs = await helm.template('esi', NS, ['--set', 'networkPolicy.enabled=true', '--set', `metrics.secure=${secure}`]);
      const np = named(objs, 'NetworkPolicy', 'esi-controller') as unknown as { spec: { ingress: { ports: { port: number }[] }[] } };
      return np.spec.ingress[0]!.ports.map((p) => p.port);
    };
    t.same(await ports(true), [8080, 8443]);
    t.same(await ports(false), [8080]);
  });

  t.test('the PrometheusRule: webhook, controller and agent alerts on series the product exports', async (t) => {
    type Rule = { alert: string; expr: string; for: string; annotations: Record<string, string> };
    const groups = async (args: string[]) => {
      const objs = await helm.template('esi', NS, ['--set', 'metrics.prometheusRule.enabled=true', ...args]);
      return (ofKind(objs, 'PrometheusRule')[0] as unknown as { spec: { groups: { name: string; rules: Rule[] }[] } }).spec.groups;
    };
    const all = await groups(SCRAPED);
    t.same(all.map((g) => g.name), ['esi', 'esi-webhook', 'esi-agents']);
    const rules = all.flatMap((g) => g.rules);
    const rule = (name: string) => rules.find((r) => r.alert === name)!;
    t.match(rule('ESIControllerNoLeader').expr, /absent\(esi_controller_leader\{namespace="esi-system"\}\)/, 'no controller scraped at all is "no leader" too');
    t.equal(rule('ESIWebhookDown').for, '2m', 'metrics.prometheusRule.webhookFor');
    t.match(rule('ESIWebhookDown').annotations.description, /failurePolicy Fail the apiserver refuses every pod labelled esi\.dev\/inject=true/);
    const ignore = (await groups([...SCRAPED, '--set', 'webhook.failurePolicy=Ignore'])).flatMap((g) => g.rules).find((r) => r.alert === 'ESIWebhookDown')!;
    t.match(ignore.annotations.description, /admits pods .* without their agent/, 'the text follows the failurePolicy');
    t.match(rule('ExternalSecretNotReady').annotations.summary, /\{\{ or \$labels\.exported_namespace \$labels\.namespace \}\}/, 'the ExternalSecret\'s namespace, renamed or not');
    t.notOk((await groups(MONITORING)).some((g) => g.name === 'esi-webhook'), 'webhook alerts only when the webhook is scraped (they would read its absence as down)');

    // Every series an alert reads is one the product exports (or Prometheus' own).
    const exported = new Set(['controller', 'webhook', 'injector'].flatMap((f) => {
      const file = { controller: 'src/controller/runtime/metrics.ts', webhook: 'webhook/metrics.ts', injector: 'injector/metrics.ts' }[f]!;
      return [...readFileSync(join(ROOT, file), 'utf8').matchAll(/name: '([a-z_]+)'/g)].map((m) => m[1]!);
    }));
    for (const r of rules) {
      for (const series of new Set(r.expr.match(/\b(externalsecret|esi)_[a-z_]+/g))) {
        t.ok(exported.has(series.replace(/_(bucket|count|sum)$/, '')), `${r.alert} reads ${series}, which ESI exports`);
      }
    }
  });

  t.test('agent.resources reaches the webhook as flags; the schema allows what the webhook applies', async (t) => {
    const args = async (extra: string[]) => pod(await helm.template('esi', NS, extra), 'esi-webhook').containers[0]!.args.filter((a) => a.startsWith('--agent-') && /request|limit/.test(a));
    t.same(await args([]), ['--agent-cpu-request=5m', '--agent-memory-request=32Mi', '--agent-memory-limit=96Mi'], 'the defaults, visible and editable');
    t.same(await args(['--set', 'agent.resources.limits.memory=128Mi', '--set', 'agent.resources.requests.cpu=20m']), ['--agent-cpu-request=20m', '--agent-memory-request=32Mi', '--agent-memory-limit=128Mi']);
    t.same(await args(['--set', 'agent.resources=null']), [], 'unset: the webhook\'s own defaults');
    for (const bad of [['--set', 'agent.resources.limits.cpu=1'], ['--set', 'agent.resources.requests.memory=lots']]) {
      const r = await helm.run(['template', 'esi', join(ROOT, 'charts/esi'), ...bad]);
      t.not(r.code, 0, `${bad[1]} refused (no CPU limit for agents; quantities only)`);
    }
  });
}
