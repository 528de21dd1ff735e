// Prometheus metrics of the reconciler, in their own registry (no global state). Labels
// carry kinds, reasons, store ids and object names only: never a key's value.
// Process metrics keep prom-client's standard names (process_*, nodejs_*) so stock Node.js
// dashboards read them; the per-object series keep ESO's names and labels so ESO's alerts
// and dashboards read them (docs/metrics.md).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { ObjectSeries } from './object-series.js';

export function controllerMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const r = [registry];
  // ESO's per-object series: one small record per ExternalSecret, text at scrape time.
  const objects = new ObjectSeries({
    calls: { name: 'externalsecret_sync_calls_total', type: 'counter', help: 'Total number of the External Secret sync calls (ESO\'s name).' },
    errors: { name: 'externalsecret_sync_calls_error', type: 'counter', help: 'Total number of the External Secret sync errors (ESO\'s name).' },
    condition: {
      name: 'externalsecret_status_condition', type: 'gauge',
      help: 'The status condition of a specific External Secret (ESO\'s name: 1 for the status it has, 0 for the other).',
    },
  });
  return {
    registry,
    objects,
    /** What /metrics serves: prom-client's families, then the per-object ones. */
    exposition: { contentType: registry.contentType, metrics: async () => `${await registry.metrics()}\n${objects.text()}` },
    syncs: new Counter({ name: 'esi_controller_syncs_total', help: 'ExternalSecret reconciles, by result and reason.', labelNames: ['result', 'reason'] as const, registers: r }),
    syncDuration: new Histogram({
      name: 'esi_controller_sync_duration_seconds', help: 'Time to reconcile one ExternalSecret.',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registers: r,
    }),
    queueDepth: new Gauge({ name: 'esi_controller_queue_depth', help: 'Keys waiting in the work queue.', registers: r }),
    queueLatency: new Histogram({
      name: 'esi_controller_queue_latency_seconds', help: 'Time a key waited in the queue before a worker took it.',
      buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60], registers: r,
    }),
    scheduled: new Gauge({ name: 'esi_controller_scheduled_refreshes', help: 'Refreshes and retries waiting in the timer heap.', registers: r }),
    providerCalls: new Counter({ name: 'esi_controller_provider_calls_total', help: 'Remote reads issued to stores (after coalescing), by store.', labelNames: ['store'] as const, registers: r }),
    apiWrites: new Counter({ name: 'esi_controller_apiserver_writes_total', help: 'Writes to the apiserver, by verb and resource.', labelNames: ['verb', 'resource'] as const, registers: r }),
    apiReads: new Counter({ name: 'esi_controller_apiserver_reads_total', help: 'Reads (GET) sent to the apiserver outside the watches, by resource.', labelNames: ['resource'] as const, registers: r }),
    generatorStates: new Gauge({ name: 'esi_controller_generator_states', help: 'GeneratorStates this controller holds (in the watch cache), those being deleted included.', registers: r }),
    generatorStateRefusals: new Counter({
      name: 'esi_controller_generator_state_refusals_total', help: 'Generator runs refused because a GeneratorState bound was reached (per entry, per controller) or the snapshot was too large.',
      labelNames: ['limit'] as const, registers: r,
    }),
    eventsDropped: new Counter({ name: 'esi_controller_events_dropped_total', help: 'Events not written because the bounded Event queue was full.', registers: r }),
    leader: new Gauge({ name: 'esi_controller_leader', help: '1 while this process holds the Lease of its class.', registers: r }),
    pushes: new Counter({ name: 'esi_controller_push_entries_total', help: 'PushSecret remote entries handled, by result (written, exists, error; equal values count in esi_controller_push_skipped_equal_total).', labelNames: ['result'] as const, registers: r }),
    pushSkippedEqual: new Counter({ name: 'esi_controller_push_skipped_equal_total', help: 'PushSecret remote writes skipped because the store already held the value.', registers: r }),
    pushDeletes: new Counter({ name: 'esi_controller_push_deletes_total', help: 'PushSecret remote entries deleted, by result.', labelNames: ['result'] as const, registers: r }),
    pushEntriesLeft: new Counter({
      name: 'esi_controller_push_entries_left_total', help: 'PushSecret remote entries left in a store, not deleted and no longer tracked (the Event and log name them), by store and reason (StoreGone, NotAdmitted, NamespaceDeleted).',
      labelNames: ['store', 'reason'] as const, registers: r,
    }),
    renderKilled: new Counter({ name: 'esi_controller_render_killed_total', help: 'Renders stopped at the render pool\'s deadline (their thread terminated and replaced).', registers: r }),
    renderBusy: new Counter({ name: 'esi_controller_render_busy_total', help: 'Renders refused by the render pool (queue full, or a namespace held to one render) and retried later.', registers: r }),
    clients: new Gauge({ name: 'esi_controller_provider_clients', help: 'Cached provider clients.', registers: r }),
  };
}

export type ControllerMetrics = ReturnType<typeof controllerMetrics>;

/** What one ExternalSecret reconcile says about its object, in ESO's per-object series:
 *  a sync call, an error, the Ready condition as a 1/0 pair (as ESO sets it), or, for an
 *  object that is gone or another controller's, no series at all (a tenant creating and
 *  deleting objects must not grow /metrics without bound). */
export function recordExternalSecret(m: ControllerMetrics, labels: { namespace: string; name: string }, ready: boolean | 'gone' | undefined, error: boolean): void {
  m.objects.record(labels.namespace, labels.name, ready, error);
}

/** `secrets`, `externalsecrets`, `events`, … from an API path, for the writes metric. */
export function resourceOf(path: string): string {
  const parts = path.split('/').filter(Boolean);
  const i = parts.indexOf('namespaces');
  const rest = i >= 0 ? parts.slice(i + 2) : parts.slice(parts[0] === 'api' ? 2 : 3);
  return rest.length > 2 ? `${rest[0]}/${rest[2]}` : rest[0] ?? 'unknown';
}
