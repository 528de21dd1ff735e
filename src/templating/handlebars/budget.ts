// The resource bound of one render. Handlebars renders synchronously and cannot be
// interrupted, so the engine counts as it goes: every block body it runs (each/if/with/
// unless iterations) and every helper result is charged here, and the render stops with
// a TemplateError once the output or the time limit is passed. Nesting counts a body's
// output once per enclosing block, so the work limit is a multiple of the output limit.
// One render runs at a time (synchronous), so one module-level budget is enough.

export interface RenderLimits {
  /** Bytes (UTF-16 code units) of one template's output. */
  maxOutput: number;
  /** Wall-clock milliseconds of one render. */
  maxMillis: number;
}

export const DEFAULT_RENDER_LIMITS: RenderLimits = { maxOutput: 1024 * 1024, maxMillis: 2000 };
/** Block and helper output counted across nesting levels, as a multiple of maxOutput. */
const WORK_FACTOR = 16;

export class BudgetExceeded extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'BudgetExceeded';
  }
}

interface Budget {
  limits: RenderLimits;
  deadline: number;
  work: number;
  calls: number;
}

let current: Budget | undefined;

/** Runs `render` under `limits`; nested calls share the outer budget. */
export function withBudget<T>(limits: RenderLimits, render: () => T): T {
  if (current) return render();
  current = { limits, deadline: performance.now() + limits.maxMillis, work: 0, calls: 0 };
  try {
    return render();
  } finally {
    current = undefined;
  }
}

/** Charges `chars` of produced text; throws BudgetExceeded past a limit. */
export function charge(chars: number): void {
  const b = current;
  if (!b) return;
  b.work += chars;
  if (chars > b.limits.maxOutput || b.work > b.limits.maxOutput * WORK_FACTOR) {
    throw new BudgetExceeded(`output exceeds the limit of ${b.limits.maxOutput} characters per template`);
  }
  // The clock is read every 64th charge: cheap, and still bounds a tight loop.
  if (++b.calls % 64 === 0 && performance.now() > b.deadline) {
    throw new BudgetExceeded(`rendering exceeds the time limit of ${b.limits.maxMillis} ms per template`);
  }
}

/** Throws before a helper builds a result longer than one template may print. */
export function ensureRoom(chars: number): void {
  const b = current;
  if (b && chars > b.limits.maxOutput) throw new BudgetExceeded(`output exceeds the limit of ${b.limits.maxOutput} characters per template`);
}
