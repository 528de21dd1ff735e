// Shared pieces of the certificate integration tests: a harmless webhook configuration,
// an HTTPS server that hot-reloads from a TlsSource, and a client that trusts only what
// the webhook configuration publishes (exactly what the apiserver does).
import { AdmissionregistrationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { createServer, request, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { TlsSource } from '../../certs/tls-source.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/**
 * A MutatingWebhookConfiguration with two webhooks that can never fire: their
 * objectSelector wants a label no object carries, and failurePolicy is Ignore anyway.
 */
export async function createDummyWebhookConfig(kc: KubeConfig, t: Teardown, wanted?: string): Promise<string> {
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  const name = wanted ?? `esi-certs-test-${randomBytes(3).toString('hex')}`;
  const hook = (n: string) => ({
    name: `${n}.certs-test.esi.dev`,
    clientConfig: { url: 'https://127.0.0.1:1/mutate' },
    failurePolicy: 'Ignore',
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    timeoutSeconds: 1,
    objectSelector: { matchLabels: { 'esi.dev/certs-test-never': name } },
    rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
  });
  await api.createMutatingWebhookConfiguration({
    body: { metadata: { name }, webhooks: [hook('a'), hook('b')] },
  });
  t.teardown(() => api.deleteMutatingWebhookConfiguration({ name }).catch(() => undefined));
  return name;
}

/** The caBundle of each webhook, decoded to PEM. */
export async function publishedBundles(kc: KubeConfig, name: string): Promise<string[]> {
  const cfg = await kc.makeApiClient(AdmissionregistrationV1Api).readMutatingWebhookConfiguration({ name });
  return (cfg.webhooks ?? []).map((w) => Buffer.from(w.clientConfig?.caBundle ?? '', 'base64').toString('utf8'));
}

/** An HTTPS server on 127.0.0.1 serving src's material and swapping it on change, no restart. */
export async function startHttps(src: TlsSource): Promise<{ server: Server; port: number; reloads: () => number }> {
  const m = src.current();
  const server = createServer({ cert: m.certPem, key: m.keyPem }, (_req, res) => res.end('ok'));
  let reloads = 0;
  src.onChange((next) => {
    server.setSecureContext({ cert: next.certPem, key: next.keyPem });
    reloads++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, reloads: () => reloads };
}

export function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

export interface Probe {
  ok: boolean;
  serial?: string;
  issuer?: string;
  error?: string;
}

/**
 * One fresh TLS handshake + GET against 127.0.0.1:port trusting only caPem. Node's default
 * checkServerIdentity checks the 127.0.0.1 IP SAN; no agent, so no session reuse.
 */
export function probe(port: number, caPem: string): Promise<Probe> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/', ca: caPem, agent: false, timeout: 3000 }, (res) => {
      const cert = (res.socket as TLSSocket).getPeerCertificate();
      res.resume();
      res.on('end', () => resolve({ ok: res.statusCode === 200, serial: cert.serialNumber, issuer: cert.issuer?.CN }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve({ ok: false, error: err.message }));
    req.end();
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
