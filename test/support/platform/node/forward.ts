// A byte-for-byte TCP forwarder between network namespaces, through a unix socket (a file
// both namespaces see). The node runs one pair per direction it needs:
//
//   in the node's netns:  --listen tcp:10.96.0.1:443     --connect unix:<dir>/apiserver.sock
//   on the host:          --listen unix:<dir>/apiserver.sock --connect tcp:127.0.0.1:<port>
//
// so pods and the kubelet reach an apiserver that listens on the host's 127.0.0.1 only.
// TLS passes through untouched. Exits when its stdin closes (the node supervisor is gone).
//
//   tsx test/support/platform/node/forward.ts --listen tcp:HOST:PORT|unix:PATH --connect tcp:HOST:PORT|unix:PATH
import { rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { listen: { type: 'string' }, connect: { type: 'string' } } });

type Endpoint = { path: string } | { host: string; port: number };
function endpoint(spec: string | undefined): Endpoint {
  const m = /^(?:unix:(.+)|tcp:(.+):(\d+))$/.exec(spec ?? '');
  if (!m) {
    console.error(`forward: expected tcp:HOST:PORT or unix:PATH, got ${JSON.stringify(spec)}`);
    process.exit(2);
  }
  return m[1] ? { path: m[1] } : { host: m[2]!, port: Number(m[3]) };
}

const from = endpoint(values.listen);
const to = endpoint(values.connect);
if ('path' in from) rmSync(from.path, { force: true });

const server = createServer((client: Socket) => {
  const upstream = connect(to);
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close).on('close', close);
  upstream.on('error', close).on('close', close);
  client.pipe(upstream);
  upstream.pipe(client);
});
server.on('error', (err) => {
  console.error(`forward: ${values.listen}: ${err.message}`);
  process.exit(1);
});
server.listen(from, () => console.log(`forward: ${values.listen} -> ${values.connect}`));
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
process.stdin.on('close', () => process.exit(0));
