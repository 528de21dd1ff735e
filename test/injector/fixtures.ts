// Shared helpers of the agent tests: a fake-store config, a temp root, captured logs,
// a loopback HTTP GET. No network besides 127.0.0.1.
import { mkdtemp, rm } from 'node:fs/promises';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import type { Test } from 'tap';
import type { AgentConfig } from '../../src/agent-config/types.js';

/** Secret values that must never appear in logs, errors or metrics. */
export const CANARY_PASSWORD = 'CANARY-pw-5e1d0c7a';
export const CANARY_TOKEN = 'CANARY-tok-93b4aa10';
export const CANARIES = [CANARY_PASSWORD, CANARY_TOKEN];

export const STORE = 'SecretStore/team-a/fake';

export function fakeConfig(overrides: Partial<AgentConfig> = {}): AgentConfig {
  return {
    version: 1,
    mode: 'native-sidecar',
    pod: { namespace: 'team-a', name: 'app-0', serviceAccountName: 'app' },
    outputDir: '/var/run/esi/secrets',
    fileMode: 0o440,
    refreshSeconds: 60,
    port: 0,
    stores: {
      [STORE]: {
        kind: 'SecretStore',
        name: 'fake',
        provider: {
          fake: {
            data: [
              { key: 'db/creds', value: JSON.stringify({ username: 'app_user', password: CANARY_PASSWORD }) },
              { key: 'api/token', value: CANARY_TOKEN },
            ],
          },
        },
      },
    },
    secrets: [
      { name: 'db', store: STORE, data: [], dataFrom: [{ extract: { key: 'db/creds' } }] },
      { name: 'api', store: STORE, data: [{ secretKey: 'token', remoteRef: { key: 'api/token' } }], dataFrom: [] },
    ],
    templates: [{ file: 'app.conf', template: 'url=postgres://{{db.username}}:{{db.password}}@db/app\ntoken={{api.token}}\n' }],
    ...overrides,
  };
}

export async function tempRoot(tt: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'esi-agent-'));
  tt.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A pino logger whose lines are kept in memory. */
export function captureLogger(): { logger: Logger; lines: string[]; text: () => string } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      cb();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines, text: () => lines.join('\n') };
}

export function httpGet(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

export function assertNoCanary(tt: Test, text: string, where: string): void {
  for (const c of CANARIES) tt.notOk(text.includes(c), `${where} does not contain a secret value`);
}
