// The reconciler's recent reads per store (what a store's read budget leaves the agents is
// the budget minus these): counts in 10-second buckets over the last minute.
const BUCKET_MS = 10_000;
const BUCKETS = 6;

export class RateMeter {
  private readonly counts = new Map<string, { at: number; n: number }[]>();

  constructor(private readonly now: () => number = Date.now) {}

  add(store: string): void {
    const slot = Math.floor(this.now() / BUCKET_MS);
    let list = this.counts.get(store);
    if (!list) this.counts.set(store, (list = []));
    const last = list.at(-1);
    if (last?.at === slot) last.n++;
    else list.push({ at: slot, n: 1 });
    while (list.length > BUCKETS + 1) list.shift();
  }

  /** Reads per second over the last minute. */
  rate(store: string): number {
    const slot = Math.floor(this.now() / BUCKET_MS);
    const n = (this.counts.get(store) ?? []).filter((b) => b.at > slot - BUCKETS).reduce((s, b) => s + b.n, 0);
    return n / ((BUCKETS * BUCKET_MS) / 1000);
  }

  forget(store: string): void {
    this.counts.delete(store);
  }
}
