// One timer for every scheduled refresh and retry: a binary min-heap of (due time, key)
// drained by a single setTimeout armed for the earliest entry. 10 000 ExternalSecrets
// cost 10 000 heap entries, not 10 000 timers. Rescheduling a key supersedes its earlier
// entry (stale entries are skipped when they surface: lazy deletion).
import type { QueueKey } from './keys.js';

interface Entry<K> {
  at: number;
  key: K;
  seq: number;
}

/** Keys are the work queue's (`K`, QueueKey in the controller). */
export class Schedule<K extends string = QueueKey> {
  private readonly heap: Entry<K>[] = [];
  /** The live sequence number of each key; entries with another seq are stale. */
  private readonly live = new Map<K, { seq: number; at: number }>();
  private seq = 0;
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Infinity;
  private stopped = false;

  constructor(private readonly fire: (key: K) => void, private readonly now: () => number = Date.now) {}

  /** Runs `key` at `at` (ms since epoch); replaces any earlier schedule of the key. */
  at(key: K, at: number): void {
    if (this.stopped) return;
    const seq = ++this.seq;
    this.live.set(key, { seq, at });
    this.push({ at, key, seq });
    if (at < this.armedFor) this.arm();
  }

  /** Runs `key` after `ms` unless it is already due sooner. */
  sooner(key: K, ms: number): void {
    const at = this.now() + ms;
    const cur = this.live.get(key);
    if (cur && cur.at <= at) return;
    this.at(key, at);
  }

  cancel(key: K): void {
    this.live.delete(key);
  }

  /** When `key` is due, if scheduled. */
  due(key: K): number | undefined {
    return this.live.get(key)?.at;
  }

  get size(): number {
    return this.live.size;
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.live.clear();
    this.heap.length = 0;
  }

  private arm(): void {
    clearTimeout(this.timer);
    const top = this.heap[0];
    if (!top) {
      this.armedFor = Infinity;
      return;
    }
    this.armedFor = top.at;
    // setTimeout's limit is 2^31-1 ms; a later entry re-arms when the timer fires.
    const delay = Math.min(Math.max(0, top.at - this.now()), 2 ** 31 - 1);
    this.timer = setTimeout(() => this.drain(), delay);
    this.timer.unref();
  }

  private drain(): void {
    const now = this.now();
    while (this.heap.length && this.heap[0]!.at <= now) {
      const e = this.pop()!;
      const cur = this.live.get(e.key);
      if (!cur || cur.seq !== e.seq) continue;
      this.live.delete(e.key);
      this.fire(e.key);
    }
    this.armedFor = Infinity;
    this.arm();
  }

  private push(e: Entry<K>): void {
    const h = this.heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (h[p]!.at <= e.at) break;
      h[i] = h[p]!;
      i = p;
    }
    h[i] = e;
    // Stale entries accumulate when keys are rescheduled often: compact when they dominate.
    if (h.length > 1024 && h.length > 4 * this.live.size) this.compact();
  }

  private pop(): Entry<K> | undefined {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (!h.length || !last) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      const at = (k: number) => (k === i ? last.at : h[k]!.at);
      if (l < h.length && h[l]!.at < at(m)) m = l;
      if (r < h.length && h[r]!.at < at(m)) m = r;
      if (m === i) break;
      h[i] = h[m]!;
      i = m;
    }
    h[i] = last;
    return top;
  }

  private compact(): void {
    const keep = this.heap.filter((e) => this.live.get(e.key)?.seq === e.seq);
    this.heap.length = 0;
    keep.sort((a, b) => a.at - b.at);
    this.heap.push(...keep);
  }
}
