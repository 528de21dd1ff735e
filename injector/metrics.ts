// The agent's Prometheus metrics, on a private registry (never the global one, so tests
// and embedders can run several agents in one process). Labels carry no values: only
// results, stages and store ids.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

export class AgentMetrics {
  readonly registry = new Registry();
  readonly refreshes = new Counter({
    name: 'esi_agent_refresh_total',
    help: 'Refresh cycles (fetch, render, write), by result.',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly failures = new Counter({
    name: 'esi_agent_refresh_failures_total',
    help: 'Failed refresh cycles, by the stage that failed (fetch, render, write).',
    labelNames: ['stage'] as const,
    registers: [this.registry],
  });
  readonly lastSuccess = new Gauge({
    name: 'esi_agent_last_success_timestamp_seconds',
    help: 'Unix time of the last successful refresh cycle.',
    registers: [this.registry],
  });
  readonly renderDuration = new Histogram({
    name: 'esi_agent_render_duration_seconds',
    help: 'Duration of a whole refresh cycle (fetch, render, write).',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  readonly swaps = new Counter({
    name: 'esi_agent_file_swaps_total',
    help: 'Generations of files published (content changed).',
    registers: [this.registry],
  });
  readonly providerCalls = new Counter({
    name: 'esi_agent_provider_calls_total',
    help: 'Remote reads issued to stores (after coalescing), by store.',
    labelNames: ['store'] as const,
    registers: [this.registry],
  });
  readonly notifications = new Counter({
    name: 'esi_agent_notifications_total',
    help: 'Application change notifications, by result (after retries).',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    // Process metrics (RSS, CPU, event loop) are what sizing the sidecar needs.
    if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry, prefix: 'esi_agent_' });
    this.refreshes.inc({ result: 'success' }, 0);
    this.refreshes.inc({ result: 'failure' }, 0);
  }
}
