// The reference plugin as a command:
//
//   npx tsx examples/grpc-plugin/main.ts --listen 127.0.0.1:50051 --data secrets.json \
//       --tls-cert server.crt --tls-key server.key [--client-ca ca.crt]
//
//   --listen      host:port to listen on (default 127.0.0.1:50051; port 0 = any free port)
//   --data        JSON file {"key": "value" | {...}} loaded into the in-memory store
//                 (objects are stored as their JSON text); writes stay in memory
//   --tls-cert    PEM serving certificate (with --tls-key)
//   --tls-key     PEM key of the serving certificate
//   --client-ca   PEM CA: require client certificates it signed (mTLS)
//   --insecure    serve plaintext (no --tls-*): local experiments only
//
// Logs (JSON, pino) name methods, keys and outcomes, never values. SIGTERM/SIGINT stop it.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { startPluginServer } from './server.js';

const USAGE = 'usage: main.ts [--listen host:port] [--data file.json] (--tls-cert crt --tls-key key [--client-ca ca] | --insecure)';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      listen: { type: 'string', default: '127.0.0.1:50051' },
      data: { type: 'string' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
      'client-ca': { type: 'string' },
      insecure: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  const logger = pino({ name: 'esi-grpc-plugin' });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const certFile = values['tls-cert'];
  const keyFile = values['tls-key'];
  if (!certFile !== !keyFile) throw new Error(`--tls-cert and --tls-key go together\n${USAGE}`);
  if (!certFile && !values.insecure) throw new Error(`give --tls-cert and --tls-key, or --insecure to serve plaintext\n${USAGE}`);
  if (!certFile && values['client-ca']) throw new Error('--client-ca needs --tls-cert and --tls-key');

  const data = values.data ? (JSON.parse(await readFile(values.data, 'utf8')) as Record<string, unknown>) : {};
  if (data === null || typeof data !== 'object' || Array.isArray(data)) throw new Error(`${values.data}: expected a JSON object of key → value`);
  const tls = certFile && keyFile
    ? {
        cert: await readFile(certFile),
        key: await readFile(keyFile),
        ...(values['client-ca'] ? { clientCa: await readFile(values['client-ca']) } : {}),
      }
    : undefined;

  const server = await startPluginServer({ listen: values.listen, data, ...(tls ? { tls } : {}), logger });
  logger.info({ keys: Object.keys(data).length }, 'store loaded');
  const stop = (signal: string) => {
    logger.info({ signal }, 'stopping');
    void server.stop().then(() => process.exit(0));
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`esi-grpc-plugin: ${(err as Error).message}\n`);
  process.exit(1);
});
