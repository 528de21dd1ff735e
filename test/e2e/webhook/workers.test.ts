// `esi webhook --workers 2` (docs/decisions/0046-bundled-entry.md): two admission servers on
// one port. Pods created through the apiserver are injected whichever worker answers, a
// scrape of /metrics shows the pod's counters (summed over the workers by the primary), and
// SIGTERM to the primary stops every worker.
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { request } from 'node:https';
import t from 'tap';
import { alive } from '../../support/platform/processes.js';
import { until } from '../../support/platform/until.js';
import { labelledPod, setupWebhook } from '../../support/fixtures/webhook.js';

const fx = await setupWebhook(t, ['--workers', '2']);

function scrape(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    // Each scrape on a new connection: the kernel's round robin spreads them over the workers.
    const req = request({ host: '127.0.0.1', port, path: '/metrics', rejectUnauthorized: false, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve(body));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The pids of the workers, from their "webhook serving" log lines (a worker's lines carry its pid). */
function servingPids(): number[] {
  const pids = fx.webhook.output().split('\n').filter((l) => l.includes('"webhook serving"')).map((l) => (JSON.parse(l) as { pid: number }).pid);
  return [...new Set(pids)];
}

t.test('two workers serve, each admission is injected, metrics are the pod\'s', async (t) => {
  const pids = await until('two workers logging "webhook serving"', async () => servingPids().length === 2 && servingPids());
  t.equal(pids.length, 2, 'two worker processes serve the port');
  const names = ['w-0', 'w-1', 'w-2', 'w-3', 'w-4', 'w-5'];
  for (const name of names) await fx.createPod(labelledPod(name, { 'esi.dev/secrets': 'db' }));
  const core = fx.kc.makeApiClient(CoreV1Api);
  for (const name of names) {
    const stored: V1Pod = await core.readNamespacedPod({ name, namespace: fx.ns });
    t.ok(stored.spec!.initContainers?.some((c) => c.name === 'esi-agent'), `${name} is stored with the agent`);
  }
  // Every scrape, whichever worker takes it, counts all six injections.
  for (let i = 0; i < 4; i++) {
    const text = await scrape(fx.webhook.port);
    t.match(text, /^esi_injections_total\{mode="native-sidecar"\} 6$/m, `scrape ${i + 1}: six injections, summed over the workers`);
    t.match(text, /^esi_cache_synced 1$/m, `scrape ${i + 1}: caches synced in every worker`);
  }
});

t.test('SIGTERM to the primary stops every worker', async (t) => {
  const pids = servingPids();
  t.equal(pids.length, 2, 'the two workers are known');
  await fx.webhook.stop();
  t.equal(fx.webhook.child.exitCode, 0, 'the webhook exits 0');
  t.ok(await until('the workers to exit', async () => pids.every((p) => !alive(p))), 'no worker outlives the primary');
  t.match(fx.webhook.output(), /stopping webhook workers/, 'the primary logs the shutdown');
});
