// The Helm chart as a platform team would check it before installing: `helm lint`, the
// rendered manifests for the default (self-managed certificates) and cert-manager
// installs (the CRDs: crds.test.ts), the values schema refusing bad input, and the real apiserver
// (server-side dry-run) accepting every rendered object. test/e2e/chart/install.test.ts
// installs it for real.
import { KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { createNamespace } from '../../support/kube.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import {
  CHART, deploymentOf, findHelm, Helm, namespaceExcluded, ofKind, one, rulesOf, webhookOf,
  type K8sObject, type WebhookConfig,
} from '../../support/helm.js';

const NS = 'esi-system';

/** The objects of the webhook side; the controller's, the metrics RBAC (metrics.test.ts) and the CRDs (crds.test.ts) are checked in their own tests. */
const webhookPart = (objs: K8sObject[]) => objs.filter((o) => !['controller', 'metrics'].includes(o.metadata.labels?.['app.kubernetes.io/component'] ?? '') && o.kind !== 'CustomResourceDefinition');
const CERT_MANAGER = ['--set', 'certificates.mode=cert-manager', '--api-versions', 'cert-manager.io/v1/Certificate'];

/** Leaf keys of values.yaml (a map with keys is descended, anything else is a leaf). */
function valueKeys(v: unknown, prefix = ''): string[] {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || Object.keys(v).length === 0) return [prefix];
  return Object.entries(v as Record<string, unknown>).flatMap(([k, x]) => {
    const path = prefix ? `${prefix}.${k}` : k;
    // resources, security contexts: documented as a whole
    return ['resources', 'podSecurityContext', 'securityContext'].includes(k) ? [path] : valueKeys(x, path);
  });
}

t.test('every value is documented in the chart README', async (t) => {
  const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as unknown;
  const readme = readFileSync(join(CHART, 'README.md'), 'utf8');
  const keys = valueKeys(values);
  t.ok(keys.length > 40, `${keys.length} keys`);
  for (const k of keys) t.ok(readme.includes(`| \`${k}\` |`), `${k} in README.md`);
});

const found = await findHelm();
if (found.path) suite(new Helm(found.path));
else t.plan(0, `helm is not available, chart tests skipped: ${found.reason}`);

function suite(helm: Helm): void {
  t.test('helm lint --strict passes, for every certificates mode', async (t) => {
    for (const args of [[], ['--set', 'certificates.mode=cert-manager']]) {
      const r = await helm.run(['lint', CHART, '--strict', ...args]);
      t.equal(r.code, 0, `helm lint ${args.join(' ')}: ${r.stdout}${r.stderr}`);
      t.match(r.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
    }
  });

  t.test('default render: the webhook, its RBAC and the admission configuration', async (t) => {
    const objs = webhookPart(await helm.template('esi', NS));
    t.same(objs.map((o) => o.kind).sort(), [
      'ClusterRole', 'ClusterRoleBinding', 'Deployment', 'MutatingWebhookConfiguration',
      'PodDisruptionBudget', 'Role', 'RoleBinding', 'Service', 'ServiceAccount',
    ], 'exactly these objects (no CRDs without --include-crds, no metrics, no cert-manager)');
    for (const o of objs) {
      if (!['ClusterRole', 'ClusterRoleBinding', 'MutatingWebhookConfiguration'].includes(o.kind)) t.equal(o.metadata.namespace, NS, `${o.kind} in the release namespace`);
    }

    t.test('MutatingWebhookConfiguration', async (t) => {
      const w = webhookOf(objs);
      t.same(w.objectSelector, { matchLabels: { 'esi.dev/inject': 'true' } }, 'only opted-in pods are sent');
      t.equal(w.failurePolicy, 'Fail');
      t.equal(w.sideEffects, 'None');
      t.same(w.admissionReviewVersions, ['v1']);
      t.equal(w.timeoutSeconds, 5);
      t.equal(w.reinvocationPolicy, 'IfNeeded', 'a mesh sidecar added after ESI gets the agent moved behind it');
      t.same(w.rules, [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'], scope: 'Namespaced' }]);
      t.same(w.clientConfig.service, { name: 'esi-webhook', namespace: NS, path: '/mutate', port: 443 });
      t.notOk(w.clientConfig.caBundle, 'caBundle left to the webhook (self mode), never rendered empty');
      const nsLabels = (name: string) => ({ 'kubernetes.io/metadata.name': name });
      t.ok(namespaceExcluded(w.namespaceSelector, nsLabels(NS)), 'the release namespace is excluded');
      t.ok(namespaceExcluded(w.namespaceSelector, nsLabels('kube-system')), 'kube-system is excluded');
      t.notOk(namespaceExcluded(w.namespaceSelector, nsLabels('team-a')), 'application namespaces are served');
    });

    t.test('Deployment: replicas, spread, probes, hardening, flags', async (t) => {
      const d = deploymentOf(objs);
      t.equal(d.spec.replicas, 2);
      const pod = d.spec.template.spec;
      t.equal(pod.serviceAccountName, 'esi-webhook');
      t.ok(pod.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.length, 'preferred anti-affinity');
      t.notOk(pod.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution, 'not required (a 1-node cluster still schedules 2)');
      t.match(pod.securityContext, { runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } });
      t.equal(pod.containers.length, 1);
      const c = pod.containers[0]!;
      t.same(c.securityContext, {
        allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, runAsNonRoot: true,
        capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' },
      });
      t.same(c.readinessProbe?.httpGet, { path: '/readyz', port: 'https', scheme: 'HTTPS' });
      t.same(c.livenessProbe?.httpGet, { path: '/healthz', port: 'https', scheme: 'HTTPS' });
      t.ok(c.resources?.requests?.cpu && c.resources.requests.memory && c.resources.limits?.memory, 'requests and a memory limit');
      t.same(c.env?.find((e) => e.name === 'POD_NAMESPACE')?.valueFrom, { fieldRef: { fieldPath: 'metadata.namespace' } });
      const nodeOptions = c.env?.find((e) => e.name === 'NODE_OPTIONS')?.value;
      t.match(nodeOptions, /^--max-semi-space-size=\d+$/, 'NODE_OPTIONS caps the young generation (webhook.nodeOptions)');
      const accepted = spawnSync(process.execPath, ['-e', '0'], { env: { PATH: process.env.PATH, NODE_OPTIONS: nodeOptions }, encoding: 'utf8' });
      t.equal(accepted.status, 0, `node accepts it in NODE_OPTIONS: ${accepted.stderr}`);
      t.same(c.command, ['/nodejs/bin/node', '--optimize-for-size', '/app/bin/esi.js'], 'the image entrypoint with webhook.nodeFlags');
      const flagged = spawnSync(process.execPath, [...c.command!.slice(1, -1), '-e', '0'], { encoding: 'utf8' });
      t.equal(flagged.status, 0, `node accepts webhook.nodeFlags on its command line: ${flagged.stderr}`);
      t.equal(c.image, 'ghcr.io/esi-dev/esi:0.1.0', 'image tag defaults to appVersion');
      t.same(c.args, [
        'webhook', '--port=8443', '--agent-image=ghcr.io/esi-dev/esi:0.1.0', '--metrics-secure=true',
        '--agent-cpu-request=5m', '--agent-memory-request=32Mi', '--agent-memory-limit=96Mi', '--agent-pull-policy=IfNotPresent',
        '--token-audience=esi', '--agent-run-as-user=65532', '--service-name=esi-webhook', '--secret-name=esi-webhook-tls',
        '--webhook-config-name=esi', '--cert-validity=7776000',
      ], 'agent image = the ESI image; self-managed certificate flags name the chart objects');
      const mwc = one(objs, 'MutatingWebhookConfiguration');
      t.equal(mwc.metadata.name, 'esi', '--webhook-config-name is the chart MutatingWebhookConfiguration');
      t.equal(one(objs, 'Service').metadata.name, 'esi-webhook', '--service-name is the chart Service');
    });

    t.test('PodDisruptionBudget and Service', async (t) => {
      const pdb = one(objs, 'PodDisruptionBudget') as K8sObject & { spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } } };
      t.equal(pdb.spec.minAvailable, 1);
      t.same(pdb.spec.selector.matchLabels, deploymentOf(objs).spec.template.metadata.labels, 'selects the webhook pods');
      const svc = one(objs, 'Service') as K8sObject & { spec: { ports: { port: number; targetPort: string }[] } };
      t.same(svc.spec.ports.map((p) => [p.port, p.targetPort]), [[443, 'https']]);
    });

    t.test('RBAC: read-only cluster-wide, no Secrets outside its own', async (t) => {
      const cluster = rulesOf(one(objs, 'ClusterRole'));
      t.notOk(cluster.some((r) => r.resources?.includes('secrets') || r.resources?.includes('*')), 'no secrets (or *) in the ClusterRole');
      for (const r of cluster) t.notOk(r.verbs.includes('*'), 'no wildcard verbs');
      const esoRule = cluster.find((r) => r.apiGroups?.includes('external-secrets.io'));
      t.same(esoRule, { apiGroups: ['external-secrets.io'], resources: ['externalsecrets', 'secretstores', 'clustersecretstores'], verbs: ['get', 'list', 'watch'] });
      t.same(cluster.find((r) => r.resources?.includes('namespaces'))?.verbs, ['get', 'list', 'watch']);
      const mwcRule = cluster.find((r) => r.resources?.includes('mutatingwebhookconfigurations'));
      t.same(mwcRule?.resourceNames, ['esi'], 'may patch only its own MutatingWebhookConfiguration');
      t.same(mwcRule?.verbs, ['get', 'update', 'patch']);
      const role = rulesOf(one(objs, 'Role'));
      t.same(role, [
        { apiGroups: [''], resources: ['secrets'], verbs: ['create'] },
        { apiGroups: [''], resources: ['secrets'], resourceNames: ['esi-webhook-tls'], verbs: ['get', 'list', 'watch', 'update'] },
      ], 'create Secrets (cannot be limited by name); everything else only on its TLS Secret');
      for (const binding of [...ofKind(objs, 'RoleBinding'), ...ofKind(objs, 'ClusterRoleBinding')]) {
        t.same((binding as K8sObject & { subjects: unknown[] }).subjects, [{ kind: 'ServiceAccount', name: 'esi-webhook', namespace: NS }]);
      }
    });
  });

  t.test('values drive the flags: store classes, agent image, failure policy, excluded namespaces', async (t) => {
    const objs = webhookPart(await helm.template('platform', 'secrets', [
      '--set-json', 'storeClasses=["esi",""]', '--set', 'agent.image.repository=registry.example/esi-agent',
      '--set', 'image.tag=1.2.3', '--set', 'agent.tokenAudience=vault', '--set', 'webhook.failurePolicy=Ignore',
      '--set-json', 'webhook.excludedNamespaces=["kube-system","istio-system"]', '--set', 'webhook.replicas=3',
      '--set', 'webhook.workers=2', '--set-json', 'webhook.nodeFlags=[]',
    ]));
    t.notOk(deploymentOf(objs).spec.template.spec.containers[0]!.command, 'webhook.nodeFlags=[]: the image entrypoint as is');
    const args = deploymentOf(objs).spec.template.spec.containers[0]!.args!;
    t.ok(args.includes('--store-classes=esi,'), '"" in storeClasses = unclassed stores');
    t.ok(args.includes('--agent-image=registry.example/esi-agent:1.2.3'), 'agent tag follows image.tag');
    t.ok(args.includes('--token-audience=vault'));
    t.ok(args.includes('--workers=2'), 'webhook.workers > 1 runs that many admission servers (1, the default, renders no flag)');
    t.equal(deploymentOf(objs).spec.replicas, 3);
    const w = webhookOf(objs);
    t.equal(w.failurePolicy, 'Ignore');
    for (const ns of ['secrets', 'kube-system', 'istio-system']) t.ok(namespaceExcluded(w.namespaceSelector, { 'kubernetes.io/metadata.name': ns }), `${ns} excluded`);
    t.equal(one(objs, 'MutatingWebhookConfiguration').metadata.name, 'platform-esi', 'names derive from the release');

    const only = webhookPart(await helm.template('esi', NS, ['--set-json', 'storeClasses=[""]']));
    t.ok(deploymentOf(only).spec.template.spec.containers[0]!.args!.includes('--store-classes='), 'only unclassed stores');
    const digest = `sha256:${'a'.repeat(64)}`;
    const pinned = webhookPart(await helm.template('esi', NS, ['--set', `image.digest=${digest}`]));
    const c = deploymentOf(pinned).spec.template.spec.containers[0]!;
    t.equal(c.image, `ghcr.io/esi-dev/esi@${digest}`);
    t.ok(c.args!.includes(`--agent-image=ghcr.io/esi-dev/esi@${digest}`), 'the agent runs the same pinned image');
    const argsWith = async (...set: string[]) => deploymentOf(webhookPart(await helm.template('esi', NS, set))).spec.template.spec.containers[0]!.args!;
    t.ok((await argsWith('--set', 'agent.runAsUser=auto')).includes('--agent-run-as-user=auto'), 'agent.runAsUser=auto leaves the agent\'s user to the platform');
    t.ok((await argsWith('--set-json', 'agent.runAsUser=1000650000')).includes('--agent-run-as-user=1000650000'), 'a large UID prints as digits');
    const refused = await helm.run(['template', 'esi', CHART, '--set', 'agent.runAsUser=0']);
    t.not(refused.code, 0, `agent.runAsUser=0 is refused by the schema: ${refused.stderr}`);
  });

  t.test('cert-manager mode: Certificate, CA injection, mounted files, no Secret RBAC', async (t) => {
    const objs = webhookPart(await helm.template('esi', NS, CERT_MANAGER));
    const certs = ofKind(objs, 'Certificate') as (K8sObject & { spec: { secretName: string; dnsNames?: string[]; isCA?: boolean; issuerRef: { name: string } } })[];
    const serving = certs.find((c) => !c.spec.isCA)!;
    t.ok(serving, 'a serving Certificate');
    t.ok(serving.spec.dnsNames?.includes('esi-webhook.esi-system.svc'), 'for the webhook Service DNS name');
    t.equal(ofKind(objs, 'Issuer').length, 2, 'self-signed root + CA Issuer when no issuerRef is given');
    const mwc = one(objs, 'MutatingWebhookConfiguration') as WebhookConfig;
    t.equal(mwc.metadata.annotations?.['cert-manager.io/inject-ca-from'], `${NS}/${serving.metadata.name}`);
    const pod = deploymentOf(objs).spec.template.spec;
    const c = pod.containers[0]!;
    for (const flag of ['--tls-cert-file=/etc/esi/tls/tls.crt', '--tls-key-file=/etc/esi/tls/tls.key', '--tls-ca-file=/etc/esi/tls/ca.crt']) t.ok(c.args!.includes(flag), flag);
    t.notOk(c.args!.some((a) => a.startsWith('--secret-name') || a.startsWith('--webhook-config-name')), 'no self-managed flags');
    t.equal(pod.volumes?.find((v) => v.name === 'tls')?.secret?.secretName, serving.spec.secretName, 'mounts the Certificate Secret');
    t.same(c.volumeMounts?.find((m) => m.name === 'tls'), { name: 'tls', mountPath: '/etc/esi/tls', readOnly: true });
    t.equal(ofKind(objs, 'Role').length, 0, 'no Secret permissions at all');
    t.notOk(rulesOf(one(objs, 'ClusterRole')).some((r) => r.resources?.includes('mutatingwebhookconfigurations')), 'cainjector, not ESI, writes the caBundle');

    const external = webhookPart(await helm.template('esi', NS, [...CERT_MANAGER, '--set', 'certificates.certManager.issuerRef.name=corp-ca', '--set', 'certificates.certManager.issuerRef.kind=ClusterIssuer']));
    t.same(ofKind(external, 'Issuer'), [], 'an existing issuer: no chart Issuers');
    t.match(one(external, 'Certificate'), { spec: { issuerRef: { name: 'corp-ca', kind: 'ClusterIssuer', group: 'cert-manager.io' } } });

    const missing = await helm.run(['template', 'esi', CHART, '--set', 'certificates.mode=cert-manager']);
    t.not(missing.code, 0, 'refused where cert-manager is not installed');
    t.match(missing.stderr, /needs cert-manager/);
  });

  t.test('metrics: off by default; Service and ServiceMonitor on request', async (t) => {
    const objs = webhookPart(await helm.template('esi', NS, ['--set', 'metrics.serviceMonitor.enabled=true', '--api-versions', 'monitoring.coreos.com/v1/ServiceMonitor']));
    const sm = one(objs, 'ServiceMonitor') as K8sObject & { spec: { endpoints: { scheme: string; tlsConfig: { serverName: string; ca: { secret: { name: string; key: string } } } }[] } };
    t.match(sm.spec.endpoints[0], { scheme: 'https', tlsConfig: { serverName: 'esi-webhook.esi-system.svc', ca: { secret: { name: 'esi-webhook-tls', key: 'ca-bundle.crt' } } } });
    t.equal(ofKind(objs, 'Service').length, 2, 'webhook + metrics Service');
  });

  t.test('controller metrics, alerts and dashboard: off by default; on request, they select the controller and read ESO\'s series', async (t) => {
    const kinds = (objs: K8sObject[]) => objs.map((o) => `${o.kind}/${o.metadata.name}`);
    const plain = await helm.template('esi', NS);
    t.notOk(kinds(plain).some((k) => /^(ServiceMonitor|PrometheusRule)\/|^ConfigMap\/esi-dashboard$|^Service\/esi-controller-metrics$/.test(k)), 'nothing monitoring-related by default');
    const objs = await helm.template('esi', NS, [
      '--set', 'metrics.controller.serviceMonitor.enabled=true', '--set', 'metrics.prometheusRule.enabled=true', '--set', 'metrics.grafanaDashboard.enabled=true',
      '--api-versions', 'monitoring.coreos.com/v1/ServiceMonitor', '--api-versions', 'monitoring.coreos.com/v1/PrometheusRule',
    ]);
    const svc = objs.find((o) => o.kind === 'Service' && o.metadata.name === 'esi-controller-metrics') as K8sObject & { spec: { selector: Record<string, string>; ports: { targetPort: string }[] } };
    const pod = (deploymentOf(objs.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'controller')) as unknown as { spec: { template: { metadata: { labels: Record<string, string> } } } }).spec.template.metadata.labels;
    for (const [k, v] of Object.entries(svc.spec.selector)) t.equal(pod[k], v, `the metrics Service selects the controller pods (${k})`);
    t.equal(svc.spec.ports[0]!.targetPort, 'https-metrics', "the controller's authenticated metrics port (metrics.secure, metrics.test.ts)");
    const sm = objs.find((o) => o.kind === 'ServiceMonitor' && o.metadata.name === 'esi-controller') as K8sObject & { spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port: string; scheme?: string }[] } };
    for (const [k, v] of Object.entries(sm.spec.selector.matchLabels)) t.equal(svc.metadata.labels?.[k], v, `the ServiceMonitor selects the metrics Service (${k})`);
    t.match(sm.spec.endpoints[0], { port: 'https-metrics', scheme: 'https' });
    const rule = one(objs, 'PrometheusRule') as K8sObject & { spec: { groups: { rules: { alert: string; expr: string; for: string }[] }[] } };
    const notReady = rule.spec.groups[0]!.rules.find((r) => r.alert === 'ExternalSecretNotReady')!;
    t.equal(notReady.expr, 'externalsecret_status_condition{condition="Ready",status="False"} == 1', "ESO's series and labels");
    t.equal(notReady.for, '10m');
    const dash = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'esi-dashboard') as K8sObject & { data: Record<string, string> };
    t.equal(dash.metadata.labels?.grafana_dashboard, '1', "the label Grafana's sidecar selects");
    // A row panel (the fleet row) holds no queries.
    const board = JSON.parse(dash.data['esi.json']!) as { panels: { targets?: { expr: string }[] }[] };
    const exprs = board.panels.flatMap((p) => (p.targets ?? []).map((x) => x.expr)).join('\n');
    const names = new Set(readFileSync(join(import.meta.dirname, '../../../src/controller/runtime/metrics.ts'), 'utf8').match(/name: '[a-z_]+'/g)!.map((m) => m.slice(7, -1)));
    for (const used of new Set(exprs.match(/\b(externalsecret|esi_controller)_[a-z_]+/g))) {
      t.ok(names.has(used.replace(/_bucket$/, '')), `the dashboard reads ${used}, which the controller exports`);
    }
  });

  t.test('controller: deployed by default, 2 replicas, Lease, least-privilege RBAC, class flags', async (t) => {
    const ctl = (objs: K8sObject[]) => objs.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'controller');
    const objs = ctl(await helm.template('esi', NS));
    t.same(objs.map((o) => o.kind).sort(), ['ClusterRole', 'ClusterRoleBinding', 'Deployment', 'PodDisruptionBudget', 'Role', 'RoleBinding', 'ServiceAccount']);
    const d = one(objs, 'Deployment') as K8sObject & { spec: { replicas: number; template: { spec: { serviceAccountName: string; containers: { args: string[] }[] } } } };
    t.equal(d.spec.replicas, 2);
    t.equal(d.spec.template.spec.serviceAccountName, 'esi-controller', 'its own ServiceAccount, not the webhook\'s');
    t.same(d.spec.template.spec.containers[0]!.args.slice(0, 3), ['controller', '--controller-class=esi', '--claim-unclassed=auto'], 'unclassed stores: not where ESO serves them');
    const lease = rulesOf(one(objs, 'Role'));
    t.same(lease.find((r) => r.resourceNames)?.resourceNames, ['esi-controller-esi'], 'only its own Lease');
    const cluster = rulesOf(one(objs, 'ClusterRole'));
    const verbs = (res: string) => cluster.filter((r) => r.resources?.includes(res)).flatMap((r) => r.verbs ?? []).sort();
    t.same(verbs('externalsecrets'), ['create', 'delete', 'get', 'list', 'update', 'watch'], 'ExternalSecrets: read, and written for ClusterExternalSecrets');
    t.same(verbs('externalsecrets/status'), ['patch', 'update']);
    t.same(verbs('pushsecrets'), ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'], 'PushSecrets: the finalizer, and written for ClusterPushSecrets');
    for (const kind of ['clusterexternalsecrets', 'clusterpushsecrets']) {
      t.same(verbs(kind), ['get', 'list', 'watch'], `${kind} read-only`);
      t.same(verbs(`${kind}/status`), ['patch', 'update'], `${kind} status`);
    }
    t.same(verbs('configmaps'), ['get']);
    t.same(cluster.filter((r) => r.resources?.includes('customresourcedefinitions')).map((r) => [r.verbs, r.resourceNames]), [[['get'], ['externalsecrets.external-secrets.io']]], 'reads one CRD (who installed it), nothing else');
    for (const kind of ['deployments', 'statefulsets', 'daemonsets']) t.same(verbs(kind), ['get', 'list', 'patch'], `${kind}: restart on change only patches`);
    t.ok(d.spec.template.spec.containers[0]!.args.includes('--restart-min-interval=60s'), 'controller.restartMinInterval');
    const envOf = (objs: K8sObject[]) => ((one(objs, 'Deployment') as typeof d).spec.template.spec.containers[0] as { env?: { name: string; value?: string }[] }).env;
    t.equal(envOf(objs)?.find((e) => e.name === 'NODE_OPTIONS')?.value, '--max-semi-space-size=16', 'controller.nodeOptions: the young generation Node sizes outside a container');
    t.notOk(envOf(ctl(await helm.template('esi', NS, ['--set', 'controller.nodeOptions='])))?.some((e) => e.name === 'NODE_OPTIONS'), 'empty: Node\'s own sizing');
    const ctlNodeOptions = envOf(ctl(await helm.template('esi', NS, ['--set', 'controller.nodeOptions=--max-semi-space-size=8'])))?.find((e) => e.name === 'NODE_OPTIONS')?.value;
    t.equal(ctlNodeOptions, '--max-semi-space-size=8', 'controller.nodeOptions becomes NODE_OPTIONS');
    t.notOk(cluster.some((r) => r.verbs?.includes('*') || r.resources?.includes('*')), 'no wildcards');
    const sharded = ctl(await helm.template('esi', NS, ['--set', 'controller.class=team-a', '--set', 'controller.claimUnclassed=false']));
    t.match((one(sharded, 'Deployment') as typeof d).spec.template.spec.containers[0]!.args, ['controller', '--controller-class=team-a', '--claim-unclassed=false']);
    t.same(ctl(await helm.template('esi', NS, ['--set', 'controller.enabled=false'])), [], 'controller.enabled=false renders none of it');
    t.ok(d.spec.template.spec.containers[0]!.args.includes('--allow-private-store-addresses=false'), 'SecretStores reach no private address by default');
    const privateOk = ctl(await helm.template('esi', NS, ['--set', 'controller.allowPrivateStoreAddresses=true']));
    t.ok((one(privateOk, 'Deployment') as typeof d).spec.template.spec.containers[0]!.args.includes('--allow-private-store-addresses=true'), 'controller.allowPrivateStoreAddresses');
    // ConfigMap targets: off by default; on, the flag and create/update on ConfigMaps.
    t.ok(d.spec.template.spec.containers[0]!.args.includes('--allow-configmap-targets=false'), 'no ConfigMap targets by default');
    const cmOn = ctl(await helm.template('esi', NS, ['--set', 'controller.configMapTargets=true']));
    t.ok((one(cmOn, 'Deployment') as typeof d).spec.template.spec.containers[0]!.args.includes('--allow-configmap-targets=true'), 'controller.configMapTargets');
    t.same(rulesOf(one(cmOn, 'ClusterRole')).filter((r) => r.resources?.includes('configmaps')).flatMap((r) => r.verbs ?? []).sort(), ['create', 'get', 'update'], 'ConfigMaps written, never listed, watched or deleted');
    // Generator bounds and Raw results: the documented defaults, and the values.
    const args = d.spec.template.spec.containers[0]!.args;
    t.ok(args.includes('--max-generator-states=2048') && args.includes('--allow-generator-raw-results=false'), 'generator bounds and no Raw results by default');
    const gen = ctl(await helm.template('esi', NS, ['--set', 'controller.maxGeneratorStates=100', '--set', 'controller.allowGeneratorRawResults=true']));
    t.ok(['--max-generator-states=100', '--allow-generator-raw-results=true'].every((a) => (one(gen, 'Deployment') as typeof d).spec.template.spec.containers[0]!.args.includes(a)), 'controller.maxGeneratorStates, controller.allowGeneratorRawResults');
  });

  t.test('controller: scheduling, extra env and its PodDisruptionBudget, as the webhook has them', async (t) => {
    const ctl = (objs: K8sObject[]) => objs.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === 'controller');
    type PodSpec = { nodeSelector?: object; tolerations?: object[]; priorityClassName?: string; topologySpreadConstraints?: object[]; affinity?: object; containers: { env: { name: string; value?: string }[] }[] };
    const spec = (objs: K8sObject[]) => (one(ctl(objs), 'Deployment') as K8sObject & { spec: { template: { spec: PodSpec } } }).spec.template.spec;
    const objs = await helm.template('esi', NS, [
      '--set', 'controller.nodeSelector.pool=system', '--set', 'controller.priorityClassName=system-cluster-critical',
      '--set', 'controller.tolerations[0].key=dedicated', '--set', 'controller.tolerations[0].operator=Exists',
      '--set', 'controller.topologySpreadConstraints[0].maxSkew=1', '--set', 'controller.topologySpreadConstraints[0].topologyKey=topology.kubernetes.io/zone',
      '--set', 'controller.topologySpreadConstraints[0].whenUnsatisfiable=ScheduleAnyway',
      '--set', 'controller.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].key=pool',
      '--set', 'controller.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator=Exists',
      '--set', 'controller.extraEnv[0].name=HTTPS_PROXY', '--set', 'controller.extraEnv[0].value=http://proxy:3128',
    ]);
    const s = spec(objs);
    t.same(s.nodeSelector, { pool: 'system' });
    t.equal(s.priorityClassName, 'system-cluster-critical');
    t.same(s.tolerations, [{ key: 'dedicated', operator: 'Exists' }]);
    t.equal(s.topologySpreadConstraints?.length, 1);
    t.match(s.affinity, { nodeAffinity: {} }, 'affinity replaces the default anti-affinity');
    t.notOk((s.affinity as { podAntiAffinity?: object }).podAntiAffinity);
    t.match(s.containers[0]!.env, [{ name: 'POD_NAMESPACE' }, { name: 'POD_SERVICE_ACCOUNT', valueFrom: { fieldRef: { fieldPath: 'spec.serviceAccountName' } } }, { name: 'ESI_LOG_LEVEL' }, { name: 'ESI_LOG_FORMAT', value: 'json' }, { name: 'NODE_ENV' }, { name: 'NODE_OPTIONS', value: '--max-semi-space-size=16' }, { name: 'HTTPS_PROXY', value: 'http://proxy:3128' }]);
    const pdb = one(ctl(objs), 'PodDisruptionBudget') as K8sObject & { spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } } };
    t.equal(pdb.spec.minAvailable, 1);
    t.equal(pdb.spec.selector.matchLabels['app.kubernetes.io/component'], 'controller', 'selects the controller pods only');
    t.match(spec(await helm.template('esi', NS)).affinity, { podAntiAffinity: {} }, 'default: spread over nodes');
    t.same(ofKind(ctl(await helm.template('esi', NS, ['--set', 'controller.replicas=1'])), 'PodDisruptionBudget'), [], 'one replica: no PDB to block drains');
  });

  t.test('the values schema and the chart refuse bad input with a reason', async (t) => {
    const cases: [string[], RegExp][] = [
      [['--set', 'webhook.failurePolicy=Sometimes'], /failurePolicy.*'Fail', 'Ignore'/],
      [['--set', 'certificates.mode=vault'], /certificates\/mode/],
      [['--set', 'webhook.replicas=0'], /replicas/],
      [['--set', 'webhok.replicas=2'], /additional properties 'webhok' not allowed/],
      [['--set', 'image.digest=sha256:1234'], /image\/digest/],
      [['--set', 'controller.class=Team_A'], /controller\/class/],
      [['--set', 'controller.replicas=0'], /controller\/replicas/],
      [['--set', 'metrics.serviceMonitor.enabled=true'], /prometheus-operator/],
    ];
    for (const [args, message] of cases) {
      const r = await helm.run(['template', 'esi', CHART, ...args]);
      t.not(r.code, 0, args.join(' '));
      t.match(r.stderr, message, args.join(' '));
    }
  });

  t.test('the real apiserver accepts every rendered object (server-side dry-run)', async (t) => {
    const cp = await useControlPlane(t);
    const ns = await createNamespace(cp.kc, 'esi-chart-dry', t);
    const client = KubernetesObjectApi.makeApiClient(cp.kc);
    const release = `dry-${randomBytes(3).toString('hex')}`;
    for (const [mode, args, count] of [['self', [], 19], ['cert-manager', CERT_MANAGER, 17]] as const) {
      const objs = await helm.template(release, ns, [...args]);
      // cert-manager's CRDs are not installed on the test control plane; ESI's CRDs may
      // already be (dry-run create would answer AlreadyExists), crds.test.ts installs them.
      const applicable = objs.filter((o) => !o.apiVersion.startsWith('cert-manager.io/') && o.kind !== 'CustomResourceDefinition');
      t.equal(applicable.length, count, `${mode}: ${applicable.map((o) => o.kind).join(', ')}`);
      for (const o of applicable) {
        const created = await client.create(o as KubernetesObject, undefined, 'All').catch((err: unknown) => {
          throw new Error(`${mode}: the apiserver refused ${o.kind}/${o.metadata.name}: ${(err as Error).message}`);
        });
        t.equal(created.metadata?.name, o.metadata.name, `${mode}: ${o.kind}/${o.metadata.name} accepted`);
      }
    }
  });
}
