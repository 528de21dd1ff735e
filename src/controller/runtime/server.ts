// /healthz (the process and its event loop answer), /readyz (caches listed — or standing
// by for the Lease), and /metrics (Prometheus text) only when the operator asked for plain
// metrics (--metrics-secure=false; otherwise metrics-server.ts serves them, authenticated).
// Plain node:http: nothing else is served.
import { createServer, type Server } from 'node:http';

export interface ProbeSources {
  /** The exposition text and its content type (src/controller/runtime/metrics.ts). */
  registry: { contentType: string; metrics(): Promise<string> };
  ready(): boolean;
  /** Serve /metrics here, unauthenticated (default true). */
  metrics?: boolean;
}

export async function startProbeServer(host: string, port: number, src: ProbeSources): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') {
      res.writeHead(405).end();
    } else if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    } else if (path === '/readyz') {
      const ok = src.ready();
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok\n' : 'caches not synced\n');
    } else if (path === '/metrics' && src.metrics !== false) {
      src.registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': src.registry.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
