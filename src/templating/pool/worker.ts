// One thread of the reconciler's render pool (pool.ts; docs/decisions/0087-templating-engines.md).
// It runs the same render functions as the agent and the webhook (renderExternalSecretTemplate,
// transformKeys): the pool moves rendering off the main thread, it does not re-implement it.
// The Go-template engine's deadline and handlebars' budget (handlebars/budget.ts) stop most
// runaway templates here; the pool's deadline (terminate this thread) is the backstop.
import { parentPort, workerData } from 'node:worker_threads';
import { DEFAULT_RENDER_LIMITS } from '../handlebars/budget.js';
import { TemplateEngine } from '../handlebars/engine.js';
import { renderExternalSecretTemplate } from '../eso.js';
import { transformKeys } from '../go/index.js';
import type { WorkerReply, WorkerRequest } from './protocol.js';

const { timeoutMs } = workerData as { timeoutMs: number };
const engine = new TemplateEngine(256, { maxOutput: DEFAULT_RENDER_LIMITS.maxOutput, maxMillis: timeoutMs });
const port = parentPort!;

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
    // A render the Go-template engine stopped on its deadline says so itself.
    const stopped = (err as { timedOut?: unknown } | null)?.timedOut === true;
    return { id: req.id, ok: false, message, timedOut: stopped || performance.now() - started >= timeoutMs };
  }
}

port.postMessage({ idle: true });
port.on('message', (req: WorkerRequest) => {
  port.postMessage(run(req));
  port.postMessage({ idle: true });
});
