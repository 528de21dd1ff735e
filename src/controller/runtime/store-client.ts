// The one decorator around a provider client of the reconciler (built by clients.ts). Every
// store call of every view passes the same steps, in this order:
//   1. `shared` views coalesce identical reads: they share one call within the refresh window,
//      measured between the times the reconciles were *requested* (the work queue's enqueue
//      time, given to `sharedAsOf`), not the times they ran, so a first sync of 10 000 objects
//      that spans several windows still shares;
//   2. a real read is counted (`onCall`: metrics, the fleet budget) and waits for the store's
//      rate limit (--store-qps); writes are paced by their reconcilers;
//   3. every call, whatever its kind, runs under the per-call deadline (--provider-timeout)
//      joined with the caller's own signal: a store that never answers fails the call with
//      Timeout instead of holding a worker.
import { callWithin, READ_CALLS, wrapClient, type ClientCall } from '../../providers/client.js';
import { ReadCoalescer } from '../../providers/coalescing.js';
import type { Provider, SecretsClient } from '../../providers/types.js';

export interface StoreClientOptions {
  storeId: string;
  /** The per-call deadline (ms). */
  timeoutMs: number;
  /** How long a coalesced read is shared (ms). */
  windowMs: number;
  /** The store's rate limit: resolves when a read may go out. */
  rateLimit: { take(): Promise<void> };
  /** Called once per real (not coalesced) read. */
  onCall?: () => void;
}

export class StoreClient {
  private readonly reads: ReadCoalescer;
  /** Coalesced and rate limited, reads timed as they run. */
  readonly shared: SecretsClient;
  /** Rate limited only: for force-sync, pushes and validation, which must not see a cached value. */
  readonly fresh: SecretsClient;

  constructor(readonly provider: Provider, private readonly raw: SecretsClient, private readonly opts: StoreClientOptions) {
    this.reads = new ReadCoalescer(opts.windowMs);
    this.shared = this.view(() => Date.now());
    this.fresh = wrapClient(raw, (name, args) => this.call(name, args));
  }

  /** `shared` for a reconcile requested at `requestedAt` (ms): its reads share results with
   *  reads requested within the window of it, however long the reconcile waited in the queue. */
  sharedAsOf(requestedAt: number): SecretsClient {
    return this.view(() => requestedAt);
  }

  close(): Promise<void> {
    return this.raw.close();
  }

  private view(at: () => number): SecretsClient {
    return wrapClient(this.raw, (name, args) => this.reads.run(name, args, at(), () => this.call(name, args)));
  }

  private async call(name: ClientCall, args: unknown[]): Promise<unknown> {
    if (READ_CALLS.has(name)) {
      this.opts.onCall?.();
      await this.opts.rateLimit.take();
    }
    return callWithin(this.raw, name, args, { storeId: this.opts.storeId, ms: this.opts.timeoutMs });
  }
}
