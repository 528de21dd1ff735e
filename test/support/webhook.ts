// Runs the real `esi webhook` command as a subprocess against the test control plane and
// registers a MutatingWebhookConfiguration that sends it the opted-in pods of the
// namespaces carrying this run's label. Captures the process output for canary scans.
import { AdmissionregistrationV1Api, type KubeConfig, type V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request } from 'node:https';
import { join } from 'node:path';
import { freePort, terminate } from './platform/processes.js';
import { until } from './platform/until.js';

export const ROOT = join(import.meta.dirname, '..', '..');
export const ESI = [join(ROOT, 'node_modules', '.bin', 'tsx'), join(ROOT, 'src', 'cli', 'esi.ts')];
export const AGENT_IMAGE = 'registry.example/esi:test';

export interface RunningWebhook {
  port: number;
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

export function esiProcess(args: string[], env: Record<string, string> = {}): { child: ChildProcess; output: () => string } {
  const child = spawn(ESI[0]!, [ESI[1]!, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  return { child, output: () => out };
}

function ready(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    // Readiness poll only; the apiserver verifies the certificate for real.
    const req = request({ host: '127.0.0.1', port, path: '/readyz', rejectUnauthorized: false, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.end();
  });
}

export async function startWebhook(opts: { kubeconfigPath: string; namespace: string; configName: string; port?: number; extraArgs?: string[] }): Promise<RunningWebhook> {
  const port = opts.port ?? (await freePort());
  const { child, output } = esiProcess([
    'webhook', '--listen', '127.0.0.1', '--port', String(port), '--kubeconfig', opts.kubeconfigPath,
    '--agent-image', AGENT_IMAGE, '--namespace', opts.namespace, '--webhook-config-name', opts.configName,
    '--secret-name', `${opts.configName}-tls`, '--cert-extra-sans', '127.0.0.1',
    // Tests read /metrics without a token unless they test the authentication (metrics-auth.test.ts).
    ...(opts.extraArgs?.some((a) => a.startsWith('--metrics-secure')) ? [] : ['--metrics-secure=false']), ...(opts.extraArgs ?? []),
  ], { ESI_LOG_LEVEL: 'debug' });
  // Generous: three tsx processes starting at once on a loaded 2-core machine took > 30 s.
  const deadline = Date.now() + 90_000;
  while (!(await ready(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`esi webhook did not become ready:\n${output()}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const stop = () => terminate(child);
  return { port, child, output, stop };
}

/** A MutatingWebhookConfiguration as the Helm chart installs it, but pointing at a URL
 *  and limited to namespaces labelled `esi-test-run=<runId>`. */
export function webhookConfiguration(name: string, url: string, runId: string): V1MutatingWebhookConfiguration {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name },
    webhooks: [{
      name: 'inject.esi.dev',
      clientConfig: { url },
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
      objectSelector: { matchLabels: { 'esi.dev/inject': 'true' } },
      namespaceSelector: { matchLabels: { 'esi-test-run': runId } },
      failurePolicy: 'Fail',
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
      timeoutSeconds: 10,
      reinvocationPolicy: 'IfNeeded',
    }],
  };
}

export async function registerWebhook(kc: KubeConfig, port: number, t: { teardown(fn: () => unknown): void }) {
  const runId = randomBytes(4).toString('hex');
  const name = `esi-test-${runId}`;
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  await api.createMutatingWebhookConfiguration({ body: webhookConfiguration(name, `https://127.0.0.1:${port}/mutate`, runId) });
  t.teardown(() => api.deleteMutatingWebhookConfiguration({ name }).catch(() => undefined));
  return { name, runId };
}

/** Waits until the webhook configuration carries a caBundle (patched by the webhook). */
export async function waitForCaBundle(kc: KubeConfig, name: string, timeoutMs = 30_000): Promise<string> {
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  return until(`the caBundle of ${name}`, async () => (await api.readMutatingWebhookConfiguration({ name })).webhooks?.[0]?.clientConfig.caBundle, timeoutMs, 200);
}
