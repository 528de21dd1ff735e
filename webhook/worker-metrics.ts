// The metrics messages between `esi webhook --workers N`'s primary (webhook/workers.ts) and
// its workers (webhook/metrics.ts). A module of its own so the worker's metrics do not import
// the primary's entry module, which imports the webhook: no import cycle at run time.

export const METRICS_REQUEST = 'esi:metrics-request';
export const METRICS_ANSWER = 'esi:metrics-answer';
export interface MetricsMessage { type: string; id: number; text?: string; error?: string }

/** In a worker: the text of every worker's metrics, summed by the primary (prom-client's
 *  AggregatorRegistry), so a scrape that reaches any worker sees the pod's counters. */
export async function workersMetricsText(): Promise<string> {
  const id = nextId++;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error('the webhook primary did not answer the metrics request within 5 s')), 5000);
    const onMessage = (msg: MetricsMessage) => {
      if (msg?.type === METRICS_ANSWER && msg.id === id) done(msg.error === undefined ? undefined : new Error(msg.error), msg.text);
    };
    function done(err: Error | undefined, text?: string) {
      clearTimeout(timer);
      process.off('message', onMessage);
      if (err) reject(err);
      else resolve(text ?? '');
    }
    process.on('message', onMessage);
    process.send!({ type: METRICS_REQUEST, id });
  });
}
let nextId = 0;
