// A small HTTPS load generator: open-loop fixed-rate runs (requests leave on a schedule,
// whatever the server does, like the apiserver forwarding pod creations) and closed-loop
// saturation runs (N connections, each sending its next request when the previous answer
// arrives). HTTP/1.1 keep-alive connections (one request at a time on each, new ones opened
// for concurrent requests, as the kube-apiserver does with admission webhooks since
// Kubernetes 1.16), server certificate verified against a CA.
//
// Why not autocannon: its client hard-codes `rejectUnauthorized: false` (the CA cannot be
// checked) and its rate limit is a per-connection, per-second budget inside a closed loop,
// which sends bursts at each second boundary rather than a steady open-loop rate.
import { Agent, request } from 'node:https';
import { createHistogram, performance, type RecordableHistogram } from 'node:perf_hooks';

export interface LoadTarget {
  url: string;
  /** PEM bundle the server certificate must chain to. */
  ca: string;
  /** Per-request timeout; the apiserver's default webhook timeout is 10 s. */
  timeoutMs?: number;
  /** Upper bound of concurrent connections (the agent never queues below it). */
  maxSockets?: number;
  /** Idle keep-alive connections kept for reuse; more are closed when they go idle. The
   *  default, 25, is client-go's idleConnsPerHost (k8s.io/client-go/transport/cache.go), i.e. the pool the
   *  kube-apiserver keeps towards an admission webhook. */
  maxIdleSockets?: number;
}

/** One request to send; check() returns a problem description, or undefined if the answer is right. */
export interface LoadRequest {
  body: Buffer;
  /** Optional label (e.g. the payload's shape): latency is also reported per tag. */
  tag?: string;
  check(status: number, body: Buffer): string | undefined;
}

export type RequestSource = () => LoadRequest;

export interface Percentiles {
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

export interface LoadResult {
  mode: 'fixed-rate' | 'closed-loop';
  targetRate?: number;
  connections?: number;
  /** Seconds of the measured window (warm-up excluded). */
  durationS: number;
  /** Requests sent / answered in the measured window. */
  sent: number;
  completed: number;
  /** Responses per second over the measured window. */
  throughput: number;
  /** Transport failures and timeouts. */
  errors: number;
  non2xx: number;
  /** 2xx answers whose content check() rejected. */
  invalid: number;
  /** Milliseconds from writing the request to the end of the response. */
  latencyMs: Percentiles;
  /** Fixed rate only: how late requests left compared with their schedule (generator health). */
  scheduleLagMs?: Percentiles;
  /** TLS connections opened during the measured window. */
  newConnections: number;
  /** Most requests in flight at once (= connections needed, HTTP/1.1). */
  maxInFlight: number;
  /** CPU time of the load generator process over the phase, % of one core. */
  generatorCpuPercent: number;
  /** The first few problems seen (errors, non-2xx, failed checks). */
  problems: string[];
  /** Latency per request tag (requests without a tag are left out). */
  byTag: Record<string, Percentiles & { count: number }>;
  /** Fixed rate only: set when the phase was cut short because the server fell behind
   *  (more than maxInFlight requests waiting); the figures cover what was sent until then. */
  overloaded?: { afterS: number; inFlight: number };
}

interface Outcome {
  ms: number;
  status?: number;
  body?: Buffer;
  error?: string;
  newConnection: boolean;
}

export class LoadClient {
  private readonly agent: Agent;
  private readonly url: URL;

  constructor(private readonly target: LoadTarget) {
    this.url = new URL(target.url);
    // No TLS session resumption: client-go's tls.Config has no ClientSessionCache, so each new
    // apiserver→webhook connection is a full handshake (Node's agent would otherwise resume).
    this.agent = new Agent({
      keepAlive: true, ca: target.ca, maxSockets: target.maxSockets ?? 512, maxFreeSockets: target.maxIdleSockets ?? 25,
      maxCachedSessions: 0, scheduling: 'lifo',
    });
  }

  send(body: Buffer, done: (o: Outcome) => void): void {
    const started = performance.now();
    let finished = false;
    const finish = (o: Omit<Outcome, 'ms' | 'newConnection'>) => {
      if (finished) return;
      finished = true;
      done({ ...o, ms: performance.now() - started, newConnection: !req.reusedSocket });
    };
    const req = request(this.url, {
      method: 'POST', agent: this.agent, timeout: this.target.timeoutMs ?? 10_000,
      headers: { 'content-type': 'application/json', accept: 'application/json', 'content-length': body.length },
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => finish({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', (err) => finish({ error: err.message }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${this.target.timeoutMs ?? 10_000} ms`)));
    req.on('error', (err) => finish({ error: err.message }));
    req.end(body);
  }

  close(): void {
    this.agent.destroy();
  }
}

const US = 1000;

class Recorder {
  readonly latency: RecordableHistogram = createHistogram();
  readonly lag: RecordableHistogram = createHistogram();
  readonly byTag = new Map<string, RecordableHistogram>();
  sent = 0;
  completed = 0;
  errors = 0;
  non2xx = 0;
  invalid = 0;
  newConnections = 0;
  lastEnd = 0;
  inFlight = 0;
  maxInFlight = 0;
  readonly problems: string[] = [];
  private readonly cpu0 = process.cpuUsage();
  private readonly t0 = performance.now();

  started() {
    this.sent++;
    this.inFlight++;
    if (this.inFlight > this.maxInFlight) this.maxInFlight = this.inFlight;
  }

  cpuPercent(): number {
    const c = process.cpuUsage(this.cpu0);
    return ((c.user + c.system) / 1000 / (performance.now() - this.t0)) * 100;
  }

  note(problem: string) {
    if (this.problems.length < 8) this.problems.push(problem);
  }

  record(o: Outcome, req: LoadRequest) {
    this.completed++;
    this.inFlight--;
    this.lastEnd = performance.now();
    if (o.newConnection) this.newConnections++;
    const us = Math.max(1, Math.round(o.ms * US));
    this.latency.record(us);
    if (req.tag !== undefined) {
      let h = this.byTag.get(req.tag);
      if (!h) this.byTag.set(req.tag, (h = createHistogram()));
      h.record(us);
    }
    if (o.error !== undefined) {
      this.errors++;
      return this.note(`error: ${o.error}`);
    }
    if (o.status! < 200 || o.status! > 299) {
      this.non2xx++;
      return this.note(`HTTP ${o.status}: ${o.body!.toString('utf8').slice(0, 200)}`);
    }
    const problem = req.check(o.status!, o.body!);
    if (problem) {
      this.invalid++;
      this.note(`wrong answer: ${problem}`);
    }
  }
}

function percentiles(h: RecordableHistogram): Percentiles {
  if (h.count === 0) return { p50: 0, p90: 0, p99: 0, p999: 0, max: 0, mean: 0 };
  return {
    p50: h.percentile(50) / US, p90: h.percentile(90) / US, p99: h.percentile(99) / US,
    p999: h.percentile(99.9) / US, max: h.max / US, mean: h.mean / US,
  };
}

function result(r: Recorder, base: Pick<LoadResult, 'mode' | 'targetRate' | 'connections'>, windowMs: number): LoadResult {
  return {
    ...base,
    durationS: windowMs / 1000,
    sent: r.sent, completed: r.completed, throughput: r.completed / (windowMs / 1000),
    errors: r.errors, non2xx: r.non2xx, invalid: r.invalid,
    latencyMs: percentiles(r.latency),
    ...(base.mode === 'fixed-rate' ? { scheduleLagMs: percentiles(r.lag) } : {}),
    newConnections: r.newConnections, maxInFlight: r.maxInFlight, generatorCpuPercent: r.cpuPercent(), problems: r.problems,
    byTag: Object.fromEntries([...r.byTag].map(([tag, h]) => [tag, { ...percentiles(h), count: h.count }])),
  };
}

export type Arrivals = 'uniform' | 'poisson';

export interface FixedRateOptions {
  rate: number;
  warmupMs: number;
  durationMs: number;
  /** uniform: one request every 1/rate s; poisson: exponential gaps with the same mean. */
  arrivals?: Arrivals;
  /** Uniform [0,1) source for poisson gaps (seeded for reproducibility). */
  random?: () => number;
  /** Stop sending once this many requests are in flight: the server is not keeping up, and
   *  an ever-growing backlog only measures the queue (default 256). */
  maxInFlight?: number;
}

/** Open loop: request i leaves at its scheduled time, however many are in flight. */
export function fixedRate(client: LoadClient, next: RequestSource, opts: FixedRateOptions): Promise<LoadResult> {
  const measured = new Recorder();
  const warm = new Recorder();
  const random = opts.random ?? Math.random;
  const t0 = performance.now();
  const measureFrom = t0 + opts.warmupMs;
  const stopAt = measureFrom + opts.durationMs;
  // During the warm-up the rate ramps from 10 % to 100 %, so connections open gradually (as
  // the apiserver's pool grows with traffic) instead of in a TLS-handshake stampede.
  const rateAt = (t: number) => opts.rate * (t >= measureFrom || opts.warmupMs <= 0 ? 1 : 0.1 + (0.9 * (t - t0)) / opts.warmupMs);
  const gap = (t: number) => (opts.arrivals === 'poisson' ? -Math.log(1 - random()) : 1) * (1000 / rateAt(t));
  const maxInFlight = opts.maxInFlight ?? 256;
  let due = t0;
  let inFlight = 0;
  let overloaded: LoadResult['overloaded'];
  return new Promise((resolve) => {
    const maybeDone = () => {
      if ((due >= stopAt || overloaded) && inFlight === 0) {
        const windowMs = Math.max(opts.durationMs, measured.lastEnd - measureFrom);
        // Overloaded before the measured window began: report the warm-up's requests.
        const rec = overloaded && measured.completed === 0 ? warm : measured;
        const from = rec === warm ? t0 : measureFrom;
        const span = overloaded ? Math.max(1, rec.lastEnd - from) : windowMs;
        resolve({ ...result(rec, { mode: 'fixed-rate', targetRate: opts.rate }, span), ...(overloaded ? { overloaded } : {}) });
      }
    };
    const fire = (intended: number) => {
      const rec = intended >= measureFrom ? measured : warm;
      const req = next();
      rec.started();
      rec.lag.record(Math.max(1, Math.round((performance.now() - intended) * US)));
      inFlight++;
      client.send(req.body, (o) => {
        inFlight--;
        rec.record(o, req);
        maybeDone();
      });
    };
    const tick = () => {
      const now = performance.now();
      while (due <= now && due < stopAt && !overloaded) {
        if (inFlight >= maxInFlight) overloaded = { afterS: (now - t0) / 1000, inFlight };
        else fire(due);
        due += gap(due);
      }
      if (due < stopAt && !overloaded) setTimeout(tick, Math.max(0, due - performance.now()));
      else maybeDone();
    };
    tick();
  });
}

export interface ClosedLoopOptions {
  connections: number;
  warmupMs: number;
  durationMs: number;
}

/** Closed loop: `connections` workers, each with one request in flight at a time. */
export async function closedLoop(client: LoadClient, next: RequestSource, opts: ClosedLoopOptions): Promise<LoadResult> {
  const measured = new Recorder();
  const warm = new Recorder();
  const t0 = performance.now();
  const measureFrom = t0 + opts.warmupMs;
  const stopAt = measureFrom + opts.durationMs;
  const worker = async () => {
    while (performance.now() < stopAt) {
      const rec = performance.now() >= measureFrom ? measured : warm;
      const req = next();
      rec.started();
      const o = await new Promise<Outcome>((resolve) => client.send(req.body, resolve));
      rec.record(o, req);
    }
  };
  await Promise.all(Array.from({ length: opts.connections }, worker));
  const windowMs = Math.max(opts.durationMs, measured.lastEnd - measureFrom);
  return result(measured, { mode: 'closed-loop', connections: opts.connections }, windowMs);
}
