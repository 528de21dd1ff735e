// A watch-backed cache that keeps itself alive. @kubernetes/client-node's informer (its
// ListWatch) re-watches by itself when a watch ends, and relists when the apiserver answers
// 410 Gone; on any other failure (a failed list, a refused watch: 404 while a CRD is being
// replaced, 429 while its storage initializes, a reset connection) it emits 'error' once and
// stops for good. This restarts it after a short delay that grows while failures repeat and
// starts short again once a list succeeded and the watch then ran for a while (a list that
// succeeds followed at once by a refused watch must not loop at the shortest delay). The
// informer's 'connect' event is no sign of health: it fires before the list that may fail.
// Used by the controller's and the webhook's caches.
import { makeInformer, type Informer, type KubeConfig, type KubernetesObject, type ObjectCache } from '@kubernetes/client-node';
import type { Logger } from 'pino';

export type Cache<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;

/** A watch that ran this long after a successful list counts as healthy: the next failure
 *  starts the delays over. */
const HEALTHY_MS = 10_000;

/** Delay before restart number `failures` (1, 2, …): 200 ms, doubling, at most 5 s. */
export function restartDelay(failures: number): number {
  return Math.min(5_000, 200 * 2 ** Math.min(Math.max(failures, 1) - 1, 10));
}

export interface RestartableOptions {
  /** Names the cache in logs. */
  name: string;
  logger: Logger;
  labelSelector?: string;
}

export class RestartableInformer<T extends KubernetesObject> {
  readonly informer: Cache<T>;
  /** True once a list succeeded (the cache holds a full copy, kept by the watch since). */
  synced = false;
  /** Restarts after failures, for /metrics and tests. */
  restarts = 0;
  private failures = 0;
  /** When the last list succeeded, until the next failure. */
  private listedAt?: number;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(kc: KubeConfig, path: string, list: () => Promise<{ items?: T[] }>, private readonly o: RestartableOptions) {
    const listed = async () => {
      const result = await list();
      this.listedAt = Date.now();
      this.synced = true;
      return result as never;
    };
    this.informer = makeInformer<T>(kc, path, listed, o.labelSelector);
    // The informer's chain has ended when it reports an error: start a new one later.
    this.informer.on('error', (err) => this.failed(err));
  }

  private failed(err: unknown): void {
    if (this.stopped) return;
    if (this.listedAt !== undefined && Date.now() - this.listedAt >= HEALTHY_MS) this.failures = 0;
    this.listedAt = undefined;
    this.failures++;
    const delay = restartDelay(this.failures);
    const msg = (err as { message?: string })?.message ?? String(err);
    this.o.logger.warn({ cache: this.o.name, delayMs: delay, err: msg }, 'watch failed; relisting after a delay');
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.restarts++;
      void this.start();
    }, delay);
  }

  /** Lists and starts watching; resolves once listed (or failed: a restart is then due). */
  async start(): Promise<void> {
    if (this.stopped) return;
    try {
      await this.informer.start();
    } catch (err) {
      this.failed(err);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.informer.stop();
  }
}
