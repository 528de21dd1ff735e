// A forward proxy on 127.0.0.1 for tests of the providers' proxy support: CONNECT tunnels
// (https targets) and absolute-URI requests (http targets), each recorded as "host:port" so a
// test can tell which calls went through it. Stops at the test's teardown.
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { Test } from 'tap';

export interface ProxyServer {
  url: string;
  /** "CONNECT host:port" or "GET host:port" per request seen, in order. */
  seen: string[];
}

export async function startProxy(t: Test): Promise<ProxyServer> {
  const seen: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const target = new URL(req.url ?? '/');
    seen.push(`${req.method} ${target.host}`);
    const up = request(target, { method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.writeHead(502).end());
    req.pipe(up);
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
    seen.push(`CONNECT ${req.url}`);
    const [host, port] = (req.url ?? '').split(':');
    const up = connect(Number(port), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      up.write(head);
      up.pipe(client);
      client.pipe(up);
    });
    sockets.add(up);
    up.on('close', () => sockets.delete(up));
    up.on('error', () => client.destroy());
    client.on('error', () => up.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const VARS = ['HTTPS_PROXY', 'HTTP_PROXY', 'ALL_PROXY', 'NO_PROXY', 'https_proxy', 'http_proxy', 'all_proxy', 'no_proxy'];

/** Runs `fn` with exactly `vars` as the proxy environment, then restores it. */
export async function withProxyEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = VARS.map((n) => [n, process.env[n]] as const);
  for (const n of VARS) delete process.env[n];
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const [n, v] of saved) {
      if (v === undefined) delete process.env[n];
      else process.env[n] = v;
    }
  }
}
