// A local HTTP(S) server on 127.0.0.1 for the stores reached over HTTP (webhook, and the
// stand-ins of 1Password Connect and Doppler, the Vault nodes of vault-transport.test.ts): records every request, closed at teardown.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

export interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void;

export interface StandIn {
  url: string;
  port: number;
  seen: Seen[];
  close(): Promise<void>;
}

export async function serve(t: { teardown(fn: () => unknown): void }, handler: Handler, tls?: https.ServerOptions): Promise<StandIn> {
  const seen: Seen[] = [];
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      try {
        handler(req, res, body);
      } catch {
        if (!res.headersSent) res.writeHead(500).end();
      }
    });
  };
  const server = tls ? https.createServer(tls, onRequest) : http.createServer(onRequest);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
  t.teardown(close);
  const port = (server.address() as AddressInfo).port;
  return { url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`, port, seen, close };
}

export const json = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
};
