// `esi controller`: the reconciler (ExternalSecret -> Secret). Runs in cluster with its
// ServiceAccount or out of cluster with KUBECONFIG, like kubectl. With leader election
// (default) only the holder of the class's Lease reconciles; the others stand by.
import { parseAllowList } from '../egress/policy.js';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { bool, checkFlags, loadKubeConfig, ownNamespace, port, positive } from '../flags.js';
import { isDnsLabel, isDnsSubdomain } from '../kube/names.js';
import { NAMESPACES, resourcePath } from '../kube/paths.js';
import { KubeRest } from '../kube/rest.js';
import { createLogger, logSettings } from '../log.js';
import { Controller } from './controller.js';
import { decideClaimUnclassed } from './runtime/coexist.js';
import { parseGoDuration } from '../duration.js';
import { LeaderElector } from './runtime/leader.js';
import { controllerMetrics, resourceOf } from './runtime/metrics.js';
import { DEFAULT_MAX_GENERATOR_STATES, STATES_PER_ENTRY } from './generatorstate/limits.js';
import { TokenBucket } from './runtime/queue.js';
import { startProbeServer } from './runtime/server.js';
import { fleetFlags } from './fleet/flags.js';
import { metricsTls, startSecureMetricsServer } from './runtime/metrics-server.js';
import { MetricsAccessReview } from '../kube/access-review.js';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Exposition } from './runtime/metrics-server.js';

const DEFAULT_CLASS = 'esi';

const HELP = `Usage: esi controller [options]

Reconciles ExternalSecrets into Kubernetes Secrets (docs/controller.md).

  --kubeconfig FILE          kubeconfig (default: $KUBECONFIG, then in-cluster)
  --controller-class NAME    serve stores whose spec.controller is NAME (default "${DEFAULT_CLASS}")
  --claim-unclassed true|false|auto
                             also serve stores without spec.controller; auto (default):
                             unless the external-secrets.io CRDs are not ESI's (External
                             Secrets Operator installed them and serves those stores)
  --workers N                concurrent reconciles (default 16)
  --kube-qps N --kube-burst N    requests per second to the apiserver, writes and the
                             reads outside the watches (default 500 / 1000)
  --store-qps N --store-burst N  remote reads per second per store (default 200 / 400)
  --coalesce-window DUR      identical remote reads within this window share one call;
                             refresh jitter is at most half of it (default 30s)
  --provider-timeout DUR     per remote call (default 10s)
  --render-workers N         threads rendering templates, off the main thread (default 2)
  --render-timeout DUR       deadline of one ExternalSecret's render (default 2s)
  --namespace NS             namespace of the Lease and the PushSecret records; it must
                             exist (default: $POD_NAMESPACE, the pod's, the kubeconfig
                             context's, or default)
  --leader-elect BOOL        use a Lease (default true)
  --lease-name NAME          (default esi-controller-<class>)
  --lease-duration DUR --renew-deadline DUR --retry-period DUR   (default 15s / 10s / 2s)
  --namespace-selector K=V[,K=V]  serve only namespaces with these labels (default: all)
  --watch-namespaces NS[,NS]  scoped mode: watch and serve only these namespaces, and no
                             cluster kinds (ClusterSecretStore, ClusterExternalSecret,
                             ClusterPushSecret, ClusterGenerator); Roles in them suffice
  --allow-ambient-identity BOOL  let ClusterSecretStores authenticate with the controller's
                             own identity: its environment (Azure managed and workload
                             identity, GCP ADC, EKS Pod Identity) and its ServiceAccount
                             token (Vault Kubernetes auth, AWS web identity); never
                             SecretStores (default false, docs/controller.md)
  --allow-ambient-identity-namespaces NS[,NS]  lend it to the SecretStores of these
                             namespaces too: whoever writes one there acts as the controller
                             (default: none)
  --allow-private-store-addresses BOOL  let every SecretStore and generator call loopback
                             and private addresses; ClusterSecretStores always may;
                             link-local and metadata addresses never (default false,
                             SECURITY.md "The controller's network boundary")
  --egress-allow LIST        CIDR ranges, addresses and host names (*.suffix) SecretStores
                             and generators may call although private, e.g.
                             10.20.0.0/16,vault.vault.svc (default: none)
  --allow-configmap-targets BOOL  serve ExternalSecrets whose spec.target.manifest is a v1
                             ConfigMap (values then sit unencrypted in a ConfigMap; default
                             false)
  --restart-min-interval DUR  at most one restart per workload per this interval when a
                             Secret it opted in for changes; changes inside it coalesce
                             into one delayed restart (default 60s, docs/controller.md)
  --generator-gc-grace-period DUR  how long a generated lease a refresh replaced keeps
                             working before it is revoked (ESO's flag; default 2m,
                             docs/generators.md)
  --max-generator-states N   GeneratorStates the controller may hold; past it no generator
                             mints a lease (default ${DEFAULT_MAX_GENERATOR_STATES}; each entry
                             holds at most ${STATES_PER_ENTRY}, docs/generators.md)
  --allow-generator-raw-results BOOL  let namespaced VaultDynamicSecrets use resultType Raw
                             and Auth; ClusterGenerators always may (default false)
  --default-read-budget R    read budget of stores without esi.dev/read-budget, shared by
                             their injected pods and the reconciler: "600/m", "10/s",
                             "1000/h" (default none: pods refresh at their own intervals)
  --pod-patch-qps N          pod annotation writes per second for refresh floors and change
                             generations (default 50; docs/fleet.md)
  --change-notifications B   watch the source Secrets (metadata only) of Kubernetes-provider
                             stores annotated esi.dev/change-notifications: "true" and tell
                             exactly the pods mounting a changed one (default false)
  --aws-change-queue-url URL  the operator's SQS queue an EventBridge rule sends Secrets
                             Manager / Parameter Store change events to; the controller
                             long-polls it with its own identity and tells the pods of AWS
                             stores annotated esi.dev/change-notifications: "true" (default
                             none; docs/fleet.md)
  --aws-change-queue-region R  its region (default: from the queue URL, else AWS_REGION)
  --aws-change-queue-credentials-secret NAME  a Secret in --namespace with access-key-id and
                             secret-access-key to read it with (default: the controller's EKS
                             Pod Identity or IRSA)
  --gcp-change-subscription NAME  the operator's Pub/Sub subscription (projects/P/subscriptions/S)
                             of the topic Secret Manager publishes secret events to; pulled
                             with the controller's identity for gcpsm stores annotated
                             esi.dev/change-notifications: "true" (default none)
  --gcp-change-endpoint URL  its API (default https://pubsub.googleapis.com)
  --gcp-change-credentials-secret NAME  a Secret in --namespace with a service-account key
                             in credentials.json (default: Application Default Credentials)
  --listen ADDR --port N     probes, and metrics under --metrics-secure=false (default
                             0.0.0.0:8080, plain HTTP)
  --metrics-secure BOOL      serve /metrics over HTTPS on --metrics-port, only to a caller
                             whose bearer token the apiserver accepts (TokenReview) and who
                             may get the nonResourceURL /metrics (SubjectAccessReview);
                             false: plain HTTP on --port, to anyone (default true,
                             docs/metrics.md)
  --metrics-port N           the HTTPS metrics port (default 8443)
  --metrics-cert-file F --metrics-key-file F   its certificate (e.g. cert-manager's); without
                             them the replicas keep one in the Secret below
  --metrics-secret-name NAME  Secret (in --namespace) holding the metrics CA and certificate
                             (default esi-controller-metrics-tls)
  --metrics-service-name NAME  Service the certificate names (default esi-controller-metrics)
`;

const OPTIONS = {
  kubeconfig: { type: 'string' },
  'controller-class': { type: 'string', default: DEFAULT_CLASS },
  'claim-unclassed': { type: 'string', default: 'auto' },
  workers: { type: 'string', default: '16' },
  'kube-qps': { type: 'string', default: '500' },
  'kube-burst': { type: 'string', default: '1000' },
  'store-qps': { type: 'string', default: '200' },
  'store-burst': { type: 'string', default: '400' },
  'coalesce-window': { type: 'string', default: '30s' },
  'provider-timeout': { type: 'string', default: '10s' },
  'render-workers': { type: 'string', default: '2' },
  'render-timeout': { type: 'string', default: '2s' },
  namespace: { type: 'string' },
  'leader-elect': { type: 'string', default: 'true' },
  'lease-name': { type: 'string' },
  'lease-duration': { type: 'string', default: '15s' },
  'renew-deadline': { type: 'string', default: '10s' },
  'retry-period': { type: 'string', default: '2s' },
  'namespace-selector': { type: 'string' },
  'watch-namespaces': { type: 'string' },
  'allow-ambient-identity': { type: 'string', default: 'false' },
  'allow-ambient-identity-namespaces': { type: 'string', default: '' },
  'allow-private-store-addresses': { type: 'string', default: 'false' },
  'egress-allow': { type: 'string', default: '' },
  'allow-configmap-targets': { type: 'string', default: 'false' },
  'restart-min-interval': { type: 'string', default: '60s' },
  'default-read-budget': { type: 'string', default: '' },
  'pod-patch-qps': { type: 'string', default: '50' },
  'change-notifications': { type: 'string', default: 'false' },
  'aws-change-queue-url': { type: 'string', default: '' },
  'aws-change-queue-region': { type: 'string', default: '' },
  'aws-change-queue-credentials-secret': { type: 'string', default: '' },
  'gcp-change-subscription': { type: 'string', default: '' },
  'gcp-change-endpoint': { type: 'string', default: '' },
  'gcp-change-credentials-secret': { type: 'string', default: '' },
  'generator-gc-grace-period': { type: 'string', default: '2m' },
  'max-generator-states': { type: 'string', default: String(DEFAULT_MAX_GENERATOR_STATES) },
  'allow-generator-raw-results': { type: 'string', default: 'false' },
  listen: { type: 'string', default: '0.0.0.0' },
  port: { type: 'string', default: '8080' },
  'metrics-secure': { type: 'string', default: 'true' },
  'metrics-port': { type: 'string', default: '8443' },
  'metrics-cert-file': { type: 'string' },
  'metrics-key-file': { type: 'string' },
  'metrics-secret-name': { type: 'string', default: 'esi-controller-metrics-tls' },
  'metrics-service-name': { type: 'string', default: 'esi-controller-metrics' },
  help: { type: 'boolean', short: 'h' },
} as const;

function selector(raw: string | undefined): Record<string, string> | undefined {
  if (raw === undefined) return undefined;
  const out: Record<string, string> = {};
  for (const pair of raw.split(',').map((p) => p.trim()).filter(Boolean)) {
    const m = /^([A-Za-z0-9./_-]+)=([A-Za-z0-9._-]*)$/.exec(pair);
    if (!m) throw new Error(`--namespace-selector "${pair}": expected key=value`);
    out[m[1]!] = m[2]!;
  }
  return out;
}

/** --watch-namespaces: distinct namespace names, or undefined (every namespace). */
/** A comma-separated list of namespace names ('' = none). */
function namespaceList(flag: string, raw: string): string[] {
  const names = raw.split(',').map((n) => n.trim()).filter(Boolean);
  for (const n of names) if (!isDnsLabel(n)) throw new Error(`--${flag} "${n}": not a namespace name`);
  return names;
}

function watchNamespaces(raw: string | undefined, namespaceSelector: Record<string, string> | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const names = [...new Set(raw.split(',').map((n) => n.trim()).filter(Boolean))];
  if (names.length === 0) throw new Error('--watch-namespaces: expected at least one namespace');
  for (const n of names) if (!isDnsLabel(n)) throw new Error(`--watch-namespaces "${n}": not a namespace name`);
  // The selector reads Namespace labels, which only a cluster-wide watch sees.
  if (namespaceSelector) throw new Error('--watch-namespaces and --namespace-selector cannot be combined: list the namespaces to serve');
  return names;
}

function claimFlag(raw: string): 'true' | 'false' | 'auto' {
  if (raw === 'true' || raw === 'false' || raw === 'auto') return raw;
  throw new Error(`--claim-unclassed must be true, false or auto, got "${raw}"`);
}

type Values = ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS; strict: true }>>['values'];

function metricsFlags(v: Values) {
  if (!v['metrics-cert-file'] !== !v['metrics-key-file']) throw new Error('--metrics-cert-file and --metrics-key-file go together');
  for (const f of ['metrics-secret-name', 'metrics-service-name'] as const) {
    if (!isDnsLabel(v[f]!)) throw new Error(`--${f} "${v[f]}" must be a DNS label`);
  }
  return {
    secure: bool('metrics-secure', v['metrics-secure']!), port: port('metrics-port', v['metrics-port']!),
    certFile: v['metrics-cert-file'], keyFile: v['metrics-key-file'], secretName: v['metrics-secret-name']!, serviceName: v['metrics-service-name']!,
  };
}

/** Every flag, checked before anything starts: a bad value is a usage error and an exit, never
 *  a half-started process (a probe server listening, a Lease never taken). */
function flags(v: Values) {
  const cls = v['controller-class']!;
  if (!isDnsSubdomain(cls) || cls.length > 63) throw new Error(`--controller-class "${cls}" must be a DNS label such as "esi" or "team-a"`);
  return {
    cls,
    claimUnclassed: claimFlag(v['claim-unclassed']!),
    kubeQps: positive('kube-qps', v['kube-qps']!), kubeBurst: positive('kube-burst', v['kube-burst']!),
    namespaceSelector: selector(v['namespace-selector']),
    watchNamespaces: watchNamespaces(v['watch-namespaces'], selector(v['namespace-selector'])),
    workers: positive('workers', v.workers!),
    windowMs: parseGoDuration(v['coalesce-window']!, '--coalesce-window'),
    storeQps: positive('store-qps', v['store-qps']!), storeBurst: positive('store-burst', v['store-burst']!),
    providerTimeoutMs: parseGoDuration(v['provider-timeout']!, '--provider-timeout'),
    elect: bool('leader-elect', v['leader-elect']!),
    leaseDurationMs: parseGoDuration(v['lease-duration']!, '--lease-duration'),
    renewDeadlineMs: parseGoDuration(v['renew-deadline']!, '--renew-deadline'),
    retryPeriodMs: parseGoDuration(v['retry-period']!, '--retry-period'),
    port: port('port', v.port!),
    metrics: metricsFlags(v),
    renderWorkers: positive('render-workers', v['render-workers']!),
    allowAmbientIdentity: bool('allow-ambient-identity', v['allow-ambient-identity']!),
    ambientIdentityNamespaces: namespaceList('allow-ambient-identity-namespaces', v['allow-ambient-identity-namespaces']!),
    allowPrivateStoreAddresses: bool('allow-private-store-addresses', v['allow-private-store-addresses']!),
    egressAllow: parseAllowList(v['egress-allow']!.split(',')),
    allowConfigMapTargets: bool('allow-configmap-targets', v['allow-configmap-targets']!),
    restartMinIntervalMs: positive('restart-min-interval', String(parseGoDuration(v['restart-min-interval']!, '--restart-min-interval'))),
    renderTimeoutMs: positive('render-timeout', String(parseGoDuration(v['render-timeout']!, '--render-timeout'))),
    generatorGcGraceMs: parseGoDuration(v['generator-gc-grace-period']!, '--generator-gc-grace-period'),
    maxGeneratorStates: positive('max-generator-states', v['max-generator-states']!),
    allowGeneratorRawResults: bool('allow-generator-raw-results', v['allow-generator-raw-results']!),
    fleet: fleetFlags(v),
  };
}

/** The authenticated HTTPS /metrics: its certificate, its reviews (a client of their own,
 *  outside the write limiter: a scrape must not wait behind reconciles), its server. */
function secureMetrics(host: string, m: ReturnType<typeof metricsFlags>, o: { kc: KubeConfig; namespace: string; logger: Logger; registry: Exposition }) {
  const reviews = new KubeRest(o.kc, { timeoutMs: 10_000, maxSockets: 4 });
  const started = (async () => {
    const tls = await metricsTls(m, o);
    const server = await startSecureMetricsServer(host, m.port, { registry: o.registry, tls, access: new MetricsAccessReview(reviews), logger: o.logger });
    o.logger.info({ port: m.port }, 'serving authenticated metrics over HTTPS');
    return { tls, server };
  })();
  started.catch((err: unknown) => o.logger.error({ err: (err as Error).message, port: m.port }, 'authenticated metrics could not start; the controller runs without /metrics'));
  return {
    stop: async () => {
      const s = await started.catch(() => undefined);
      s?.server.close();
      await s?.tls.stop();
      reviews.close();
    },
  };
}

export async function main(argv: string[]): Promise<number> {
  const { values: v } = parseArgs({ args: argv, options: OPTIONS, strict: true });
  if (v.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const f = checkFlags(() => ({ ...flags(v), log: logSettings() }));
  const { cls } = f;
  const kc = loadKubeConfig(v.kubeconfig);
  const namespace = ownNamespace(v.namespace, kc);
  const logger = createLogger('controller');
  const metrics = controllerMetrics();
  // Writes are counted and rate limited in one place: every write goes through this client.
  const writes = new TokenBucket(f.kubeQps, f.kubeBurst);
  const rest = new KubeRest(kc, {
    beforeWrite: () => writes.take(),
    // The reads a tenant's objects drive (generators, credential Secrets) share the bucket.
    beforeRead: () => writes.take(),
    onRead: (path) => metrics.apiReads.inc({ resource: resourceOf(path) }),
    onWrite: (method, path) => metrics.apiWrites.inc({ verb: method, resource: resourceOf(path) }),
  });
  // Checked before anything starts (render threads, probe server), failing fast and naming
  // the flag: a missing namespace would leave a process that logs a 404 on every Lease
  // renewal and never reconciles.
  if (!(await rest.exists(resourcePath(NAMESPACES, { name: namespace })))) {
    rest.close();
    throw new Error(`namespace "${namespace}" does not exist: the controller keeps its Lease and PushSecret records there; create it or pass --namespace`);
  }
  const claim = await decideClaimUnclassed(f.claimUnclassed, rest);
  const classes = claim.claim ? [cls, ''] : [cls];
  logger.info({ claimUnclassed: claim.claim, why: claim.why }, claim.claim ? 'serving stores without spec.controller too' : 'not serving stores without spec.controller');
  const controller = new Controller({
    kc, rest, logger, metrics, classes, namespace, namespaceSelector: f.namespaceSelector, watchNamespaces: f.watchNamespaces,
    workers: f.workers, windowMs: f.windowMs, storeQps: f.storeQps, storeBurst: f.storeBurst, providerTimeoutMs: f.providerTimeoutMs,
    renderWorkers: f.renderWorkers, renderTimeoutMs: f.renderTimeoutMs, allowAmbientIdentity: f.allowAmbientIdentity,
    ambientIdentityNamespaces: f.ambientIdentityNamespaces,
    // The pod's own ServiceAccount (the chart passes spec.serviceAccountName), in its namespace.
    ...(process.env.POD_SERVICE_ACCOUNT ? { ownServiceAccount: { namespace, name: process.env.POD_SERVICE_ACCOUNT } } : {}),
    allowPrivateStoreAddresses: f.allowPrivateStoreAddresses, egressAllow: f.egressAllow, restartMinIntervalMs: f.restartMinIntervalMs,
    allowConfigMapTargets: f.allowConfigMapTargets, generatorGcGraceMs: f.generatorGcGraceMs,
    maxGeneratorStates: f.maxGeneratorStates, allowGeneratorRawResults: f.allowGeneratorRawResults, fleet: f.fleet,
  });
  const elect = f.elect;
  let started = false;
  const server = await startProbeServer(v.listen!, f.port, { registry: metrics.exposition, metrics: !f.metrics.secure, ready: () => !elect || !started || controller.synced() });
  // Started beside the reconciler, not before it: a certificate that cannot be had yet (the
  // Secret not writable) leaves metrics unserved and logged, never Secrets unreconciled.
  const metricsServer = f.metrics.secure ? secureMetrics(v.listen!, f.metrics, { kc, namespace, logger, registry: metrics.exposition }) : undefined;
  const run = async () => {
    started = true;
    metrics.leader.set(1);
    await controller.start();
    logger.info({ classes, synced: controller.synced() }, 'reconciling');
  };
  const identity = `${hostname()}_${process.pid}`;
  const leader = elect
    ? new LeaderElector({
        rest, namespace, identity, logger, name: v['lease-name'] ?? `esi-controller-${cls}`,
        leaseDurationMs: f.leaseDurationMs, renewDeadlineMs: f.renewDeadlineMs, retryPeriodMs: f.retryPeriodMs,
        onStarted: () => void run().catch((err: unknown) => {
          logger.error({ err: (err as Error).message }, 'controller failed to start');
          process.exit(1);
        }),
        // Another process may hold the Lease now: stop at once, the Deployment restarts us.
        onLost: () => {
          logger.flush();
          process.exit(1);
        },
      })
    : undefined;
  logger.info({ classes, identity, leaderElection: elect, watchNamespaces: f.watchNamespaces ?? 'all', allowAmbientIdentity: bool('allow-ambient-identity', v['allow-ambient-identity']!) }, 'esi controller starting');
  if (leader) leader.start();
  else await run();
  return new Promise((resolve) => {
    const shutdown = async (signal: string) => {
      logger.info({ signal }, 'shutting down');
      metrics.leader.set(0);
      await controller.stop();
      await leader?.stop();
      server.close();
      await metricsServer?.stop();
      rest.close();
      logger.flush();
      resolve(0);
    };
    process.once('SIGTERM', () => void shutdown('SIGTERM'));
    process.once('SIGINT', () => void shutdown('SIGINT'));
  });
}
