// The chart tests' view of Helm: the pinned `helm` binary (built by
// test/platform/build-helm.sh, cached under ~/.cache/esi/bin), run with a private
// HELM_*_HOME so no user configuration leaks in, and `helm template` output parsed into
// objects.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

export const ROOT = join(import.meta.dirname, '..', '..');
export const CHART = join(ROOT, 'charts', 'esi');
const PLATFORM = join(ROOT, 'test', 'platform');

/** The Kubernetes version the test control plane runs (helm template --kube-version). */
export const KUBE_VERSION = (/^KUBERNETES_VERSION=(\S+)/m.exec(readFileSync(join(ROOT, 'test/platform/versions.env'), 'utf8')) ?? [])[1] ?? 'v1.34.0';

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [key: string]: unknown;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv, timeoutMs: number): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(file, args, { env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

const tools = new Map<string, Promise<{ path?: string; reason?: string }>>();

/** Runs the platform script `script` (test/platform/, `--print`), which builds or installs a
 *  pinned tool the first time and finds it cached afterwards; reason says why it could not. */
export function platformTool(script: string): Promise<{ path?: string; reason?: string }> {
  let found = tools.get(script);
  if (!found) {
    found = run('bash', [join(PLATFORM, script), '--print'], process.env, 15 * 60_000).then((r) => {
      const path = r.stdout.trim().split('\n').pop();
      if (r.code === 0 && path) return { path };
      return { reason: `test/platform/${script} failed (exit ${r.code}):\n${r.stderr.split('\n').slice(-15).join('\n')}` };
    });
    tools.set(script, found);
  }
  return found;
}

/** Builds (first time, a few minutes) or finds the pinned helm; reason says why not. */
export function findHelm(): Promise<{ path?: string; reason?: string }> {
  return platformTool('build-helm.sh');
}

const helmHome = mkdtempSync(join(tmpdir(), 'esi-helm-home-'));
const HELM_ENV: NodeJS.ProcessEnv = {
  ...process.env,
  HELM_CACHE_HOME: join(helmHome, 'cache'),
  HELM_CONFIG_HOME: join(helmHome, 'config'),
  HELM_DATA_HOME: join(helmHome, 'data'),
  HELM_NO_PLUGINS: '1',
};

export class Helm {
  constructor(readonly path: string) {}

  run(args: string[], timeoutMs = 120_000): Promise<RunResult> {
    return run(this.path, args, HELM_ENV, timeoutMs);
  }

  /** `helm template`, throwing with Helm's message on failure. */
  async template(release: string, namespace: string, args: string[] = []): Promise<K8sObject[]> {
    const r = await this.run(['template', release, CHART, '--namespace', namespace, '--kube-version', KUBE_VERSION, ...args]);
    if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr}`);
    return parseManifests(r.stdout);
  }
}

export function parseManifests(text: string): K8sObject[] {
  const out: K8sObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`rendered YAML does not parse: ${doc.errors[0]!.message}`);
    const obj = doc.toJS() as K8sObject | null;
    if (obj) out.push(obj);
  }
  return out;
}

export function ofKind(objs: K8sObject[], kind: string): K8sObject[] {
  return objs.filter((o) => o.kind === kind);
}

export function one(objs: K8sObject[], kind: string): K8sObject {
  const found = ofKind(objs, kind);
  if (found.length !== 1) throw new Error(`expected exactly one ${kind}, rendered ${found.length}`);
  return found[0]!;
}

/* Typed views of the few fields the tests read. */
export interface PolicyRule { apiGroups?: string[]; resources?: string[]; resourceNames?: string[]; verbs: string[] }
export interface Container {
  name: string; image: string; command?: string[]; args?: string[]; env?: { name: string; value?: string; valueFrom?: { fieldRef?: { fieldPath: string } } }[];
  securityContext?: Record<string, unknown>; readinessProbe?: Probe; livenessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
export interface Probe { httpGet?: { path: string; port: string | number; scheme?: string } }
export interface PodSpec {
  serviceAccountName: string; securityContext?: Record<string, unknown>; containers: Container[];
  affinity?: { podAntiAffinity?: { preferredDuringSchedulingIgnoredDuringExecution?: unknown[]; requiredDuringSchedulingIgnoredDuringExecution?: unknown[] } };
  volumes?: { name: string; secret?: { secretName: string } }[];
}
export interface Deployment extends K8sObject { spec: { replicas: number; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } } }
export interface LabelSelectorRequirement { key: string; operator: string; values?: string[] }
export interface MutatingWebhook {
  name: string; failurePolicy: string; sideEffects: string; admissionReviewVersions: string[]; timeoutSeconds: number;
  reinvocationPolicy: string; objectSelector: { matchLabels?: Record<string, string> };
  namespaceSelector: { matchExpressions?: LabelSelectorRequirement[]; matchLabels?: Record<string, string> };
  rules: { operations: string[]; resources: string[]; apiGroups: string[] }[];
  clientConfig: { caBundle?: string; service?: { name: string; namespace: string; path: string; port: number } };
}
export interface WebhookConfig extends K8sObject { webhooks: MutatingWebhook[] }

export function deploymentOf(objs: K8sObject[]): Deployment {
  return one(objs, 'Deployment') as Deployment;
}

export function webhookOf(objs: K8sObject[]): MutatingWebhook {
  const cfg = one(objs, 'MutatingWebhookConfiguration') as WebhookConfig;
  if (cfg.webhooks.length !== 1) throw new Error(`expected one webhook, got ${cfg.webhooks.length}`);
  return cfg.webhooks[0]!;
}

export function rulesOf(obj: K8sObject): PolicyRule[] {
  return (obj as K8sObject & { rules?: PolicyRule[] }).rules ?? [];
}

/** True when the selector's matchExpressions keep a namespace with these labels out. */
export function namespaceExcluded(sel: MutatingWebhook['namespaceSelector'], labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return true;
  return (sel.matchExpressions ?? []).some((e) => {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    const value = labels[e.key] ?? '';
    switch (e.operator) {
      case 'In': return !has || !(e.values ?? []).includes(value);
      case 'NotIn': return has && (e.values ?? []).includes(value);
      case 'Exists': return !has;
      case 'DoesNotExist': return has;
      default: throw new Error(`unknown operator ${e.operator}`);
    }
  });
}
