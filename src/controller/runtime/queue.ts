// The work queue: each key (`<kind>/<namespace>/<name>`) is queued at most once, handled
// by at most one worker at a time (an event arriving while it is being handled marks it
// dirty and it runs once more afterwards), failures back off exponentially per key with a
// cap, and rate limiters bound the calls toward the apiserver and each store. It is the one
// loop that retries, forgets and schedules: reconcilers return a Requeue (or throw, which
// backs off), as the reconcilers of Kubernetes' sample-controller do; keys: ./keys.ts.
import type { QueueKey } from './keys.js';
import type { Schedule } from './schedule.js';

/** What one reconcile asks of the queue. */
export interface Requeue {
  /** Failed: run again after the key's exponential backoff. Otherwise the backoff is cleared. */
  backoff?: boolean;
  /** Run again in `after` ms without counting a failure (unless already due sooner). */
  after?: number;
  /** The next periodic run (ms since epoch), or 'cancel'; absent leaves the schedule as it is. */
  next?: number | 'cancel';
}

/** A token bucket: `rate` tokens per second, up to `burst` saved. `take()` waits. */
export class TokenBucket {
  private tokens: number;
  private last: number;
  private tail: Promise<void> = Promise.resolve();

  constructor(private readonly rate: number, private readonly burst: number, private readonly now: () => number = Date.now) {
    this.tokens = burst;
    this.last = now();
  }

  /** Resolves when a token is available; callers are served in order. */
  take(): Promise<void> {
    if (!(this.rate > 0) || !Number.isFinite(this.rate)) return Promise.resolve();
    const next = this.tail.then(async () => {
      this.refill();
      if (this.tokens < 1) {
        await new Promise((r) => setTimeout(r, ((1 - this.tokens) / this.rate) * 1000));
        this.refill();
      }
      this.tokens -= 1;
    });
    this.tail = next;
    return next;
  }

  private refill(): void {
    const now = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
  }
}

/** `K`: the keys, QueueKey in the controller (built by keys.ts only). */
export interface QueueOptions<K extends string = QueueKey> {
  workers: number;
  /** First retry delay and cap of the per-key exponential backoff, in ms. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Runs the key (queued at `requestedAt`, ms) and says when to run it again (none: a
   *  success, the backoff is cleared); throwing requeues it with backoff. */
  handle: (key: K, requestedAt: number) => Promise<Requeue | void>;
  schedule: Schedule<K>;
  /** Observers for metrics: time a key waited in the queue, queue depth. */
  onDequeue?: (waitedMs: number) => void;
  onError?: (key: K, err: unknown) => void;
}

export class WorkQueue<K extends string = QueueKey> {
  private readonly fifo: K[] = [];
  private head = 0;
  private readonly queued = new Map<K, number>();
  private readonly processing = new Set<K>();
  private readonly dirty = new Set<K>();
  private readonly failures = new Map<K, number>();
  private waiting: (() => void)[] = [];
  private stopped = false;
  private readonly running: Promise<void>[] = [];

  constructor(private readonly opts: QueueOptions<K>) {}

  start(): void {
    for (let i = 0; i < this.opts.workers; i++) this.running.push(this.worker());
  }

  add(key: K): void {
    if (this.stopped) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    this.queued.set(key, Date.now());
    this.fifo.push(key);
    this.waiting.shift()?.();
  }

  /** Re-adds `key` after its backoff (base · 2^failures, capped). */
  retry(key: K): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    const delay = Math.min(this.opts.maxDelayMs, this.opts.baseDelayMs * 2 ** Math.min(n, 30));
    this.opts.schedule.sooner(key, delay);
    return delay;
  }

  /** Clears the backoff of `key` (after a success, or when the object is gone). */
  forget(key: K): void {
    this.failures.delete(key);
  }

  failuresOf(key: K): number {
    return this.failures.get(key) ?? 0;
  }

  get depth(): number {
    return this.fifo.length - this.head;
  }

  get busy(): number {
    return this.processing.size;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const w of this.waiting) w();
    this.waiting = [];
    await Promise.all(this.running);
  }

  /** The one place a reconcile's result becomes a schedule: the next periodic run first
   *  (it replaces an earlier one), then a retry, which only ever brings the run closer. */
  private apply(key: K, r: Requeue): void {
    if (r.next === 'cancel') this.opts.schedule.cancel(key);
    else if (r.next !== undefined) this.opts.schedule.at(key, r.next);
    if (r.backoff) this.retry(key);
    else this.forget(key);
    if (r.after !== undefined) this.opts.schedule.sooner(key, r.after);
  }

  private next(): Promise<K | undefined> {
    if (this.stopped) return Promise.resolve(undefined);
    if (this.head < this.fifo.length) {
      const key = this.fifo[this.head++]!;
      if (this.head > 4096 && this.head * 2 > this.fifo.length) {
        this.fifo.splice(0, this.head);
        this.head = 0;
      }
      return Promise.resolve(key);
    }
    return new Promise<void>((r) => this.waiting.push(r)).then(() => this.next());
  }

  private async worker(): Promise<void> {
    for (;;) {
      const key = await this.next();
      if (key === undefined) return;
      const since = this.queued.get(key) ?? Date.now();
      this.queued.delete(key);
      this.processing.add(key);
      this.opts.onDequeue?.(Date.now() - since);
      try {
        this.apply(key, (await this.opts.handle(key, since)) ?? {});
      } catch (err) {
        this.opts.onError?.(key, err);
        this.retry(key);
      } finally {
        this.processing.delete(key);
        if (this.dirty.delete(key)) this.add(key);
      }
    }
  }
}
