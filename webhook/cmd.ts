// `esi webhook`: the admission server with its caches and certificates.
import type { KubeConfig } from '@kubernetes/client-node';
import cluster from 'node:cluster';
import { parseArgs } from 'node:util';
import { fileTlsSource, selfManagedTlsSource, type TlsSource } from '../certs/index.js';
import { bool, checkFlags, loadKubeConfig, oneOf, ownNamespace, port, positive } from '../src/flags.js';
import type { ClusterVersion } from '../src/pod-contract/env.js';
import { KubeRest } from '../src/kube/rest.js';
import { MetricsAccessReview } from '../src/kube/access-review.js';
import { createLogger, logSettings, type Logger } from '../src/log.js';
import { WatchCaches } from './cache.js';
import { webhookMetrics } from './metrics.js';
import { AGENT_UID, parseRunAsUser, type AgentResources } from './mutate.js';
import { ANNOTATIONS } from '../src/pod-contract/annotations.js';
import { buildServer } from './server.js';

const HELP = `Usage: esi webhook [options]

Serves the ESI mutating admission webhook over HTTPS.

  --listen ADDR               address to listen on (default 0.0.0.0)
  --port N                    HTTPS port (default 8443)
  --kubeconfig FILE           kubeconfig (default: in-cluster, then $KUBECONFIG)
  --agent-image IMAGE         image of the injected agent (required)
  --agent-pull-policy P       Always | IfNotPresent | Never (default IfNotPresent)
  --token-audience AUD        default audience of pod-identity tokens (default "esi")
  --store-classes LIST        comma-separated spec.controller classes to serve; "" = unclassed
                              (default: every store)
  --agent-env NAME=VALUE      extra environment for every injected agent, repeatable; for
                              non-secret settings only (provider endpoints, CA file paths)
  --agent-run-as-user UID|auto  the agent's runAsUser and runAsGroup (default 65532); "auto"
                              sets neither, for platforms that assign them (OpenShift)
  --workers N                 admission servers (node:cluster workers) sharing the port, 1-8
                              (default 1); each is a whole webhook with its own caches and
                              memory, for a pod given more than one core
  --agent-cpu-request Q --agent-memory-request Q --agent-memory-limit Q
                              defaults of every injected agent's resources (the
                              esi.dev/agent-* annotations' defaults otherwise: 5m, 32Mi,
                              96Mi); a pod's own annotations win
  --metrics-secure BOOL       answer /metrics only to a caller whose bearer token the apiserver
                              accepts (TokenReview) and who may get the nonResourceURL
                              /metrics (SubjectAccessReview); false: to anyone reaching the
                              port (default true, docs/metrics.md)
  certificates, either mounted files (e.g. cert-manager):
  --tls-cert-file F --tls-key-file F [--tls-ca-file F]
  or self-managed (default):
  --namespace NS              namespace of the webhook (default: $POD_NAMESPACE, the pod's,
                              the kubeconfig context's, or default)
  --service-name NAME         webhook Service (default esi-webhook)
  --secret-name NAME          Secret holding CA + serving cert (default esi-webhook-tls)
  --webhook-config-name NAME  MutatingWebhookConfiguration to patch (default esi)
  --cert-validity SECONDS     serving certificate lifetime (default 7776000 = 90 days)
  --cert-extra-sans LIST      extra DNS names / IPs in the certificate (e.g. 127.0.0.1)
`;

const OPTIONS = {
  listen: { type: 'string', default: '0.0.0.0' },
  port: { type: 'string', default: '8443' },
  kubeconfig: { type: 'string' },
  'agent-image': { type: 'string' },
  'agent-pull-policy': { type: 'string', default: 'IfNotPresent' },
  'token-audience': { type: 'string', default: 'esi' },
  'store-classes': { type: 'string' },
  'agent-env': { type: 'string', multiple: true },
  'agent-run-as-user': { type: 'string', default: String(AGENT_UID) },
  'tls-cert-file': { type: 'string' },
  'tls-key-file': { type: 'string' },
  'tls-ca-file': { type: 'string' },
  namespace: { type: 'string' },
  'service-name': { type: 'string', default: 'esi-webhook' },
  'secret-name': { type: 'string', default: 'esi-webhook-tls' },
  'webhook-config-name': { type: 'string', default: 'esi' },
  'cert-validity': { type: 'string', default: '7776000' },
  'cert-extra-sans': { type: 'string', default: '' },
  'agent-cpu-request': { type: 'string' },
  'agent-memory-request': { type: 'string' },
  'agent-memory-limit': { type: 'string' },
  'metrics-secure': { type: 'string', default: 'true' },
  workers: { type: 'string', default: '1' }, // read by webhook/workers.ts before this module loads
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS }>>['values'];

/** The apiserver's version (esi.dev/env needs 1.35+, src/pod-contract/env.ts); undefined, and a
 *  warning, when it cannot be read: admission then leaves the check to the apiserver. */
async function clusterVersionOf(kc: KubeConfig, logger: Logger): Promise<ClusterVersion | undefined> {
  // Plain JSON through KubeRest: the generated VersionApi would load every generated model
  // class into the webhook for three strings (docs/performance/webhook-memory.md).
  const rest = new KubeRest(kc);
  try {
    const v = await rest.get<ClusterVersion>('/version');
    return { major: v.major, minor: v.minor, gitVersion: v.gitVersion };
  } catch (err) {
    logger.warn({ err: (err as Error).message }, 'could not read the apiserver version; esi.dev/env pods are not checked against it');
    return undefined;
  } finally {
    rest.close();
  }
}

async function tlsFrom(v: Values, kc: KubeConfig, logger: Logger): Promise<TlsSource> {
  if (v['tls-cert-file'] && v['tls-key-file']) {
    return fileTlsSource({ certFile: v['tls-cert-file'], keyFile: v['tls-key-file'], caFile: v['tls-ca-file'], logger });
  }
  const sans = v['cert-extra-sans']!.split(',').map((s) => s.trim()).filter(Boolean);
  const isIp = (s: string) => /^[\d.]+$|:/.test(s);
  return selfManagedTlsSource({
    kc, logger, namespace: ownNamespace(v.namespace, kc), secretName: v['secret-name']!, serviceName: v['service-name']!,
    webhookConfigName: v['webhook-config-name']!, certValiditySeconds: positive('cert-validity', v['cert-validity']!),
    extraDNS: sans.filter((s) => !isIp(s)), extraIPs: sans.filter(isIp),
  });
}

/** `NAME=VALUE` pairs; names must be valid env names and not the agent's own config. */
export function parseAgentEnv(pairs: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const name = eq > 0 ? pair.slice(0, eq) : '';
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || name === 'ESI_AGENT_CONFIG') {
      throw new Error(`--agent-env "${pair}": expected NAME=VALUE with a valid variable name other than ESI_AGENT_CONFIG`);
    }
    env[name] = pair.slice(eq + 1);
  }
  return env;
}

/** --agent-cpu-request and the others, checked by the annotations' own rules (bounds included). */
function agentResources(v: Values): AgentResources {
  const out: AgentResources = {};
  for (const [flag, field, annotation] of [
    ['agent-cpu-request', 'cpuRequest', 'esi.dev/agent-cpu-request'],
    ['agent-memory-request', 'memoryRequest', 'esi.dev/agent-memory-request'],
    ['agent-memory-limit', 'memoryLimit', 'esi.dev/agent-memory-limit'],
  ] as const) {
    const raw = v[flag];
    if (raw === undefined) continue;
    const spec = ANNOTATIONS.find((a) => a.name === annotation)!;
    try {
      out[field] = spec.parse(raw) as string;
    } catch (err) {
      throw new Error(`--${flag} "${raw}": ${(err as Error).message}`, { cause: err });
    }
  }
  return out;
}

/** Every flag checked before anything starts (docs/cli.md): a UsageError names the flag. */
function flags(v: Values) {
  if (!v['agent-image']) throw new Error('--agent-image is required (the image of the injected agent)');
  if (!v['tls-cert-file'] !== !v['tls-key-file']) throw new Error('--tls-cert-file and --tls-key-file go together');
  positive('cert-validity', v['cert-validity']!);
  return {
    image: v['agent-image'],
    port: port('port', v.port!),
    pullPolicy: oneOf('agent-pull-policy', v['agent-pull-policy']!, ['Always', 'IfNotPresent', 'Never'] as const),
    env: parseAgentEnv(v['agent-env'] ?? []),
    runAsUser: parseRunAsUser(v['agent-run-as-user']!),
    metricsSecure: bool('metrics-secure', v['metrics-secure']!),
    resources: agentResources(v),
  };
}

export async function main(argv: string[]): Promise<number> {
  const { values: v } = parseArgs({ args: argv, options: OPTIONS, strict: true });
  if (v.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const f = checkFlags(() => {
    logSettings();
    return flags(v);
  });
  const root = createLogger('webhook', { flushMs: 250 });
  // Under --workers (webhook/workers.ts) every line says which worker wrote it.
  const logger = cluster.isWorker ? root.child({ worker: cluster.worker!.id, pid: process.pid }) : root;
  const kc = loadKubeConfig(v.kubeconfig);
  const caches = new WatchCaches(kc, logger);
  const [tls, clusterVersion] = await Promise.all([tlsFrom(v, kc, logger), clusterVersionOf(kc, logger), caches.start()]);
  // Reviews go through a client of their own: a scrape never waits behind the caches' lists.
  const reviews = f.metricsSecure ? new KubeRest(kc, { timeoutMs: 10_000, maxSockets: 4 }) : undefined;
  const app = await buildServer({
    tls, lookup: caches, ...(reviews ? { metricsAccess: new MetricsAccessReview(reviews) } : {}), metrics: webhookMetrics(() => caches.synced()), logger, ...(clusterVersion ? { clusterVersion } : {}),
    resolve: v['store-classes'] === undefined ? {} : { storeClasses: v['store-classes'].split(',').map((s) => s.trim()) },
    agent: {
      image: f.image, defaultTokenAudience: v['token-audience']!,
      imagePullPolicy: f.pullPolicy, env: f.env, runAsUser: f.runAsUser, resources: f.resources,
    },
  });
  await app.listen({ host: v.listen, port: f.port });
  logger.info({ port: f.port, caches: caches.status() }, 'webhook serving');
  return new Promise((resolve) => {
    const shutdown = async (signal: string) => {
      logger.info({ signal }, 'shutting down');
      await app.close();
      await Promise.all([caches.stop(), tls.stop()]);
      reviews?.close();
      logger.flush();
      resolve(0);
    };
    process.once('SIGTERM', () => void shutdown('SIGTERM'));
    process.once('SIGINT', () => void shutdown('SIGINT'));
  });
}
