// Identical remote reads share one provider call. The agent wraps its clients for one
// refresh cycle (a wrapper per cycle: no expiry needed); the reconciler keeps one coalescer
// per store client with `windowMs` (src/controller/runtime/store-client.ts), so N
// ExternalSecrets reading the same (key, property, version) within one refresh window cost
// one call. Failed reads are not kept: the next reader tries again. Writes are never coalesced.
import { READ_CALLS, wrapClient, type ClientCall } from './client.js';
import type { SecretsClient } from './types.js';

/** The reads in flight or done, shared by every caller of one store client. */
export class ReadCoalescer {
  private readonly shared = new Map<string, { p: Promise<unknown>; at: number }>();
  private inserts = 0;

  /** `windowMs`: how long a result is shared after its call started; forever when unset. */
  constructor(private readonly windowMs?: number) {}

  /** The result of store call `name` with `args` made at time `at` (ms): an identical read's
   *  started within the window before `at`, else `call()`'s. */
  run(name: ClientCall, args: readonly unknown[], at: number, call: () => Promise<unknown>): Promise<unknown> {
    if (!READ_CALLS.has(name)) return call();
    // The reference only (args[0]): the caller's CallOptions (deadline) do not split reads.
    const id = `${name}:${JSON.stringify(args[0])}`;
    const hit = this.shared.get(id);
    if (hit && (this.windowMs === undefined || at - hit.at < this.windowMs)) return hit.p;
    const p = call();
    const entry = { p, at };
    this.shared.set(id, entry);
    if (this.windowMs !== undefined) {
      p.catch(() => this.shared.get(id) === entry && this.shared.delete(id));
      if (++this.inserts % 1024 === 0) this.sweep(at - this.windowMs);
    }
    return p;
  }

  private sweep(limit: number): void {
    for (const [id, e] of this.shared) if (e.at <= limit) this.shared.delete(id);
  }
}

/** Wraps `client` so identical reads share one call, for as long as the wrapper lives;
 *  `onCall` counts the real calls. */
export function coalescing<C extends SecretsClient>(client: C, onCall?: () => void): C {
  const reads = new ReadCoalescer();
  return wrapClient(client, (name, args, next) => reads.run(name, args, Date.now(), () => {
    if (READ_CALLS.has(name)) onCall?.();
    return next();
  }));
}
