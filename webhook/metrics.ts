// Prometheus metrics of the webhook, in their own registry (no global state).
import cluster from 'node:cluster';
import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { workersMetricsText } from './worker-metrics.js';

/** `synced`: whether the caches have listed, read at every collection (so each worker of
 *  `--workers` reports its own state to the primary's sum, not the last probe it answered). */
export function webhookMetrics(synced?: () => boolean) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  if (cluster.isWorker) {
    // A worker of `esi webhook --workers N` answers the primary's requests with this registry.
    AggregatorRegistry.setRegistries([registry]);
    new AggregatorRegistry();
  }
  return {
    registry,
    /** The text a scrape gets: under --workers, every worker's metrics summed by the primary. */
    text: (): Promise<string> => (cluster.isWorker ? workersMetricsText() : registry.metrics()),
    latency: new Histogram({
      name: 'esi_admission_duration_seconds',
      help: 'Time to answer an AdmissionReview, by result.',
      labelNames: ['result'] as const,
      // Fine below 10 ms: the budget is p99 < 5 ms, and a 2→5 ms bucket cannot show it.
      buckets: [0.00025, 0.0005, 0.001, 0.002, 0.003, 0.004, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.5],
      registers: [registry],
    }),
    injections: new Counter({
      name: 'esi_injections_total', help: 'Pods injected, by mode.', labelNames: ['mode'] as const, registers: [registry],
    }),
    denials: new Counter({
      name: 'esi_denials_total', help: 'Pods refused, by reason.', labelNames: ['reason'] as const, registers: [registry],
    }),
    cacheSynced: new Gauge({
      name: 'esi_cache_synced', help: '1 when every watch-backed cache has listed.', registers: [registry],
      aggregator: 'min', // under --workers: 1 only when every worker's caches have listed
      ...(synced ? { collect(this: Gauge) { this.set(synced() ? 1 : 0); } } : {}),
    }),
  };
}

export type WebhookMetrics = ReturnType<typeof webhookMetrics>;
