// The chart's networking values as an operator checks them in `helm template` before an
// install on EKS with an overlay CNI, a GKE private cluster or a cluster that enforces
// NetworkPolicies: webhook.hostNetwork (with the port it then takes on the node),
// networkPolicy.* (off by default; ingress to the served ports only; egress open unless
// given), and the real apiserver accepting what they render (server-side dry-run).
import { KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { createNamespace } from '../../support/kube.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import { CHART, findHelm, Helm, ofKind, type Deployment, type K8sObject } from '../../support/helm.js';

const NS = 'esi-system';

interface NetworkPolicy extends K8sObject {
  spec: {
    podSelector: { matchLabels: Record<string, string> };
    policyTypes: string[];
    ingress: { ports: { port: number; protocol: string }[]; from?: object[] }[];
    egress?: object[];
  };
}
type HostPod = Deployment['spec']['template']['spec'] & {
  hostNetwork?: boolean; dnsPolicy?: string;
  containers: (Deployment['spec']['template']['spec']['containers'][number] & { ports?: { name: string; containerPort: number; hostPort?: number }[] })[];
};

const component = (objs: K8sObject[], name: 'webhook' | 'controller') => objs.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === name);
const deployment = (objs: K8sObject[], name: 'webhook' | 'controller') => ofKind(component(objs, name), 'Deployment')[0] as Deployment;
const podOf = (objs: K8sObject[], name: 'webhook' | 'controller') => deployment(objs, name).spec.template.spec as HostPod;
const policy = (objs: K8sObject[], name: 'webhook' | 'controller') => ofKind(component(objs, name), 'NetworkPolicy')[0] as NetworkPolicy | undefined;

const found = await findHelm();
if (found.path) suite(new Helm(found.path));
else t.plan(0, `helm is not available, chart tests skipped: ${found.reason}`);

function suite(helm: Helm): void {
  t.test('webhook.hostNetwork: off by default; on, the node network with cluster DNS and one port everywhere', async (t) => {
    const plain = podOf(await helm.template('esi', NS), 'webhook');
    t.notOk(plain.hostNetwork, 'default: the pod network');
    t.notOk(plain.dnsPolicy, 'default: the pod DNS policy Kubernetes gives (ClusterFirst)');

    const objs = await helm.template('esi', NS, ['--set', 'webhook.hostNetwork=true', '--set', 'webhook.port=9443']);
    const pod = podOf(objs, 'webhook');
    t.equal(pod.hostNetwork, true);
    t.equal(pod.dnsPolicy, 'ClusterFirstWithHostNet', 'still resolves cluster names (the apiserver, kube-dns)');
    const c = pod.containers[0]!;
    t.ok(c.args?.includes('--port=9443'), 'the webhook listens on webhook.port');
    t.same(c.ports, [{ name: 'https', containerPort: 9443, hostPort: 9443, protocol: 'TCP' }], 'it listens on that port of the node: the scheduler keeps one replica per node');
    t.same(plain.containers[0]!.ports, [{ name: 'https', containerPort: 8443, protocol: 'TCP' }], 'default: no host port');
    const svc = ofKind(component(objs, 'webhook'), 'Service')[0] as K8sObject & { spec: { ports: { port: number; targetPort: string }[] } };
    t.same(svc.spec.ports.map((p) => [p.port, p.targetPort]), [[443, 'https']], 'the apiserver still calls 443 on the Service, which targets that port');
    t.notOk(podOf(objs, 'controller').hostNetwork, 'the controller stays on the pod network');

    const kubelet = await helm.run(['template', 'esi', CHART, '--set', 'webhook.hostNetwork=true', '--set', 'webhook.port=10250']);
    t.not(kubelet.code, 0, 'hostNetwork on the kubelet\'s port is refused');
    t.match(kubelet.stderr, /10250 is the kubelet's port/);
    const gke = podOf(await helm.template('esi', NS, ['--set', 'webhook.port=10250']), 'webhook').containers[0]!;
    t.ok(gke.args?.includes('--port=10250'), 'without hostNetwork 10250 is allowed (GKE private clusters, ESO\'s default)');
  });

  t.test('networkPolicy: none by default', async (t) => {
    t.same(ofKind(await helm.template('esi', NS), 'NetworkPolicy'), []);
  });

  t.test('networkPolicy.enabled: ingress to the served ports only, egress open', async (t) => {
    const objs = await helm.template('esi', NS, ['--set', 'networkPolicy.enabled=true']);
    t.equal(ofKind(objs, 'NetworkPolicy').length, 2, 'one for the webhook, one for the controller');

    const web = policy(objs, 'webhook')!;
    const webPod = deployment(objs, 'webhook').spec.template.metadata.labels;
    for (const [k, v] of Object.entries(web.spec.podSelector.matchLabels)) t.equal(webPod[k], v, `selects the webhook pods (${k})`);
    t.same(web.spec.podSelector.matchLabels['app.kubernetes.io/component'], 'webhook', 'and only them');
    t.same(web.spec.policyTypes, ['Ingress'], 'egress is not restricted');
    t.same(web.spec.ingress, [{ ports: [{ port: 8443, protocol: 'TCP' }] }], 'the webhook port (admission, probes, /metrics) from anywhere: the apiserver\'s source is cluster-specific');
    t.notOk(web.spec.egress);

    const ctl = policy(objs, 'controller')!;
    const ctlPod = deployment(objs, 'controller').spec.template.metadata.labels;
    for (const [k, v] of Object.entries(ctl.spec.podSelector.matchLabels)) t.equal(ctlPod[k], v, `selects the controller pods (${k})`);
    t.same(ctl.spec.policyTypes, ['Ingress']);
    const served = (podOf(objs, 'controller').containers[0]! as { ports?: { containerPort: number }[] }).ports?.map((p) => ({ port: p.containerPort, protocol: 'TCP' }));
    t.same(ctl.spec.ingress, [{ ports: served }], 'the probe port and the metrics port (metrics.secure), nothing else');

    const moved = policy(await helm.template('esi', NS, ['--set', 'networkPolicy.enabled=true', '--set', 'webhook.port=10250']), 'webhook')!;
    t.equal(moved.spec.ingress[0]!.ports[0]!.port, 10250, 'follows webhook.port');
    const alone = await helm.template('esi', NS, ['--set', 'networkPolicy.enabled=true', '--set', 'controller.enabled=false']);
    t.same(ofKind(alone, 'NetworkPolicy').map((p) => p.metadata.name), ['esi-webhook'], 'no controller, no controller policy');
  });

  t.test('the schema refuses networking values that would silently do nothing', async (t) => {
    for (const [args, message] of [
      [['--set', 'networkPolicy.egres[0].ports[0].port=53'], /additional properties 'egres' not allowed/],
      [['--set', 'webhook.hostNetwork=yes'], /webhook\/hostNetwork/],
      [['--set', 'networkPolicy.webhook.from=10.0.0.0/8'], /networkPolicy\/webhook\/from/],
    ] as const) {
      const r = await helm.run(['template', 'esi', CHART, ...args]);
      t.not(r.code, 0, args.join(' '));
      t.match(r.stderr, message, args.join(' '));
    }
  });

  t.test('networkPolicy: sources and egress rules as given', async (t) => {
    const apiserver = { ipBlock: { cidr: '172.16.0.0/28' } };
    const prometheus = { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } };
    const dns = { to: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }], ports: [{ port: 53, protocol: 'UDP' }] };
    const api = { to: [{ ipBlock: { cidr: '10.0.0.1/32' } }], ports: [{ port: 443, protocol: 'TCP' }] };
    const objs = await helm.template('esi', NS, [
      '--set', 'networkPolicy.enabled=true',
      '--set-json', `networkPolicy.webhook.from=${JSON.stringify([apiserver, prometheus])}`,
      '--set-json', `networkPolicy.controller.from=${JSON.stringify([prometheus])}`,
      '--set-json', `networkPolicy.egress=${JSON.stringify([dns, api])}`,
    ]);
    const web = policy(objs, 'webhook')!;
    t.same(web.spec.ingress[0]!.from, [apiserver, prometheus]);
    t.same(policy(objs, 'controller')!.spec.ingress[0]!.from, [prometheus]);
    for (const name of ['webhook', 'controller'] as const) {
      const p = policy(objs, name)!;
      t.same(p.spec.policyTypes, ['Ingress', 'Egress'], `${name}: egress restricted once rules are given`);
      t.same(p.spec.egress, [dns, api], `${name}: exactly the rules given`);
    }
  });

  t.test('the real apiserver accepts the host-network Deployment and the NetworkPolicies (server-side dry-run)', async (t) => {
    const cp = await useControlPlane(t);
    const ns = await createNamespace(cp.kc, 'esi-chart-net', t);
    const client = KubernetesObjectApi.makeApiClient(cp.kc);
    const release = `net-${randomBytes(3).toString('hex')}`;
    const objs = await helm.template(release, ns, [
      '--set', 'webhook.hostNetwork=true', '--set', 'networkPolicy.enabled=true',
      '--set-json', 'networkPolicy.webhook.from=[{"ipBlock":{"cidr":"172.16.0.0/28"}}]',
      '--set-json', 'networkPolicy.egress=[{"ports":[{"port":53,"protocol":"UDP"}]},{"to":[{"ipBlock":{"cidr":"10.0.0.0/8"}}]}]',
    ]);
    const checked = [...ofKind(objs, 'NetworkPolicy'), ...ofKind(component(objs, 'webhook'), 'Deployment')];
    t.equal(checked.length, 3);
    for (const o of checked) {
      const created = await client.create(o as KubernetesObject, undefined, 'All').catch((err: unknown) => {
        throw new Error(`the apiserver refused ${o.kind}/${o.metadata.name}: ${(err as Error).message}`);
      });
      t.equal(created.metadata?.name, o.metadata.name, `${o.kind}/${o.metadata.name} accepted`);
      if (o.kind === 'Deployment') {
        const ports = (created as unknown as Deployment & { spec: { template: { spec: HostPod } } }).spec.template.spec.containers[0]!.ports;
        t.same(ports?.map((p) => [p.containerPort, p.hostPort]), [[8443, 8443]], 'stored with the host port: the node\'s webhook.port');
      }
    }
  });
}
