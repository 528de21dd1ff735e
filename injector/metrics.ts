// The agent's Prometheus metrics, on a private registry (never the global one, so tests
// and embedders can run several agents in one process). Labels carry no values: only
// results, stages and store ids.
//
// prom-client (and its default process metrics) costs ~50 ms of start and ~10 MiB of
// memory, and nothing needs it before the first scrape. So the metrics the pipeline
// updates are thin recorders: until `registry()` is first called they aggregate their
// updates (counts, the last timestamp, per-bucket durations); `registry()` then imports
// prom-client, creates the real metrics, carries the aggregates over and from then on
// forwards every update directly. Names, types, help texts,
// labels and values are what they would have been with prom-client loaded at start.
import type * as PromClientModule from 'prom-client';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';

type PromClient = typeof PromClientModule;
type Labels<L extends string> = Partial<Record<L, string | number>>;

// Before the registry exists, updates are aggregated (not queued), so an agent nobody
// scrapes holds a fixed amount of state however long it runs.

class LazyCounter<L extends string = never> {
  private real: Counter<L> | undefined;
  private readonly pending = new Map<string, { labels: Labels<L> | undefined; value: number }>();
  inc(labels?: Labels<L>, value = 1): void {
    if (this.real) {
      if (labels === undefined) this.real.inc(value);
      else this.real.inc(labels, value);
      return;
    }
    const key = labels === undefined ? '' : JSON.stringify(Object.entries(labels).sort());
    const entry = this.pending.get(key);
    if (entry) entry.value += value;
    else this.pending.set(key, { labels, value });
  }
  bind(real: Counter<L>): void {
    this.real = real;
    for (const { labels, value } of this.pending.values()) this.inc(labels, value);
    this.pending.clear();
  }
}

class LazyGauge {
  private real: Gauge | undefined;
  private pending: number | undefined;
  /** The time is taken now, not when the registry is created. */
  setToCurrentTime(): void {
    const seconds = Date.now() / 1000;
    if (this.real) this.real.set(seconds);
    else this.pending = seconds;
  }
  set(value: number): void {
    if (this.real) this.real.set(value);
    else this.pending = value;
  }
  bind(real: Gauge): void {
    this.real = real;
    if (this.pending !== undefined) real.set(this.pending);
  }
}

class LazyHistogram {
  private real: Histogram | undefined;
  /** Per bucket (and +Inf): count, sum, min and max of the observations in it. */
  private readonly pending: { n: number; sum: number; min: number; max: number }[];
  constructor(readonly buckets: readonly number[]) {
    this.pending = Array.from({ length: buckets.length + 1 }, () => ({ n: 0, sum: 0, min: Infinity, max: -Infinity }));
  }
  observe(seconds: number): void {
    if (this.real) return this.real.observe(seconds);
    let i = this.buckets.findIndex((le) => seconds <= le);
    if (i < 0) i = this.buckets.length;
    const b = this.pending[i]!;
    b.n++;
    b.sum += seconds;
    b.min = Math.min(b.min, seconds);
    b.max = Math.max(b.max, seconds);
  }
  /** Like prom-client's: the returned function observes the elapsed seconds. */
  startTimer(): () => void {
    const start = process.hrtime.bigint();
    return () => this.observe(Number(process.hrtime.bigint() - start) / 1e9);
  }
  bind(real: Histogram): void {
    this.real = real;
    // n observations of their mean (clamped into the bucket's observed range) give the
    // same bucket counts, count and sum as the original observations.
    for (const b of this.pending) {
      if (b.n === 0) continue;
      const mean = Math.min(b.max, Math.max(b.min, b.sum / b.n));
      for (let k = 0; k < b.n; k++) real.observe(mean);
    }
  }
}

const RENDER_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class AgentMetrics {
  readonly refreshes = new LazyCounter<'result'>();
  readonly failures = new LazyCounter<'stage'>();
  readonly lastSuccess = new LazyGauge();
  readonly renderDuration = new LazyHistogram(RENDER_BUCKETS);
  readonly swaps = new LazyCounter();
  readonly providerCalls = new LazyCounter<'store'>();
  readonly notifications = new LazyCounter<'result'>();
  /** The refresh floor the store's read budget set (0: none), and the change generations the
   *  controller sent (docs/fleet.md). */
  readonly refreshFloor = new LazyGauge();
  readonly changeNotices = new LazyCounter();
  /** Lease renewals of dynamic secrets (injector/leases.ts), by secret name and result. */
  readonly leaseRenewals = new LazyCounter<'secret' | 'result'>();
  /** Go templates rendered by the WebAssembly engine because the TypeScript one declined,
   *  by kind of reason (src/templating/go/index.ts; the reason itself is logged at debug). */
  readonly goTemplateFallbacks = new LazyCounter<'kind'>();
  /** Seconds left on each dynamic secret's credential, read when scraped. */
  leaseTtls: () => ReadonlyMap<string, number> = () => new Map();
  /** The refresh period of the sidecar modes (undefined: init-only), read when scraped; the
   *  chart's stale-files alert compares the last success with it. */
  refreshSeconds: () => number | undefined = () => undefined;
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
    this.refreshes.bind(
      new pc.Counter({ name: 'esi_agent_refresh_total', help: 'Refresh cycles (fetch, render, write), by result.', labelNames: ['result'] as const, registers }),
    );
    this.failures.bind(
      new pc.Counter({
        name: 'esi_agent_refresh_failures_total',
        help: 'Failed refresh cycles, by the stage that failed (fetch, render, write).',
        labelNames: ['stage'] as const,
        registers,
      }),
    );
    this.lastSuccess.bind(new pc.Gauge({ name: 'esi_agent_last_success_timestamp_seconds', help: 'Unix time of the last successful refresh cycle.', registers }));
    this.renderDuration.bind(
      new pc.Histogram({
        name: 'esi_agent_render_duration_seconds',
        help: 'Duration of a whole refresh cycle (fetch, render, write).',
        buckets: RENDER_BUCKETS,
        registers,
      }),
    );
    this.swaps.bind(new pc.Counter({ name: 'esi_agent_file_swaps_total', help: 'Generations of files published (content changed).', registers }));
    this.providerCalls.bind(
      new pc.Counter({
        name: 'esi_agent_provider_calls_total',
        help: 'Remote reads issued to stores (after coalescing), by store.',
        labelNames: ['store'] as const,
        registers,
      }),
    );
    this.notifications.bind(
      new pc.Counter({
        name: 'esi_agent_notifications_total',
        help: 'Application change notifications, by result (after retries).',
        labelNames: ['result'] as const,
        registers,
      }),
    );
    this.refreshFloor.bind(new pc.Gauge({ name: 'esi_agent_refresh_floor_seconds', help: "The shortest refresh period the stores' read budget allows this pod (0: no floor).", registers }));
    this.changeNotices.bind(new pc.Counter({ name: 'esi_agent_change_notices_total', help: 'Change generations received from the controller (each one a fetch at once).', registers }));
    this.leaseRenewals.bind(
      new pc.Counter({
        name: 'esi_agent_lease_renewals_total',
        help: 'Lease renewals of dynamic secrets, by secret and result (a failure is retried while the lease lasts).',
        labelNames: ['secret', 'result'] as const,
        registers,
      }),
    );
    this.goTemplateFallbacks.bind(
      new pc.Counter({
        name: 'esi_agent_go_template_fallbacks_total',
        help: 'Go templates rendered by the WebAssembly Go engine instead of the TypeScript one, by kind of reason (function, syntax, execution, data).',
        labelNames: ['kind'] as const,
        registers,
      }),
    );
    const ttls = (): ReadonlyMap<string, number> => this.leaseTtls();
    new pc.Gauge({
      name: 'esi_agent_lease_ttl_seconds', help: 'Seconds until the current credential of each dynamic secret ends (lease TTL or certificate validity).',
      labelNames: ['secret'] as const, registers,
      collect() {
        this.reset();
        for (const [secret, left] of ttls()) this.set({ secret }, left);
      },
    });
    const refresh = (): number | undefined => this.refreshSeconds();
    new pc.Gauge({
      name: 'esi_agent_refresh_interval_seconds', help: 'The configured refresh period (esi.dev/refresh-interval), without its jitter.', registers,
      collect() {
        const s = refresh();
        if (s !== undefined) this.set(s);
      },
    });
    if (this.opts.defaultMetrics ?? true) processMetrics(pc, registers);
    return registry;
  }
}

/** What sizing the sidecar needs (CPU, memory), read only when scraped. Not prom-client's
 *  default metrics: those start an event-loop delay monitor that wakes the process every
 *  10 ms from the first scrape on, which multiplied an idle agent's CPU several times (see
 *  docs/performance/agent-profile.md). Names and meanings are
 *  prom-client's standard ones, unprefixed, so stock Node.js dashboards read them. */
function processMetrics(pc: PromClient, registers: Registry[]): void {
  let last = process.cpuUsage();
  const user = new pc.Counter({ name: 'process_cpu_user_seconds_total', help: 'Total user CPU time spent in seconds.', registers });
  const system = new pc.Counter({ name: 'process_cpu_system_seconds_total', help: 'Total system CPU time spent in seconds.', registers });
  new pc.Counter({
    name: 'process_cpu_seconds_total', help: 'Total user and system CPU time spent in seconds.', registers,
    collect() {
      const now = process.cpuUsage();
      const [du, ds] = [(now.user - last.user) / 1e6, (now.system - last.system) / 1e6];
      last = now;
      user.inc(du);
      system.inc(ds);
      this.inc(du + ds);
    },
  });
  const gauge = (name: string, help: string, read: () => number) =>
    new pc.Gauge({ name, help, registers, collect() { this.set(read()); } });
  const started = Math.round(Date.now() / 1000 - process.uptime());
  gauge('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.', () => started);
  gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', () => process.memoryUsage.rss());
  gauge('nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.', () => process.memoryUsage().heapTotal);
  gauge('nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.', () => process.memoryUsage().heapUsed);
  gauge('nodejs_external_memory_bytes', 'Node.js external memory size in bytes.', () => process.memoryUsage().external);
}
