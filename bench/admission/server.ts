// Benchmark server process: the REAL admission server (webhook/server.ts buildServer) on
// 127.0.0.1 over HTTPS, with metrics, the product logger (createLogger; the runner sends
// stdout to /dev/null so the JSON lines are produced but no terminal I/O is measured) and an
// in-memory lookup over the generated cluster. Driven by the runner over IPC.
import type { AddressInfo } from 'node:net';
import { constants, monitorEventLoopDelay, performance, PerformanceObserver } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { TlsSource } from '../../certs/index.js';
import { generateCa, issueServingCert } from '../../certs/pki.js';
import { createLogger } from '../../src/log.js';
import { ManifestLookup } from '../../webhook/inject-cmd.js';
import { webhookMetrics } from '../../webhook/metrics.js';
import type { ObjectLookup } from '../../webhook/resolve.js';
import { buildServer } from '../../webhook/server.js';
import { serveParent } from '../lib/child.js';
import { buildCluster, clusterObjects, IndexedLookup } from './cluster.js';
import { BENCH_AGENT } from './corpus.js';

async function staticTls(): Promise<{ tls: TlsSource; caPem: string }> {
  const now = Date.now();
  const ca = await generateCa(now, 24 * 3600_000);
  const serving = await issueServingCert(ca, { dnsNames: ['localhost', 'esi-webhook.esi-system.svc'], ips: ['127.0.0.1'] }, now, 24 * 3600_000);
  const material = { certPem: serving.certPem, keyPem: serving.keyPem, caPem: ca.certPem };
  const tls: TlsSource = { current: () => material, onChange: () => undefined, ready: () => true, stop: async () => undefined };
  return { tls, caPem: ca.certPem };
}

async function main() {
  const { values } = parseArgs({ options: { lookup: { type: 'string', default: 'indexed' } } });
  const cluster = buildCluster();
  const base: ObjectLookup = values.lookup === 'manifest' ? new ManifestLookup(clusterObjects(cluster)) : new IndexedLookup(cluster);
  const lookup = Object.assign(base, { synced: () => true });
  const { tls, caPem } = await staticTls();
  const app = await buildServer({
    tls, lookup, metrics: webhookMetrics(), logger: createLogger('webhook'), resolve: {},
    agent: BENCH_AGENT,
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  let elu = performance.eventLoopUtilization();
  const loopDelay = monitorEventLoopDelay({ resolution: 5 });
  loopDelay.enable();
  let gc = { count: 0, totalMs: 0, maxMs: 0, major: 0 };
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gc.count++;
      gc.totalMs += e.duration;
      gc.maxMs = Math.max(gc.maxMs, e.duration);
      if ((e.detail as { kind?: number } | undefined)?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) gc.major++;
    }
  }).observe({ entryTypes: ['gc'] });
  serveParent({
    info: () => ({
      port, caPem, pid: process.pid, lookup: values.lookup,
      objects: { namespaces: cluster.namespaces.length, secretStores: cluster.secretStores.length, clusterSecretStores: cluster.clusterSecretStores.length, externalSecrets: cluster.externalSecrets.length },
    }),
    /** CPU time (µs) since start; event-loop utilisation and delay, GC pauses since the previous call; memory. */
    stats: () => {
      const now = performance.eventLoopUtilization();
      const delta = performance.eventLoopUtilization(now, elu);
      elu = now;
      const mem = process.memoryUsage();
      const delay = { p99Ms: loopDelay.percentile(99) / 1e6, maxMs: loopDelay.max / 1e6 };
      loopDelay.reset();
      const pauses = gc;
      gc = { count: 0, totalMs: 0, maxMs: 0, major: 0 };
      return { cpu: process.cpuUsage(), elu: delta.utilization, rss: mem.rss, heapUsed: mem.heapUsed, loopDelay: delay, gc: pauses };
    },
  }, async () => {
    await app.close();
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
