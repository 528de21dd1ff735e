// One thread of the reconciler's render pool (pool.ts; docs/decisions/0051-render-pool.md).
// It runs the same render functions as the agent and the webhook (renderExternalSecretTemplate,
// transformKeys): the pool moves rendering off the main thread, it does not re-implement it.
// The Go engine's own deadline (runner.ts) and handlebars' budget (budget.ts) stop most
// runaway templates here; the pool's deadline (terminate this thread) is the backstop.
import { parentPort, workerData } from 'node:worker_threads';
import { DEFAULT_RENDER_LIMITS } from '../budget.js';
import { TemplateEngine } from '../engine.js';
import { renderExternalSecretTemplate } from '../eso.js';
import { transformKeys, warmGoEngine } from '../go/index.js';
import type { WorkerReply, WorkerRequest } from './protocol.js';

const { timeoutMs } = workerData as { timeoutMs: number };
const engine = new TemplateEngine(256, { maxOutput: DEFAULT_RENDER_LIMITS.maxOutput, maxMillis: timeoutMs });
const port = parentPort!;

/** Starts the Go engine now, so a render's deadline never pays for it (compiling the module
 *  and starting Go take up to a second on a loaded machine). Most Go templates render in
 *  TypeScript (docs/decisions/0071-go-templates-in-typescript.md), but the reconciler holds
 *  every namespace's templates and pays this once per thread: a template handed to the Go
 *  engine mid-render then meets a running engine. Without a built engine, the first Go
 *  render reports that itself. */
function warm(): void {
  try {
    warmGoEngine();
  } catch {
    // reported by the render that needs the engine
  }
}

function run(req: WorkerRequest): WorkerReply {
  const started = performance.now();
  try {
    if (req.kind === 'transform') {
      // Keys only: each key maps to itself, so values never reach this thread.
      const keys = Object.fromEntries(req.keys.map((k) => [k, k]));
      const out = transformKeys(req.name, req.template, keys, timeoutMs);
      return { id: req.id, ok: true, result: { kind: 'transform', pairs: Object.entries(out) } };
    }
    const data = Object.create(null) as Record<string, Uint8Array>;
    for (const [k, v] of req.data) data[k] = v;
    const out = renderExternalSecretTemplate(engine, req.target, data, { ...req.opts, goTimeoutMs: timeoutMs });
    return { id: req.id, ok: true, result: { kind: 'render', data: Object.entries(out.data), labels: out.labels, annotations: out.annotations } };
  } catch (err) {
    // Messages are value-free by construction (docs/decisions/0007-no-values-in-errors.md).
    const message = err instanceof Error ? err.message : String(err);
    // A render the TypeScript engine stopped early on the shared deadline says so itself.
    const stopped = (err as { timedOut?: unknown } | null)?.timedOut === true;
    return { id: req.id, ok: false, message, timedOut: stopped || performance.now() - started >= timeoutMs };
  }
}

warm();
port.postMessage({ idle: true });
port.on('message', (req: WorkerRequest) => {
  const reply = run(req);
  port.postMessage(reply);
  // The Go engine was stopped (deadline, memory): start the next one before taking work.
  if (!reply.ok) warm();
  port.postMessage({ idle: true });
});
