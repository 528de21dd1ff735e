// The memory bound of one render. The engine runs in the caller's process, so every function
// that builds a value in proportion to its input (join, replace, indent, splitList, until,
// printing and JSON of nested values…) charges the characters or items it is about to
// create, and a render past the allowance fails with a message naming the bound. One render
// runs at a time (synchronous), so one module-level count is enough.
import { Unsupported } from './errors.js';

/** Characters (or list items) one render may create: 4 times the 1 MiB output limit, tens
 *  of MiB of heap at most (an agent's memory limit is 192Mi); ordinary templates build a few
 *  KiB. */
export const MAX_ALLOCATION = 4 << 20;

let left = Infinity;
let clock: { deadline: number; onTimeout: () => Error } | undefined;

/** Runs `render` with a fresh allowance; `time` lets long builds (until) check the deadline. */
export function withAllocation<T>(render: () => T, time?: { deadline: number; onTimeout: () => Error }, limit = MAX_ALLOCATION): T {
  const outer = [left, clock] as const;
  left = limit;
  clock = time;
  try {
    return render();
  } finally {
    [left, clock] = outer;
  }
}

const timeouts = new WeakSet<object>();

/** Inside a long build: throws the render's timeout past its deadline. */
export function tick(): void {
  if (clock && performance.now() > clock.deadline) {
    const err = clock.onTimeout();
    timeouts.add(err);
    throw err;
  }
}

/** Is `err` the render's timeout thrown by tick (inside a function: not the function's own failure)? */
export const isTimeout = (err: unknown): boolean => typeof err === 'object' && err !== null && timeouts.has(err);

/** A render past its allowance: a bound, not a refusal of the template's kind (index.ts
 *  words it so); an Unsupported so that no function mistakes it for its own failure. */
export class AllocationExceeded extends Unsupported {
  constructor() {
    super(`the render builds more than ${MAX_ALLOCATION} characters or items of values`);
    this.name = 'AllocationExceeded';
  }
}

/** Charges `n` characters or items before they are created. */
export function alloc(n: number): void {
  left -= n;
  if (left < 0) throw new AllocationExceeded();
}
