// The reconciler's render pool (docs/decisions/0051-render-pool.md): Go and handlebars renders
// run in a few worker threads (worker.ts), never on the main thread, so a template that loops
// cannot silence /healthz, the Lease or other ExternalSecrets. Bounded everywhere:
//  - a deadline per render: past it the thread is terminated (the runaway template with it)
//    and replaced, and only that render fails;
//  - a bounded queue, served round-robin by tenant (namespace), so one namespace's renders
//    cannot make another's wait behind them;
//  - a tenant whose render ran out of time is a suspect for a while: one render at a time,
//    one more waiting, the rest refused at once (RenderBusy) and retried with the caller's
//    backoff, so its hostile templates never hold the reconciler's workers (controller.ts).
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { packageRoot } from '../../package-root.js';
import type { IdleMessage, WorkerReply, WorkerRequest, WorkerResult } from './protocol.js';

/** Not started (queue full, or the tenant is held to one render): retry after `retryAfterMs`. */
export class RenderBusy extends Error {
  constructor(message: string, readonly retryAfterMs: number) {
    super(message);
  }
}

/** The render failed; `timedOut` when it ran out of time (the thread may have been killed). */
export class RenderFailed extends Error {
  constructor(message: string, readonly timedOut: boolean) {
    super(message);
  }
}

export interface RenderPoolOptions {
  workers: number;
  /** Deadline of one render (all templates of one ExternalSecret, or one rewrite transform). */
  timeoutMs: number;
  /** Renders waiting for a thread, over all tenants. */
  maxQueued: number;
  /** How long a tenant stays a suspect after a render ran out of time (default 10 min). */
  suspectMs?: number;
  /** JS heap of one thread (handlebars); the Go engine's memory is capped by runner.ts. */
  heapMb?: number;
  /** The engines' own deadline in the thread (default timeoutMs); tests raise it to see the
   *  pool's deadline alone at work. */
  engineTimeoutMs?: number;
  onKill?: () => void;
  onBusy?: () => void;
}

type Request = WorkerRequest extends infer R ? (R extends unknown ? Omit<R, 'id'> : never) : never;

interface Job {
  id: number;
  tenant: string;
  key: string;
  /** The templates, for the message when the thread is killed (no values). */
  what: string;
  req: Request;
  resolve: (r: WorkerResult) => void;
  reject: (e: Error) => void;
}

interface Slot {
  worker: Worker;
  idle: boolean;
  /** Terminated or crashed: replaced (or about to be), never dispatched to. */
  dead: boolean;
  job?: Job;
  timer?: NodeJS.Timeout;
}

/** The thread kills a render past its own deadline; the pool waits this much longer. */
const GRACE_MS = 1000;
/** Renders (running + waiting) a suspect tenant may have in the pool. */
const SUSPECT_SLOTS = 2;
/** Refusals counted for a tenant's retry-after, and the longest retry-after. */
const REFUSALS_WINDOW_MS = 60_000;
const MAX_RETRY_AFTER_MS = 10 * 60_000;

/** worker.ts from src/ (tsx), from tsc's dist/, or the bundle's own entry (scripts/bundle.ts). */
function workerEntry(): { entry: string | URL; eval: boolean } {
  const here = import.meta.url;
  if (here.endsWith('.ts')) {
    // Under tsx (tests, `npx tsx`) Node 20's threads do not get the parent's `--import tsx`
    // hooks: the thread registers tsx itself, then loads worker.ts.
    const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
    const worker = JSON.stringify(new URL('./worker.ts', here).href);
    return { eval: true, entry: `import(${tsx}).then((api) => api.register()).then(() => import(${worker}))` };
  }
  if (here.includes('/dist/bundle/')) return { eval: false, entry: pathToFileURL(join(packageRoot(), 'dist', 'bundle', 'render-worker.mjs')) };
  return { eval: false, entry: new URL('./worker.js', here) };
}

export class RenderPool {
  private readonly slots: Slot[] = [];
  /** tenant → waiting jobs; the Map's order is the round-robin order. */
  private readonly waiting = new Map<string, Job[]>();
  private readonly running = new Map<string, number>();
  private readonly suspects = new Map<string, number>();
  /** tenant → caller key → when it was last refused. */
  private readonly refused = new Map<string, Map<string, number>>();
  private queued = 0;
  private nextId = 1;
  private closed = false;
  private readonly suspectMs: number;

  constructor(private readonly o: RenderPoolOptions) {
    this.suspectMs = o.suspectMs ?? 10 * 60_000;
  }

  /** Runs `req` for `key` (an object) of `tenant`; rejects with RenderBusy or RenderFailed. */
  run(at: { tenant: string; key: string }, what: string, req: Request): Promise<WorkerResult> {
    const { tenant, key } = at;
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(new Error('the render pool is stopped'));
      const mine = (this.waiting.get(tenant)?.length ?? 0) + (this.running.get(tenant) ?? 0);
      if (this.queued >= this.o.maxQueued || (this.suspect(tenant) && mine >= SUSPECT_SLOTS)) {
        return reject(this.busy(tenant, key, what));
      }
      const job: Job = { id: this.nextId++, tenant, key, what, req, resolve, reject };
      const list = this.waiting.get(tenant);
      if (list) list.push(job);
      else this.waiting.set(tenant, [job]);
      this.queued++;
      this.dispatch();
    });
  }

  /** Threads start with the first renders that need them, not with the pool: each holds its
   *  own heap and Go engine (tens of MiB), and a reconciler whose ExternalSecrets have no
   *  template never renders here (docs/controller.md, "Memory"). A new thread takes work
   *  only once its Go engine runs, so no render's deadline pays for the start. */
  private grow(): void {
    const free = () => this.slots.filter((s) => !s.dead && !s.job).length; // idle, or starting
    while (this.queued > free() && this.slots.length < this.o.workers) this.slots.push(this.spawn());
  }

  /** Renders waiting for a thread. */
  get depth(): number {
    return this.queued;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const jobs of this.waiting.values()) for (const j of jobs) j.reject(new Error('the render pool is stopped'));
    this.waiting.clear();
    this.queued = 0;
    await Promise.all(this.slots.map((s) => {
      clearTimeout(s.timer);
      s.job?.reject(new Error('the render pool is stopped'));
      return s.worker.terminate();
    }));
  }

  private suspect(tenant: string): boolean {
    const until = this.suspects.get(tenant);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.suspects.delete(tenant);
    return false;
  }

  /** Holds `tenant` to one render at a time; its extra waiting renders are refused now, so
   *  the reconciler's workers waiting for them are freed at once. */
  private markSuspect(tenant: string): void {
    this.suspects.set(tenant, Date.now() + this.suspectMs);
    const jobs = this.waiting.get(tenant);
    if (!jobs) return;
    const keep = Math.max(0, SUSPECT_SLOTS - (this.running.get(tenant) ?? 0));
    for (const j of jobs.splice(keep)) {
      this.queued--;
      j.reject(this.busy(tenant, j.key, j.what));
    }
    if (!jobs.length) this.waiting.delete(tenant);
  }

  /** A refusal whose retry-after spreads the tenant's refused objects over the time one thread
   *  needs to try each once: every object gets its turn (a lottery, no starvation by growing
   *  backoff), and a tenant with thousands of them cannot make the reconciler spin. */
  private busy(tenant: string, key: string, what: string): RenderBusy {
    this.o.onBusy?.();
    const now = Date.now();
    let keys = this.refused.get(tenant);
    if (!keys) this.refused.set(tenant, (keys = new Map()));
    keys.set(key, now);
    for (const [k, when] of keys) if (when < now - REFUSALS_WINDOW_MS) keys.delete(k);
    const ms = Math.min(MAX_RETRY_AFTER_MS, Math.max(1000, this.o.timeoutMs * keys.size * (0.5 + Math.random())));
    return new RenderBusy(`${what}: the render pool is busy; retrying`, Math.round(ms));
  }

  private dispatch(): void {
    for (const slot of this.slots) {
      if (!slot.idle || slot.dead) continue;
      const job = this.take();
      if (!job) break;
      slot.idle = false;
      slot.job = job;
      this.running.set(job.tenant, (this.running.get(job.tenant) ?? 0) + 1);
      slot.timer = setTimeout(() => this.kill(slot), this.o.timeoutMs + GRACE_MS);
      slot.worker.postMessage({ ...job.req, id: job.id });
    }
    this.grow();
  }

  /** The next job, round-robin by tenant; a suspect tenant runs one render at a time. */
  private take(): Job | undefined {
    for (const [tenant, jobs] of this.waiting) {
      if (this.suspect(tenant) && (this.running.get(tenant) ?? 0) >= 1) continue;
      const job = jobs.shift()!;
      this.waiting.delete(tenant);
      if (jobs.length) this.waiting.set(tenant, jobs); // to the back of the round
      this.queued--;
      return job;
    }
    return undefined;
  }

  /** Ends the slot's job; the slot stays busy until its thread says it is idle. */
  private finish(slot: Slot): Job | undefined {
    const job = slot.job;
    clearTimeout(slot.timer);
    slot.job = undefined;
    if (job) {
      const n = (this.running.get(job.tenant) ?? 1) - 1;
      if (n > 0) this.running.set(job.tenant, n);
      else this.running.delete(job.tenant);
    }
    return job;
  }

  private onMessage(slot: Slot, msg: WorkerReply | IdleMessage): void {
    if (slot.dead) return;
    if ('idle' in msg) {
      slot.idle = true;
      return this.dispatch();
    }
    if (slot.job?.id !== msg.id) return;
    const job = this.finish(slot)!;
    if (msg.ok) return job.resolve(msg.result);
    if (msg.timedOut) this.markSuspect(job.tenant);
    job.reject(new RenderFailed(msg.message, msg.timedOut));
  }

  /** Past the deadline: terminate the thread (and the template running in it), replace it. */
  private kill(slot: Slot): void {
    const job = this.finish(slot);
    slot.dead = true;
    void slot.worker.terminate();
    this.slots[this.slots.indexOf(slot)] = this.spawn();
    if (!job) return;
    this.o.onKill?.();
    this.markSuspect(job.tenant);
    job.reject(new RenderFailed(`${job.what}: rendering took longer than ${this.o.timeoutMs} ms and was stopped`, true));
  }

  private spawn(): Slot {
    const { entry, eval: isEval } = workerEntry();
    const worker = new Worker(entry, {
      eval: isEval,
      workerData: { timeoutMs: this.o.engineTimeoutMs ?? this.o.timeoutMs },
      resourceLimits: { maxOldGenerationSizeMb: this.o.heapMb ?? 256 },
    });
    const slot: Slot = { worker, idle: false, dead: false };
    worker.unref();
    worker.on('message', (m: WorkerReply | IdleMessage) => this.onMessage(slot, m));
    // A thread that died on its own (out of its heap, a crash): fail its job, start another.
    worker.on('error', () => this.crashed(slot));
    worker.on('exit', () => this.crashed(slot));
    return slot;
  }

  private crashed(slot: Slot): void {
    if (slot.dead || this.closed) return;
    slot.dead = true;
    const job = this.finish(slot);
    job?.reject(new RenderFailed(`${job.what}: the render thread stopped (out of memory?)`, false));
    // A second later: a thread that cannot start at all is no hot loop.
    setTimeout(() => {
      if (this.closed) return;
      this.slots[this.slots.indexOf(slot)] = this.spawn();
    }, 1000).unref();
  }
}
