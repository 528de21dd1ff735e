// The chart rendered the way GitOps tools render it (docs/gitops.md): Argo CD runs `helm
// template` with the destination cluster's --api-versions and no `lookup`; a CI job renders
// with neither. The YAML blocks of docs/gitops.md are parsed and used here, so the page
// cannot drift from the chart: its values render what it says, and every field its
// ignoreDifferences / driftDetection rules name is one ESI really writes at run time.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { generateCa } from '../../certs/pki.js';
import { WebhookCaPublisher } from '../../certs/webhook-ca.js';
import type { KubeRest } from '../../src/kube/rest.js';
import { CHART, findHelm, Helm, KUBE_VERSION, ofKind, one, ROOT, type K8sObject } from '../support/helm.js';

const NS = 'esi-system';
const DOC = readFileSync(join(ROOT, 'docs', 'gitops.md'), 'utf8');
const MONITORING = ['--set', 'metrics.serviceMonitor.enabled=true', '--set', 'metrics.controller.serviceMonitor.enabled=true', '--set', 'metrics.prometheusRule.enabled=true'];
const PROMETHEUS_KINDS = /^(ServiceMonitor|PrometheusRule)$/;

/** Every ```yaml block of the page, parsed. */
const blocks: unknown[] = [...DOC.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => parse(m[1]!));

type IgnoreRule = { group?: string; kind: string; jsonPointers?: string[]; jqPathExpressions?: string[] };
type Application = { kind: 'Application'; spec: { source: { helm: { valuesObject: Record<string, unknown> } }; ignoreDifferences: IgnoreRule[]; syncPolicy: { syncOptions: string[] } } };
type HelmRelease = { kind: 'HelmRelease'; spec: { driftDetection: { mode: string; ignore: { target: { kind: string }; paths: string[] }[] } } };
const application = blocks.find((b) => (b as { kind?: string }).kind === 'Application') as Application;
const helmRelease = blocks.find((b) => (b as { kind?: string }).kind === 'HelmRelease') as HelmRelease;
const jqBlock = blocks.find((b) => Array.isArray(b) || (b as { ignoreDifferences?: unknown }).ignoreDifferences) as { ignoreDifferences: IgnoreRule[] };
const crdAnnotations = blocks.find((b) => (b as { crds?: unknown }).crds) as { crds: { annotations: Record<string, string> } };

/** RFC 6901: undefined when the pointer does not resolve. */
function resolvePointer(obj: unknown, pointer: string): unknown {
  let cur: unknown = obj;
  for (const raw of pointer.split('/').slice(1)) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (cur === null || typeof cur !== 'object' || !Object.prototype.hasOwnProperty.call(cur, key)) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/** The values of `expr` in obj, by the real jq (Argo CD evaluates these with gojq). */
function jq(expr: string, obj: unknown): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    const child = execFile('jq', ['-c', expr], (err, stdout, stderr) => {
      if (err) reject(new Error(`jq ${expr}: ${stderr}`));
      else resolve(stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as unknown));
    });
    child.stdin!.end(JSON.stringify(obj));
  });
}

/** The MutatingWebhookConfiguration after the webhook (certificates.mode=self) published its
 * CA into it: ESI's own publisher, run against the rendered object in place of the apiserver. */
async function afterCaPublished(rendered: K8sObject): Promise<K8sObject> {
  let stored: K8sObject = structuredClone(rendered);
  const rest = {
    get: async () => structuredClone(stored),
    call: async (method: string, _path: string, body: K8sObject) => {
      if (method !== 'PUT') throw new Error(`unexpected ${method}`);
      stored = structuredClone(body);
      return structuredClone(stored);
    },
  } as unknown as KubeRest;
  const ca = await generateCa(Date.now(), 3600_000);
  const res = await new WebhookCaPublisher(rest, rendered.metadata.name).publish(ca.certPem, 1);
  if (res.outcome !== 'updated') throw new Error(`publish: ${res.outcome}`);
  return stored;
}

const found = await findHelm();
if (!found.path) {
  t.plan(0, `helm is not available, chart tests skipped: ${found.reason}`);
} else {
  const helm = new Helm(found.path);
  const renderFails = async (args: string[]) => {
    const r = await helm.run(['template', 'esi', CHART, '--namespace', NS, '--kube-version', KUBE_VERSION, ...args]);
    return r.code === 0 ? undefined : r.stderr;
  };
  const promKinds = (objs: K8sObject[]) => objs.filter((o) => PROMETHEUS_KINDS.test(o.kind)).map((o) => `${o.kind}/${o.metadata.name}`).sort();
  const ALL = ['PrometheusRule/esi', 'ServiceMonitor/esi-controller', 'ServiceMonitor/esi-webhook'];

  t.test('monitoring kinds without --api-versions: failIfMissing (default) stops naming the value and the API', async (t) => {
    for (const [value, kind] of [['metrics.serviceMonitor.enabled', 'ServiceMonitor'], ['metrics.controller.serviceMonitor.enabled', 'ServiceMonitor'], ['metrics.prometheusRule.enabled', 'PrometheusRule']]) {
      const err = await renderFails(['--set', `${value}=true`]);
      t.ok(err, `${value} alone fails the render`);
      t.match(err, `${value} needs prometheus-operator's CRDs: the cluster serves no monitoring.coreos.com/v1 ${kind} (metrics.renderMode=failIfMissing)`);
      t.match(err, 'metrics.renderMode=alwaysRender', 'says which value renders it anyway');
      t.match(err, `--api-versions monitoring.coreos.com/v1/${kind}`, 'and the helm template flag');
    }
    const quoted = /\| `failIfMissing` \(default\) \| the render stops: `([^`]*) …`/.exec(DOC)?.[1];
    t.ok(quoted, 'docs/gitops.md quotes the message');
    t.match(await renderFails(['--set', 'metrics.serviceMonitor.enabled=true']), quoted!, 'the page quotes the real message');
    t.equal((parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as { metrics: { renderMode: string } }).metrics.renderMode, 'failIfMissing');
  });

  t.test('monitoring kinds without --api-versions: skipIfMissing leaves them out, alwaysRender renders them', async (t) => {
    const skipped = await helm.template('esi', NS, [...MONITORING, '--set', 'metrics.renderMode=skipIfMissing']);
    t.same(promKinds(skipped), [], 'no ServiceMonitor or PrometheusRule to fail the apply');
    t.same(ofKind(skipped, 'Service').map((s) => s.metadata.name).filter((n) => n.endsWith('-metrics')).sort(), ['esi-controller-metrics', 'esi-webhook-metrics'], 'the metrics Services still render (they need no CRD)');
    const forced = await helm.template('esi', NS, [...MONITORING, '--set', 'metrics.renderMode=alwaysRender']);
    t.same(promKinds(forced), ALL);
    t.same(ofKind(forced, 'ServiceMonitor').map((o) => o.apiVersion), ['monitoring.coreos.com/v1', 'monitoring.coreos.com/v1']);
    t.match(await renderFails(['--set', 'metrics.renderMode=sometimes']), /metrics\/renderMode.*'failIfMissing', 'skipIfMissing', 'alwaysRender'/, 'the schema names the three modes');
    t.same(promKinds(await helm.template('esi', NS, ['--set', 'metrics.renderMode=alwaysRender'])), [], 'alwaysRender renders nothing not enabled');
  });

  t.test('monitoring kinds with the API in the list (Argo CD passes the destination cluster\'s): rendered in every mode', async (t) => {
    for (const api of [['--api-versions', 'monitoring.coreos.com/v1'], ['--api-versions', 'monitoring.coreos.com/v1/ServiceMonitor', '--api-versions', 'monitoring.coreos.com/v1/PrometheusRule']]) {
      for (const mode of ['failIfMissing', 'skipIfMissing', 'alwaysRender']) {
        t.same(promKinds(await helm.template('esi', NS, [...MONITORING, ...api, '--set', `metrics.renderMode=${mode}`])), ALL, `${api.filter((a) => a !== '--api-versions').join(' ')}, ${mode}`);
      }
    }
  });

  t.test('CRDs without a cluster: every one renders, as the page says; the values that control it', async (t) => {
    const all = ofKind(await helm.template('esi', NS), 'CustomResourceDefinition');
    t.equal(all.length, 13, 'no lookup: all 13 CRDs, whatever the cluster holds');
    for (const crd of all) {
      t.equal(crd.metadata.labels?.['app.kubernetes.io/part-of'], 'esi', `${crd.metadata.name} carries ESI's mark (what claimUnclassed auto reads)`);
      t.equal(crd.metadata.annotations?.['helm.sh/resource-policy'], 'keep');
    }
    t.same(ofKind(await helm.template('esi', NS, ['--set', 'installCRDs=false']), 'CustomResourceDefinition'), [], 'installCRDs=false: none');
    const toggles = ['createClusterExternalSecret', 'createClusterSecretStore', 'createClusterPushSecret', 'createClusterGenerator', 'createPushSecret'];
    for (const k of toggles) t.match(DOC, `crds.${k}`, `the page names crds.${k}`);
    const some = ofKind(await helm.template('esi', NS, toggles.flatMap((k) => ['--set', `crds.${k}=false`])), 'CustomResourceDefinition');
    const kinds = some.map((c) => (c as unknown as { spec: { names: { kind: string } } }).spec.names.kind);
    t.equal(some.length, 8);
    for (const k of ['ExternalSecret', 'SecretStore', 'Password']) t.ok(kinds.includes(k), `${k} follows installCRDs alone`);
    for (const k of ['ClusterExternalSecret', 'ClusterSecretStore', 'ClusterPushSecret', 'ClusterGenerator', 'PushSecret']) t.notOk(kinds.includes(k), `${k} toggled off`);

    // The page's crds.annotations block, as a values file.
    const dir = mkdtempSync(join(tmpdir(), 'esi-gitops-'));
    writeFileSync(join(dir, 'crds.yaml'), JSON.stringify(crdAnnotations));
    const annotated = ofKind(await helm.template('esi', NS, ['-f', join(dir, 'crds.yaml')]), 'CustomResourceDefinition');
    t.equal(annotated.length, 13);
    for (const crd of annotated) {
      t.equal(crd.metadata.annotations?.['argocd.argoproj.io/sync-options'], 'Prune=false,Delete=false', `${crd.metadata.name}: Argo CD keeps it`);
      t.equal(crd.metadata.annotations?.['helm.sh/resource-policy'], 'keep', 'and Helm still does');
    }
  });

  t.test('the Argo CD Application on the page: its values render, its ignoreDifferences name what the webhook writes', async (t) => {
    t.ok(application, 'docs/gitops.md has an Application');
    t.ok(application.spec.syncPolicy.syncOptions.includes('RespectIgnoreDifferences=true'), 'sync does not write the ignored fields back');
    const dir = mkdtempSync(join(tmpdir(), 'esi-gitops-'));
    writeFileSync(join(dir, 'values.yaml'), JSON.stringify(application.spec.source.helm.valuesObject));
    const objs = await helm.template('esi', NS, ['-f', join(dir, 'values.yaml')]);
    t.same(ofKind(objs, 'CustomResourceDefinition'), [], 'installCRDs false: no CRD to overwrite ESO\'s');

    const rendered = one(objs, 'MutatingWebhookConfiguration');
    const live = await afterCaPublished(rendered);
    const rules = application.spec.ignoreDifferences.filter((r) => r.kind === 'MutatingWebhookConfiguration');
    t.equal(rules.length, 1);
    t.equal(rules[0]!.group, rendered.apiVersion.split('/')[0], 'the group of the rendered object');
    t.ok(rules[0]!.jsonPointers!.length >= 1);
    for (const p of rules[0]!.jsonPointers!) {
      t.equal(resolvePointer(rendered, p), undefined, `${p}: not in the render (Helm never sets it)`);
      t.type(resolvePointer(live, p), 'string', `${p}: written by the webhook at run time`);
    }
    t.equal(resolvePointer(live, '/webhooks/0/name'), 'inject.esi.dev', '/webhooks/0 is ESI\'s one webhook');
    t.equal(Buffer.from(resolvePointer(live, '/webhooks/0/clientConfig/caBundle') as string, 'base64').toString().startsWith('-----BEGIN CERTIFICATE-----'), true, 'the caBundle is the CA');
    const changed = Object.keys(flatten(live)).filter((k) => flatten(rendered)[k] !== flatten(live)[k]);
    for (const k of changed) t.ok(rules[0]!.jsonPointers!.includes(k), `every field the webhook changed is ignored (${k})`);
  });

  t.test('the jq form and Flux\'s driftDetection cover the same fields', async (t) => {
    const rendered = one(await helm.template('esi', NS), 'MutatingWebhookConfiguration');
    const live = await afterCaPublished(rendered);
    const changed = Object.keys(flatten(live)).filter((k) => flatten(rendered)[k] !== flatten(live)[k]).sort();
    t.same(changed, ['/metadata/annotations/esi.dev~1ca-bundle-version', '/webhooks/0/clientConfig/caBundle']);

    t.ok(helmRelease, 'docs/gitops.md has a HelmRelease');
    t.equal(helmRelease.spec.driftDetection.mode, 'enabled');
    const flux = helmRelease.spec.driftDetection.ignore.filter((r) => r.target.kind === 'MutatingWebhookConfiguration');
    t.same(flux.flatMap((r) => r.paths).sort(), changed, 'Flux ignores exactly the fields ESI writes');

    const exprs = jqBlock.ignoreDifferences.find((r) => r.kind === 'MutatingWebhookConfiguration')!.jqPathExpressions!;
    if (!(process.env.PATH ?? '').split(':').some((d) => d && existsSync(join(d, 'jq')))) {
      t.comment('jq not installed: the jq expressions are not evaluated');
      return;
    }
    const got = (await Promise.all(exprs.map((e) => jq(e, live)))).flat();
    const want = changed.map((p) => resolvePointer(live, p));
    t.same(got.sort(), want.sort(), 'the jq paths select the caBundle and the version annotation');
    // A second webhook in the configuration: the jq form still covers it.
    const two = structuredClone(live) as K8sObject & { webhooks: { clientConfig: { caBundle?: string } }[] };
    two.webhooks.push(structuredClone(two.webhooks[0]!));
    t.equal((await jq(exprs[0]!, two)).length, 2, '.webhooks[]? covers every webhook');
  });
}

/** JSON pointer -> scalar, for comparing the render with the live object field by field. */
function flatten(obj: unknown, prefix = ''): Record<string, unknown> {
  if (obj === null || typeof obj !== 'object') return { [prefix]: obj };
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) Object.assign(out, flatten(v, `${prefix}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`));
  return out;
}
