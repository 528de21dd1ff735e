// The admission HTTPS server (fastify): /mutate, /healthz, /readyz, /metrics (authenticated
// unless the operator asked otherwise: docs/metrics.md, "Authentication").
// The certificate comes from a TlsSource and is hot-swapped on rotation.
import type { V1Pod } from '@kubernetes/client-node';
import Fastify from 'fastify';
import type { Server } from 'node:https';
import type { Logger } from 'pino';
import type { TlsSource } from '../certs/index.js';
import { admit, type AdmitContext, type AdmitResult } from './admission.js';
import type { ClusterVersion } from '../src/pod-contract/env.js';
import type { WebhookMetrics } from './metrics.js';
import type { ObjectLookup, ResolveOptions } from './resolve.js';
import type { AgentSettings } from './mutate.js';
import type { MetricsAccessReview } from '../src/kube/access-review.js';

export interface AdmissionReview {
  apiVersion: string;
  kind: string;
  request?: {
    uid: string;
    kind?: { group: string; version: string; kind: string };
    operation?: string;
    namespace?: string;
    dryRun?: boolean;
    object?: V1Pod;
  };
}

export interface ServerOptions {
  tls: TlsSource;
  lookup: ObjectLookup & { synced(): boolean };
  resolve: ResolveOptions;
  agent: AgentSettings;
  metrics: WebhookMetrics;
  logger: Logger;
  /** Who may read /metrics (src/kube/access-review.ts); undefined: anyone who reaches the
   *  port (esi webhook --metrics-secure=false). */
  metricsAccess?: Pick<MetricsAccessReview, 'check'>;
  /** The apiserver's version, read at start (undefined if it could not be read). */
  clusterVersion?: ClusterVersion;
}

type Response = Record<string, unknown> & { uid: string; allowed: boolean };

function b64(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64');
}

type Request = NonNullable<AdmissionReview['request']>;

// eslint-disable-next-line max-params -- one admission's facts; kept flat to read like the review it answers.
function respond(req: Request, pod: V1Pod, namespace: string, out: AdmitResult, opts: ServerOptions): { response: Response; result: string } {
  const log = { namespace, pod: pod.metadata?.name ?? pod.metadata?.generateName, dryRun: !!req.dryRun };
  switch (out.kind) {
    case 'skipped':
    case 'unchanged':
      return { response: { uid: req.uid, allowed: true }, result: out.kind };
    case 'denied':
      opts.metrics.denials.inc({ reason: out.reason });
      opts.logger.info({ ...log, reason: out.reason, message: out.message }, 'pod refused');
      return { response: { uid: req.uid, allowed: false, status: { code: 403, reason: 'Forbidden', message: out.message } }, result: 'denied' };
    case 'moved':
      opts.logger.info(log, 'agent moved after a native sidecar added by a later webhook');
      return { response: { uid: req.uid, allowed: true, patchType: 'JSONPatch', patch: b64(out.patch) }, result: 'moved' };
    case 'mutated': {
      const mode = out.pod.metadata?.annotations?.['esi.dev/injected'] ?? 'unknown';
      if (!req.dryRun) opts.metrics.injections.inc({ mode });
      opts.logger.info({ ...log, mode, secrets: pod.metadata?.annotations?.['esi.dev/secrets'] }, 'pod injected');
      const response: Response = { uid: req.uid, allowed: true, patchType: 'JSONPatch', patch: b64(out.patch) };
      if (out.warnings.length) response.warnings = out.warnings;
      return { response, result: 'injected' };
    }
  }
}

/** Decides one AdmissionReview; never throws (an exception would become a 500). */
export function review(body: AdmissionReview, opts: ServerOptions): { response: Response; result: string } {
  const req = body.request!;
  const pod = req.object;
  if (req.kind?.kind !== 'Pod' || req.operation !== 'CREATE' || !pod) {
    return { response: { uid: req.uid, allowed: true }, result: 'ignored' };
  }
  if (!opts.lookup.synced()) {
    const message = 'ESI webhook caches are still syncing; retry in a few seconds';
    return { response: { uid: req.uid, allowed: false, status: { code: 503, message } }, result: 'unavailable' };
  }
  const namespace = req.namespace ?? pod.metadata?.namespace ?? 'default';
  const ctx: AdmitContext = { namespace, lookup: opts.lookup, resolve: opts.resolve, agent: opts.agent, ...(opts.clusterVersion ? { clusterVersion: opts.clusterVersion } : {}) };
  return respond(req, pod, namespace, admit(pod, ctx), opts);
}

function badReview(body: unknown): string | undefined {
  const b = body as AdmissionReview | undefined;
  if (!b || typeof b !== 'object') return 'body must be a JSON AdmissionReview';
  if (b.apiVersion !== 'admission.k8s.io/v1' || b.kind !== 'AdmissionReview') return 'expected apiVersion admission.k8s.io/v1, kind AdmissionReview';
  if (!b.request?.uid) return 'request.uid is missing';
  return undefined;
}

export async function buildServer(opts: ServerOptions) {
  const material = opts.tls.current();
  const app = Fastify({
    https: { cert: material.certPem, key: material.keyPem },
    loggerInstance: opts.logger,
    disableRequestLogging: true,
    bodyLimit: 4 * 1024 * 1024,
    return503OnClosing: true,
  });
  opts.tls.onChange((m) => {
    (app.server as Server).setSecureContext({ cert: m.certPem, key: m.keyPem });
    opts.logger.info('serving certificate reloaded');
  });
  app.post('/mutate', async (request, reply) => {
    const started = process.hrtime.bigint();
    const problem = badReview(request.body);
    if (problem) return reply.code(400).send({ error: problem });
    let answer: ReturnType<typeof review>;
    try {
      answer = review(request.body as AdmissionReview, opts);
    } catch (err) {
      // Unexpected: refuse with a clear message rather than a bare 500.
      opts.logger.error({ err }, 'admission failed');
      const uid = (request.body as AdmissionReview).request!.uid;
      answer = { response: { uid, allowed: false, status: { code: 500, message: `ESI webhook internal error: ${(err as Error).message}` } }, result: 'error' };
    }
    opts.metrics.latency.observe({ result: answer.result }, Number(process.hrtime.bigint() - started) / 1e9);
    return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: answer.response };
  });
  app.get('/healthz', async () => ({ ok: true }));
  app.get('/readyz', async (_req, reply) => {
    const ready = opts.tls.ready() && opts.lookup.synced();
    opts.metrics.cacheSynced.set(opts.lookup.synced() ? 1 : 0);
    return reply.code(ready ? 200 : 503).send({ ready, caches: opts.lookup.synced(), certificate: opts.tls.ready() });
  });
  app.get('/metrics', async (req, reply) => {
    if (opts.metricsAccess) {
      const v = await opts.metricsAccess.check(req.headers.authorization);
      if (v.status !== 200) {
        opts.logger.debug({ status: v.status, user: v.user }, 'metrics request refused');
        return reply.code(v.status).type('text/plain').send(`${v.message}\n`);
      }
    }
    opts.metrics.cacheSynced.set(opts.lookup.synced() ? 1 : 0);
    return reply.type(opts.metrics.registry.contentType).send(await opts.metrics.text());
  });
  return app;
}
