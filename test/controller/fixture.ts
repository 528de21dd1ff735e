// Shared set-up of the reconciler tests: the real control plane with ESI's CRDs, the real
// `esi controller` command as a subprocess (its own class, so tests sharing the control
// plane never see each other's stores), metrics scraping, and small API helpers.
import { CoreV1Api, CustomObjectsApi, KubeConfig, type V1Secret } from '@kubernetes/client-node';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { installCrds } from '../../src/api/crds.js';
import type { ExternalSecret } from '../../src/api/types.js';
import { freePort } from '../platform/processes.js';
import { useControlPlane, type ControlPlane } from '../platform/controlPlane.js';
import type { ControlPlaneOptions } from '../platform/control-plane-process.js';
import { spawn } from 'node:child_process';
import { ROOT } from '../helpers/webhook.js';
import { until } from '../platform/until.js';

export const GROUP = 'external-secrets.io';
type T = { teardown(fn: () => unknown): void };

export interface RunningController {
  port: number;
  child: ChildProcess;
  output(): string;
  metrics(): Promise<string>;
  /** Sum of a counter's samples whose labels contain every `match` pair. */
  counter(name: string, match?: Record<string, string>): Promise<number>;
  stop(signal?: NodeJS.Signals): Promise<void>;
}

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end();
  });
}

/** `imports`: modules (repository-relative) loaded into the controller process first, e.g.
 *  a test-only provider registered through registerProvider (readonly-provider.ts). */
export async function startController(kubeconfigPath: string, args: string[], t?: T, opts: { waitReady?: boolean; imports?: string[]; createNamespace?: boolean } = {}): Promise<RunningController> {
  if (opts.createNamespace !== false) await ensureOwnNamespace(kubeconfigPath, args);
  const port = await freePort();
  const imports = (opts.imports ?? []).flatMap((m) => ['--import', `./${m}`]);
  // node itself (not the tsx wrapper) so a signal reaches the controller, SIGKILL included.
  // The test stores (OpenBao, stand-ins, the apiserver) listen on 127.0.0.1, which the egress
  // policy refuses a SecretStore by default: the operator's allow-list opens that one address
  // unless the test sets --egress-allow itself (`--egress-allow=` for the strict default).
  const egress = args.some((a) => a.startsWith('--egress-allow')) ? [] : ['--egress-allow=127.0.0.1,::1'];
  // The tests scrape the probe port: plain metrics, as an operator asks with
  // --metrics-secure=false, unless the test sets the flag itself (metrics-auth.test.ts).
  const plain = args.some((a) => a.startsWith('--metrics-secure')) ? [] : ['--metrics-secure=false'];
  const child = spawn(process.execPath, ['--import', 'tsx', ...imports, 'src/cli/esi.ts', 'controller', '--kubeconfig', kubeconfigPath, '--listen', '127.0.0.1', '--port', String(port), ...egress, ...plain, ...args], {
    cwd: ROOT, env: { ...process.env, ESI_LOG_LEVEL: 'debug' }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const output = () => out;
  // Generous: a cold `node --import tsx` start on a loaded 2-core machine took > 30 s.
  const deadline = Date.now() + 90_000;
  while (opts.waitReady !== false && (await get(port, '/readyz')).status !== 200) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`esi controller did not become ready:\n${output()}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  t?.teardown(() => stop());
  const metrics = async () => (await get(port, '/metrics')).body;
  const counter = async (name: string, match: Record<string, string> = {}) => {
    let sum = 0;
    for (const line of (await metrics()).split('\n')) {
      if (!line.startsWith(name)) continue;
      const m = /^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
      if (!m || m[1] !== name) continue;
      if (Object.entries(match).every(([k, v]) => (m[2] ?? '').includes(`${k}="${v}"`))) sum += Number(m[3]);
    }
    return sum;
  };
  return { port, child, output, metrics, counter, stop };
}

/** The controller's own namespace (its Lease, its PushSecret records) exists in a cluster
 *  it was installed in; on the test platform a --namespace one is created here when missing
 *  (without the flag the controller uses the kubeconfig context's, here `default`). */
async function ensureOwnNamespace(kubeconfigPath: string, args: string[]): Promise<void> {
  const i = args.indexOf('--namespace');
  if (i < 0) return;
  const name = args[i + 1]!;
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } }).catch((err: { code?: number }) => {
    if (err.code !== 409) throw err;
  });
}

export interface Env {
  cp: ControlPlane;
  kc: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  cls: string;
}

export async function controllerEnv(t: T, opts: ControlPlaneOptions = {}): Promise<Env> {
  const cp = await useControlPlane(t, opts);
  await installCrds(cp.kc);
  return { cp, kc: cp.kc, core: cp.kc.makeApiClient(CoreV1Api), custom: cp.kc.makeApiClient(CustomObjectsApi), cls: `t-${randomBytes(3).toString('hex')}` };
}

export async function create(env: Env, ns: string | undefined, plural: string, body: object): Promise<void> {
  const o = { apiVersion: `${GROUP}/v1`, ...body };
  if (ns) await env.custom.createNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural, body: o });
  else await env.custom.createClusterCustomObject({ group: GROUP, version: 'v1', plural, body: o });
}

export async function patchSpec(env: Env, ns: string | undefined, plural: string, name: string, mutate: (o: Record<string, unknown>) => void): Promise<void> {
  for (let i = 0; ; i++) {
    const cur = (ns
      ? await env.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural, name })
      : await env.custom.getClusterCustomObject({ group: GROUP, version: 'v1', plural, name })) as Record<string, unknown>;
    mutate(cur);
    try {
      if (ns) await env.custom.replaceNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural, name, body: cur });
      else await env.custom.replaceClusterCustomObject({ group: GROUP, version: 'v1', plural, name, body: cur });
      return;
    } catch (err) {
      if (i > 5 || (err as { code?: number }).code !== 409) throw err;
    }
  }
}

export async function getES(env: Env, ns: string, name: string): Promise<ExternalSecret> {
  return (await env.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'externalsecrets', name })) as ExternalSecret;
}

export async function getSecret(env: Env, ns: string, name: string): Promise<V1Secret | undefined> {
  try {
    return await env.core.readNamespacedSecret({ namespace: ns, name });
  } catch {
    return undefined;
  }
}

export const decoded = (s: V1Secret | undefined): Record<string, string> =>
  Object.fromEntries(Object.entries(s?.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));

export { until };

/** The ExternalSecret once its Ready condition has `status` (and `reason`, if given). */
export function ready(env: Env, ns: string, name: string, status: 'True' | 'False', reason?: string, ms?: number): Promise<ExternalSecret> {
  let last = '';
  return until(`ExternalSecret ${ns}/${name} Ready=${status}${reason ? ` (${reason})` : ''}`, async () => {
    const es = await getES(env, ns, name);
    const c = es.status?.conditions?.find((x) => x.type === 'Ready');
    last = JSON.stringify(c);
    return c?.status === status && (!reason || c.reason === reason) ? es : undefined;
  }, ms).catch((err: Error) => Promise.reject(new Error(`${err.message}; last Ready condition: ${last}`)));
}

export function fakeStore(name: string, cls: string, data: { key: string; value?: string; valueMap?: Record<string, string>; version?: string }[], kind = 'SecretStore', extra: object = {}) {
  return { kind, metadata: { name }, spec: { controller: cls, provider: { fake: { data } }, ...extra } };
}

export function externalSecret(name: string, store: string, spec: object, meta: object = {}, kind = 'SecretStore') {
  return { kind: 'ExternalSecret', metadata: { name, ...meta }, spec: { secretStoreRef: { name: store, kind }, refreshInterval: '1h', ...spec } };
}

/** Sets `vars` for the controller processes a test starts (they inherit the environment) and
 *  restores them when the test ends. */
export function useEnv(t: T, vars: Record<string, string>): void {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  t.teardown(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}
