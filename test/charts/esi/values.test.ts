// Chart values and text an operator checks before installing: the
// controller's own ServiceAccount annotations (IRSA, GKE Workload Identity) and pod
// labels/annotations, the webhook PodDisruptionBudget that must not block drains with one
// replica, `global.*` (honoured where it means something, accepted in an umbrella chart),
// and the words the chart says about itself (Chart.yaml, README, NOTES, the CRD list).
import { cpSync, mkdtempSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { CHART, findHelm, Helm, KUBE_VERSION, ofKind, ROOT, type Deployment, type K8sObject } from '../../support/helm.js';

const NS = 'esi-system';

const component = (objs: K8sObject[], name: 'webhook' | 'controller') => objs.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] === name);
const only = (objs: K8sObject[], kind: string) => {
  const found = ofKind(objs, kind);
  if (found.length !== 1) throw new Error(`expected one ${kind}, got ${found.length}`);
  return found[0]!;
};
type PodTemplate = { metadata: { labels: Record<string, string>; annotations?: Record<string, string> }; spec: Deployment['spec']['template']['spec'] & { imagePullSecrets?: { name: string }[] } };
const template = (objs: K8sObject[], name: 'webhook' | 'controller') => (only(component(objs, name), 'Deployment') as unknown as { spec: { template: PodTemplate } }).spec.template;

t.test('Chart.yaml: the description and the CRD list say what the default install runs and ships', async (t) => {
  const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as { description: string; annotations: Record<string, string> };
  t.notMatch(chart.description, /no (Kubernetes )?Secret objects|without (Kubernetes )?Secret objects/i, 'does not promise no Secrets: the default install runs the Secret-writing controller');
  t.match(chart.description, /reconciler/);
  t.match(chart.description, /Kubernetes Secrets/);
  // "group/version Kind, Kind; group/version Kind" must name every CRD the chart ships.
  const named = new Set(chart.annotations['esi.dev/crds']!.split(';').flatMap((part) => {
    const [gv, ...kinds] = part.trim().split(/\s+/);
    return kinds.join(' ').split(',').map((k) => `${gv} ${k.trim()}`);
  }));
  const shipped = readdirSync(join(CHART, 'files/crds')).map((f) => {
    const crd = parse(readFileSync(join(CHART, 'files/crds', f), 'utf8')) as { spec: { group: string; names: { kind: string }; versions: { name: string; storage: boolean }[] } };
    return `${crd.spec.group}/${crd.spec.versions.find((v) => v.storage)!.name} ${crd.spec.names.kind}`;
  });
  t.equal(shipped.length, 13);
  t.same([...named].sort(), shipped.sort(), 'esi.dev/crds names each shipped kind, with its group and version, and nothing else');
});

t.test('the chart README: what it creates includes the controller; no "no Secret" promise', async (t) => {
  const readme = readFileSync(join(CHART, 'README.md'), 'utf8');
  t.notMatch(readme, /no Kubernetes `Secret` in between|no Secret objects/i);
  const creates = readme.slice(readme.indexOf('## What it creates'), readme.indexOf('## Requirements'));
  for (const row of ['| Deployment | `esi-controller`', '| ServiceAccount | `esi-controller`', '| PodDisruptionBudget | `esi-controller`', '| NetworkPolicy |']) t.ok(creates.includes(row), row);
});

t.test('docs/install.md: the agent behind a proxy is configured with agent.env; GKE private clusters', async (t) => {
  const install = readFileSync(join(ROOT, 'docs/install.md'), 'utf8');
  t.notMatch(install, /cannot be configured for one/, 'no longer says the agent cannot use a proxy');
  const proxy = install.slice(install.indexOf('## 9. Behind an egress proxy'), install.indexOf('## Scoped mode'));
  t.match(proxy, /agent:\n\s+env:\n\s+HTTPS_PROXY:/, 'shows agent.env with HTTPS_PROXY');
  t.match(install, /GKE private clusters[\s\S]*8443[\s\S]*10250/);
  t.match(install, /hostNetwork/);
  t.match(install, /networkPolicy/);
});

const found = await findHelm();
if (found.path) suite(new Helm(found.path));
else t.plan(0, `helm is not available, chart tests skipped: ${found.reason}`);

function suite(helm: Helm): void {
  t.test('controller.serviceAccount.annotations: on the controller\'s ServiceAccount only; serviceAccount.annotations stays the webhook\'s', async (t) => {
    const plain = await helm.template('esi', NS);
    t.notOk(only(component(plain, 'controller'), 'ServiceAccount').metadata.annotations, 'default: no annotations');
    const objs = await helm.template('esi', NS, [
      '--set', 'controller.serviceAccount.annotations.eks\\.amazonaws\\.com/role-arn=arn:aws:iam::111122223333:role/esi',
      '--set', 'controller.serviceAccount.annotations.iam\\.gke\\.io/gcp-service-account=esi@proj.iam.gserviceaccount.com',
      '--set', 'serviceAccount.annotations.example\\.com/webhook=yes',
    ]);
    const ctl = only(component(objs, 'controller'), 'ServiceAccount');
    t.equal(template(objs, 'controller').spec.serviceAccountName, ctl.metadata.name, 'the ServiceAccount the controller pods run as');
    t.same(ctl.metadata.annotations, {
      'eks.amazonaws.com/role-arn': 'arn:aws:iam::111122223333:role/esi',
      'iam.gke.io/gcp-service-account': 'esi@proj.iam.gserviceaccount.com',
    });
    const web = only(component(objs, 'webhook'), 'ServiceAccount');
    t.equal(template(objs, 'webhook').spec.serviceAccountName, web.metadata.name);
    t.same(web.metadata.annotations, { 'example.com/webhook': 'yes' }, 'the webhook\'s key still works, and the controller\'s role stays off the webhook');
  });

  t.test('controller.podLabels and podAnnotations, as the webhook has them; selectors unchanged', async (t) => {
    const plain = template(await helm.template('esi', NS), 'controller');
    t.notOk(plain.metadata.annotations, 'default: no pod annotations');
    const objs = await helm.template('esi', NS, [
      // --set-string: label and annotation values are strings ("true" in a values file)
      '--set-string', 'controller.podLabels.azure\\.workload\\.identity/use=true', '--set', 'controller.podLabels.team=platform',
      '--set-string', 'controller.podAnnotations.prometheus\\.io/scrape=true',
    ]);
    const tpl = template(objs, 'controller');
    t.equal(tpl.metadata.labels['azure.workload.identity/use'], 'true');
    t.equal(tpl.metadata.labels.team, 'platform');
    t.equal(tpl.metadata.labels['app.kubernetes.io/component'], 'controller', 'the chart\'s own labels stay');
    t.same(tpl.metadata.annotations, { 'prometheus.io/scrape': 'true' });
    const d = only(component(objs, 'controller'), 'Deployment') as unknown as { spec: { selector: { matchLabels: Record<string, string> } } };
    t.notOk('team' in d.spec.selector.matchLabels, 'extra labels are not in the (immutable) selector');
    t.notOk(template(objs, 'webhook').metadata.labels.team, 'not on the webhook pods');
  });

  t.test('controller.fleet.awsChangeQueue: the controller\'s flags for the operator\'s queue; none by default', async (t) => {
    const args = (objs: K8sObject[]) => ((template(objs, 'controller') as unknown as { spec: { containers: { args?: string[] }[] } }).spec.containers[0]!.args ?? []).filter((a) => a.startsWith('--aws-change-queue'));
    t.same(args(await helm.template('esi', NS)), [], 'default: off');
    const url = 'https://sqs.eu-west-1.amazonaws.com/111122223333/esi-changes';
    t.same(args(await helm.template('esi', NS, ['--set', `controller.fleet.awsChangeQueue.url=${url}`, '--set', 'controller.fleet.awsChangeQueue.credentialsSecret=esi-aws-queue'])),
      [`--aws-change-queue-url=${url}`, '--aws-change-queue-credentials-secret=esi-aws-queue']);
  });

  t.test('controller.fleet.gcpChangeSubscription: the controller\'s flags for the operator\'s subscription; none by default', async (t) => {
    const args = (objs: K8sObject[]) => ((template(objs, 'controller') as unknown as { spec: { containers: { args?: string[] }[] } }).spec.containers[0]!.args ?? []).filter((a) => a.startsWith('--gcp-change'));
    t.same(args(await helm.template('esi', NS)), [], 'default: off');
    const name = 'projects/my-proj/subscriptions/esi-changes';
    t.same(args(await helm.template('esi', NS, ['--set', `controller.fleet.gcpChangeSubscription.name=${name}`, '--set', 'controller.fleet.gcpChangeSubscription.credentialsSecret=esi-gcp-subscription'])),
      [`--gcp-change-subscription=${name}`, '--gcp-change-credentials-secret=esi-gcp-subscription']);
    await t.rejects(helm.template('esi', NS, ['--set', 'controller.fleet.gcpChangeSubscription.name=esi-changes']), /gcpChangeSubscription\/name/, 'the schema refuses a name that is not a subscription\'s');
    await t.rejects(helm.template('esi', NS, ['--set', 'controller.fleet.gcpChangeSubscription.endpoint=http://pubsub.example']), /gcpChangeSubscription\/endpoint/, 'and a plain-HTTP endpoint');
  });

  t.test('webhook PodDisruptionBudget: with 2 replicas by default; none with one replica unless forced', async (t) => {
    const pdb = (objs: K8sObject[]) => ofKind(component(objs, 'webhook'), 'PodDisruptionBudget') as (K8sObject & { spec: { minAvailable: number } })[];
    const two = pdb(await helm.template('esi', NS));
    t.equal(two.length, 1, 'default (2 replicas): a PDB');
    t.equal(two[0]!.spec.minAvailable, 1);
    t.same(pdb(await helm.template('esi', NS, ['--set', 'webhook.replicas=1'])), [], 'one replica: none, so node drains are not blocked');
    t.equal(pdb(await helm.template('esi', NS, ['--set', 'webhook.replicas=1', '--set', 'webhook.podDisruptionBudget.force=true'])).length, 1, 'force renders it anyway');
    t.same(pdb(await helm.template('esi', NS, ['--set', 'webhook.podDisruptionBudget.enabled=false'])), [], 'enabled=false: none');
    const ctl = (objs: K8sObject[]) => ofKind(component(objs, 'controller'), 'PodDisruptionBudget');
    t.equal(ctl(await helm.template('esi', NS, ['--set', 'controller.replicas=1', '--set', 'controller.podDisruptionBudget.force=true'])).length, 1, 'the controller\'s PDB has the same force');
  });

  t.test('global.imageRegistry and global.imagePullSecrets: honoured on every image and pod', async (t) => {
    const objs = await helm.template('esi', NS, [
      '--set', 'global.imageRegistry=mirror.corp.example:5000',
      '--set-json', 'global.imagePullSecrets=[{"name":"mirror-pull"}]',
      '--set-json', 'imagePullSecrets=[{"name":"own-pull"}]',
    ]);
    for (const name of ['webhook', 'controller'] as const) {
      const pod = template(objs, name).spec;
      t.equal(pod.containers[0]!.image, 'mirror.corp.example:5000/esi-dev/esi:0.1.0', `${name}: the registry replaced, the path kept`);
      t.same(pod.imagePullSecrets, [{ name: 'mirror-pull' }, { name: 'own-pull' }], `${name}: the global pull secrets, then the chart's`);
    }
    t.ok(template(objs, 'webhook').spec.containers[0]!.args?.includes('--agent-image=mirror.corp.example:5000/esi-dev/esi:0.1.0'), 'the injected agent from the mirror too');
    const bare = await helm.template('esi', NS, ['--set', 'global.imageRegistry=mirror.corp.example', '--set', 'image.repository=esi', '--set', 'agent.image.repository=localhost:5000/team/esi-agent']);
    t.equal(template(bare, 'webhook').spec.containers[0]!.image, 'mirror.corp.example/esi:0.1.0', 'a repository without a registry gets it prefixed');
    t.ok(template(bare, 'webhook').spec.containers[0]!.args?.includes('--agent-image=mirror.corp.example/team/esi-agent:0.1.0'), 'localhost:5000 is a registry, replaced');
    const plain = template(await helm.template('esi', NS), 'webhook').spec;
    t.equal(plain.containers[0]!.image, 'ghcr.io/esi-dev/esi:0.1.0', 'default: as written');
    t.notOk(plain.imagePullSecrets, 'default: no pull secrets');
    const bad = await helm.run(['template', 'esi', CHART, '--set', 'global.imageRegistry=https://mirror']);
    t.not(bad.code, 0, 'a URL is not a registry');
    t.match(bad.stderr, /global\/imageRegistry/);
  });

  t.test('as a subchart of an umbrella chart with other charts\' globals, ESI renders', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'esi-umbrella-'));
    cpSync(CHART, join(dir, 'charts/esi'), { recursive: true });
    writeFileSync(join(dir, 'Chart.yaml'), 'apiVersion: v2\nname: platform\nversion: 1.0.0\ndependencies:\n  - name: esi\n    version: 0.1.0\n');
    writeFileSync(join(dir, 'values.yaml'), 'global:\n  storageClass: fast\n  imageRegistry: mirror.corp.example\n');
    const r = await helm.run(['template', 'platform', dir, '--namespace', NS, '--kube-version', KUBE_VERSION]);
    t.equal(r.code, 0, `the schema accepts the umbrella's global (Helm gives it to every subchart): ${r.stderr}`);
    t.match(r.stdout, /image: "mirror\.corp\.example\/esi-dev\/esi:0\.1\.0"/, 'and reads the key it knows');
  });

  t.test('NOTES.txt names the controller, or says it is not installed', async (t) => {
    // helm template does not render NOTES.txt and install --dry-run needs a cluster: render it
    // as a template of a copy of the chart.
    const notes = async (args: string[]) => {
      const dir = mkdtempSync(join(tmpdir(), 'esi-notes-'));
      cpSync(CHART, dir, { recursive: true });
      const text = readFileSync(join(dir, 'templates/NOTES.txt'), 'utf8');
      writeFileSync(join(dir, 'templates/_notes.tpl'), `{{- define "test.notes" -}}\n${text}\n{{- end }}\n`);
      renameSync(join(dir, 'templates/NOTES.txt'), join(dir, 'NOTES.orig'));
      writeFileSync(join(dir, 'templates/notes.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes\ndata:\n  notes: {{ include "test.notes" . | quote }}\n');
      const r = await helm.run(['template', 'esi', dir, '--namespace', NS, '--kube-version', KUBE_VERSION, '--show-only', 'templates/notes.yaml', ...args]);
      if (r.code !== 0) throw new Error(r.stderr);
      return (parse(r.stdout) as { data: { notes: string } }).data.notes;
    };
    const on = await notes([]);
    t.match(on, /Reconciler: +Deployment esi-controller \(2 replicas/);
    t.match(on, /writes Kubernetes Secrets from ExternalSecrets/);
    t.match(on, /rollout status deployment\/esi-controller/);
    const off = await notes(['--set', 'controller.enabled=false']);
    t.match(off, /Reconciler: +not installed/);
    t.notMatch(off, /deployment\/esi-controller/);
  });
}
