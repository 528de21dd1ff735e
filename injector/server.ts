// The agent's tiny HTTP server: `/readyz` answers 200 only after the first complete
// render (the native sidecar's startup probe, which gates the app containers),
// `/healthz` says the process is serving, `/metrics` is Prometheus text. Nothing here
// can return a secret value: the handlers only read flags and the metrics registry.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

export interface AgentServer {
  readonly port: number;
  close(): Promise<void>;
}

export interface ServerOptions {
  port: number;
  /** Listen address; all interfaces when omitted (kubelet probes the pod IP). */
  host?: string;
  isReady: () => boolean;
  /** The metrics registry, created on the first /metrics request. */
  registry: () => Promise<Registry>;
  logger: Logger;
}

function handler(opts: ServerOptions): Parameters<typeof createServer>[1] {
  return (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, body: string, type = 'text/plain; charset=utf-8'): void => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'method not allowed\n');
    if (path === '/healthz') return send(200, 'ok\n');
    if (path === '/readyz') return opts.isReady() ? send(200, 'ready\n') : send(503, 'first render not complete\n');
    if (path === '/metrics') {
      opts
        .registry()
        .then(async (registry) => [await registry.metrics(), registry.contentType] as const)
        .then(
          ([text, type]) => send(200, text, type),
          (err: unknown) => {
            opts.logger.warn({ err: (err as Error).message }, 'metrics collection failed');
            send(500, 'metrics unavailable\n');
          },
        );
      return;
    }
    send(404, 'not found\n');
  };
}

export async function startServer(opts: ServerOptions): Promise<AgentServer> {
  const server: Server = createServer(handler(opts));
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  opts.logger.debug({ port }, 'health and metrics server listening');
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
