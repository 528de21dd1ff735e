// A reverse proxy on 127.0.0.1 in front of an OpenBao/Vault server that forwards every
// request unchanged except the revocations (`sys/leases/revoke*`), which it answers 503 while
// `refusing` is on: the store that grants leases and refuses every revoke. Test-only;
// it stops at the test's teardown.
import { createServer, request } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface RevokeRefusingProxy {
  /** `http://127.0.0.1:<port>`: a VaultDynamicSecret's `provider.server`. */
  addr: string;
  /** Whether revocations are answered 503 (initially true). */
  refusing: boolean;
  /** Revocations answered 503 so far. */
  refused: number;
}

export async function startRevokeRefusingProxy(t: Teardown, upstream: string): Promise<RevokeRefusingProxy> {
  const target = new URL(upstream);
  const sockets = new Set<Socket>();
  const state: RevokeRefusingProxy = { addr: '', refusing: true, refused: 0 };
  const server = createServer((req, res) => {
    if (state.refusing && /^\/v1\/sys\/leases\/revoke/.test(req.url ?? '')) {
      state.refused++;
      req.resume();
      res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ errors: ['revocation unavailable (test proxy)'] }));
      return;
    }
    const up = request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host } }, (r) => {
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.addr = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.teardown(() => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy();
    server.close(() => resolve());
  }));
  return state;
}
