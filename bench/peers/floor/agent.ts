// Node.js's own floor for a secrets agent: a bare `node` (node:http and node:fs only, no
// library, no product code) that reads the same KV v2 secrets from the same OpenBao with a
// token and writes the same file as the two agents of agents.ts, refreshing on the same period
// and writing only when the content changed (write to a temporary name, then rename). What a
// Node.js agent costs before any of its own code: start → file, RssAnon and CPU over the
// refreshes, measured by the same code as ESI's agent and OpenBao Agent. bench/peers/floors.ts
// compiles this file to plain JavaScript (type stripping only) and starts it with the agent's
// node binary and flags.
//
// Configuration in FLOOR_AGENT_CONFIG (JSON, like ESI_AGENT_CONFIG):
//   { addr, tokenFile, file, refreshSeconds, reads: [{ name, path, field }] }
// and the file's content is one `name=value` line per read.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import type * as Http from 'node:http';
import { createRequire } from 'node:module';

// Required, not imported: on Node.js 22 an ES module import of node:http reads every export,
// and three getters among them load undici, node:http2 and node:worker_threads (+5.5 MiB
// private memory; scripts/bundle.ts does the same for ESI's bundles).
const { request } = createRequire(import.meta.url)('node:http') as typeof Http;

interface Config {
  addr: string;
  tokenFile: string;
  file: string;
  refreshSeconds: number;
  reads: { name: string; path: string; field: string }[];
}

const config = JSON.parse(process.env.FLOOR_AGENT_CONFIG ?? '{}') as Config;
const token = readFileSync(config.tokenFile, 'utf8').trim();

function read(path: string): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const req = request(`${config.addr}/v1/${path}`, { headers: { 'x-vault-token': token }, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`GET ${path}: HTTP ${res.statusCode}`));
        resolve((JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data: { data: Record<string, string> } }).data.data);
      });
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer`)));
    req.on('error', reject);
    req.end();
  });
}

let last = '';
async function refresh(): Promise<void> {
  const values = await Promise.all(config.reads.map((r) => read(r.path).then((d) => `${r.name}=${d[r.field]}`)));
  const text = values.join('\n') + '\n';
  if (text === last) return;
  writeFileSync(`${config.file}.tmp`, text, { mode: 0o440 });
  renameSync(`${config.file}.tmp`, config.file);
  last = text;
}

const loop = () => refresh().catch((err: Error) => console.error(err.message)).finally(() => setTimeout(loop, config.refreshSeconds * 1000));
loop();
process.on('SIGTERM', () => process.exit(0));
