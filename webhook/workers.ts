// `esi webhook --workers N`: N admission servers in one pod, each a `node:cluster` worker
// running the whole webhook (caches, certificate, HTTPS server) on the one shared port; the
// primary only starts them, forwards SIGTERM and sums their metrics. One event loop serves
// about one core (docs/performance/webhook-throughput.md): workers are how a pod given more
// than one core uses it, at the memory of one more webhook each. This module is the `esi
// webhook` entry and stays small: the primary never loads the webhook's own modules.
import cluster, { type Worker } from 'node:cluster';
import { parseArgs } from 'node:util';
import { UsageError } from '../src/usage.js';
import { createLogger } from '../src/log.js';
import { METRICS_ANSWER, METRICS_REQUEST, type MetricsMessage } from './worker-metrics.js';

/** Bounded: each worker is a full webhook with its own watches on the apiserver. */
const MAX_WORKERS = 8;

/** The --workers value of `esi webhook`'s arguments (1 when absent); webhook/cmd.ts declares
 *  the flag in its help, this reads it before the webhook's modules load. */
function workersOf(argv: string[]): number {
  const { values } = parseArgs({ args: argv, options: { workers: { type: 'string' } }, strict: false, allowPositionals: true });
  const raw = values.workers;
  if (raw === undefined) return 1;
  const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= MAX_WORKERS)) throw new UsageError(`--workers must be a whole number from 1 to ${MAX_WORKERS}, got "${String(raw)}"`);
  return n;
}

export async function main(argv: string[]): Promise<number> {
  if (cluster.isPrimary && workersOf(argv) > 1) return primary(workersOf(argv));
  const code = await (await import('./cmd.js')).main(argv);
  // A worker's IPC channel (the metrics requests) would keep it alive after shutdown.
  if (cluster.isWorker) process.disconnect();
  return code;
}

/** Starts the workers and waits for them. A worker that exits on its own stops the others
 *  and the primary exits 1, so the kubelet restarts the pod rather than it serving with
 *  fewer loops than configured. */
async function primary(n: number): Promise<number> {
  const logger = createLogger('webhook', { flushMs: 250 });
  const { AggregatorRegistry } = await import('prom-client');
  const aggregator = new AggregatorRegistry();
  const workers = new Set<Worker>();
  let stopping = false;
  let exitCode = 0;
  const stopAll = () => {
    stopping = true;
    for (const w of workers) w.process.kill('SIGTERM');
  };
  cluster.on('message', (worker: Worker, msg: MetricsMessage) => {
    if (msg?.type !== METRICS_REQUEST) return;
    aggregator.clusterMetrics().then(
      (text) => worker.isConnected() && worker.send({ type: METRICS_ANSWER, id: msg.id, text }),
      (err: Error) => worker.isConnected() && worker.send({ type: METRICS_ANSWER, id: msg.id, error: err.message }),
    );
  });
  return new Promise((resolve) => {
    cluster.on('exit', (worker, code, signal) => {
      workers.delete(worker);
      if (!stopping) {
        logger.error({ worker: worker.id, code, signal }, 'webhook worker exited; stopping the others so the pod restarts');
        exitCode = 1;
        stopAll();
      }
      if (workers.size === 0) {
        logger.flush();
        resolve(exitCode);
      }
    });
    for (let i = 0; i < n; i++) workers.add(cluster.fork());
    logger.info({ workers: n }, 'webhook workers started');
    const shutdown = (signal: string) => {
      logger.info({ signal }, 'stopping webhook workers');
      stopAll();
    };
    process.once('SIGTERM', () => shutdown('SIGTERM'));
    process.once('SIGINT', () => shutdown('SIGINT'));
  });
}
