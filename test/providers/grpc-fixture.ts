// Shared set-up of the grpc provider tests (grpc.test.ts, grpc-failures.test.ts): ESI's
// reference plugin (examples/grpc-plugin) in process on 127.0.0.1 with certificates
// generated for this run, provider clients with TLS material, and small helpers.
import t from 'tap';
import type { MemoryStore } from '../../examples/grpc-plugin/backend.js';
import { generateCa, generateDevPki, issue } from '../../examples/grpc-plugin/dev-certs.js';
import { startPluginServer, type PluginServer } from '../../examples/grpc-plugin/server.js';
import { provider } from '../../src/providers/grpc/index.js';
import { type SecretsClient } from '../../src/providers/types.js';
import { freePort } from '../platform/processes.js';
import { testContext } from './context.js';

export const CANARY = 'CANARY-grpc-7f3a19';
export const pki = await generateDevPki(['127.0.0.1', 'localhost'], 'esi-agent');
export const otherCa = await generateCa('some-other-ca');
export const strangerClient = await issue(otherCa, 'client', 'stranger');

export async function plugin(opts: { mtls?: boolean; backend?: MemoryStore } = {}): Promise<PluginServer> {
  const server = await startPluginServer({
    tls: { cert: pki.server.cert, key: pki.server.key, ...(opts.mtls ? { clientCa: pki.ca.cert } : {}) },
    ...(opts.backend ? { backend: opts.backend } : {}),
  });
  t.teardown(() => server.stop());
  return server;
}


export type Creds = Record<string, string>;
export const caOnly: Creds = { 'plugin-tls/ca.crt': pki.ca.cert };
export const mtlsCreds: Creds = { ...caOnly, 'plugin-tls/tls.crt': pki.client.cert, 'plugin-tls/tls.key': pki.client.key };

export function client(storeId: string, url: string, credentials: Creds | undefined, timeoutMs = 3000): Promise<SecretsClient> {
  return provider.newClient(testContext({
    storeId, namespace: 'team-a', timeoutMs, credentials: credentials ?? {},
    spec: { url, ...(credentials ? { tlsSecretRef: { name: 'plugin-tls' } } : {}) },
  }));
}

export { providerError as caught } from './context.js';

export async function closedPort(): Promise<number> {
  return freePort();
}
