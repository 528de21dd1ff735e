// The agent's Prometheus metrics, on a private registry (never the global one, so tests
// and embedders can run several agents in one process). Labels carry no values: only
// results, stages and store ids.
//
// prom-client (and its default process metrics) costs ~50 ms of start and ~10 MiB of
// memory, and nothing needs it before the first scrape. So the metrics the pipeline
// updates are thin recorders: until `registry()` is first called they queue their
// updates (a handful per refresh cycle: counts, timestamps, durations as measured at the
// time); `registry()` then imports prom-client, creates the real metrics, replays the
// queue and from then on forwards every update directly. Names, types, help texts,
// labels and values are what they would have been with prom-client loaded at start.
import type * as PromClientModule from 'prom-client';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';

type PromClient = typeof PromClientModule;
type Labels<L extends string> = Partial<Record<L, string | number>>;

/** Queue of updates for a metric not created yet; forwards once it exists. */
class Deferred<M> {
  private real: M | undefined;
  private queue: ((m: M) => void)[] = [];
  apply(op: (m: M) => void): void {
    if (this.real) op(this.real);
    else this.queue.push(op);
  }
  bind(real: M): void {
    for (const op of this.queue) op(real);
    this.queue = [];
    this.real = real;
  }
}

export class LazyCounter<L extends string = never> {
  readonly d = new Deferred<Counter<L>>();
  inc(labels?: Labels<L>, value?: number): void {
    this.d.apply((c) => (labels === undefined ? c.inc(value) : c.inc(labels, value ?? 1)));
  }
}

export class LazyGauge {
  readonly d = new Deferred<Gauge>();
  /** The time is taken now, not when the update is replayed. */
  setToCurrentTime(): void {
    const seconds = Date.now() / 1000;
    this.d.apply((g) => g.set(seconds));
  }
}

export class LazyHistogram {
  readonly d = new Deferred<Histogram>();
  observe(seconds: number): void {
    this.d.apply((h) => h.observe(seconds));
  }
  /** Like prom-client's: the returned function observes the elapsed seconds. */
  startTimer(): () => void {
    const start = process.hrtime.bigint();
    return () => this.observe(Number(process.hrtime.bigint() - start) / 1e9);
  }
}

export class AgentMetrics {
  readonly refreshes = new LazyCounter<'result'>();
  readonly failures = new LazyCounter<'stage'>();
  readonly lastSuccess = new LazyGauge();
  readonly renderDuration = new LazyHistogram();
  readonly swaps = new LazyCounter();
  readonly providerCalls = new LazyCounter<'store'>();
  readonly notifications = new LazyCounter<'result'>();
  private loading: Promise<Registry> | undefined;

  constructor(private readonly opts: { defaultMetrics?: boolean } = {}) {
    this.refreshes.inc({ result: 'success' }, 0);
    this.refreshes.inc({ result: 'failure' }, 0);
  }

  /** The prom-client registry, created (and prom-client loaded) on the first call. */
  registry(): Promise<Registry> {
    return (this.loading ??= import('prom-client').then((pc) => this.create(pc)));
  }

  private create(pc: PromClient): Registry {
    const registers = [new pc.Registry()];
    const registry = registers[0]!;
    this.refreshes.d.bind(
      new pc.Counter({ name: 'esi_agent_refresh_total', help: 'Refresh cycles (fetch, render, write), by result.', labelNames: ['result'] as const, registers }),
    );
    this.failures.d.bind(
      new pc.Counter({
        name: 'esi_agent_refresh_failures_total',
        help: 'Failed refresh cycles, by the stage that failed (fetch, render, write).',
        labelNames: ['stage'] as const,
        registers,
      }),
    );
    this.lastSuccess.d.bind(new pc.Gauge({ name: 'esi_agent_last_success_timestamp_seconds', help: 'Unix time of the last successful refresh cycle.', registers }));
    this.renderDuration.d.bind(
      new pc.Histogram({
        name: 'esi_agent_render_duration_seconds',
        help: 'Duration of a whole refresh cycle (fetch, render, write).',
        buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers,
      }),
    );
    this.swaps.d.bind(new pc.Counter({ name: 'esi_agent_file_swaps_total', help: 'Generations of files published (content changed).', registers }));
    this.providerCalls.d.bind(
      new pc.Counter({
        name: 'esi_agent_provider_calls_total',
        help: 'Remote reads issued to stores (after coalescing), by store.',
        labelNames: ['store'] as const,
        registers,
      }),
    );
    this.notifications.d.bind(
      new pc.Counter({
        name: 'esi_agent_notifications_total',
        help: 'Application change notifications, by result (after retries).',
        labelNames: ['result'] as const,
        registers,
      }),
    );
    // Process metrics (RSS, CPU, event loop) are what sizing the sidecar needs. CPU and
    // start time are process-wide; the event-loop and GC series start with the first scrape.
    if (this.opts.defaultMetrics ?? true) pc.collectDefaultMetrics({ register: registry, prefix: 'esi_agent_' });
    return registry;
  }
}
