// Shared pieces of the certificate integration tests: a harmless webhook configuration,
// an HTTPS server that hot-reloads from a TlsSource, and a client that trusts only what
// the webhook configuration publishes (exactly what the apiserver does).
import { AdmissionregistrationV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { createServer, request, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
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

/**
 * A MutatingWebhookConfiguration whose webhooks call the given local ports with
 * failurePolicy Fail, for pods labelled `esi-certs-test: <selector>` only: a pod created
 * with that label is admitted only if the apiserver's TLS client trusts every replica.
 */
export async function createLocalWebhookConfig(kc: KubeConfig, t: Teardown, name: string, ports: number[], selector: string): Promise<void> {
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  const webhooks = ports.map((port, i) => ({
    name: `replica-${i}.certs-test.esi.dev`,
    clientConfig: { url: `https://127.0.0.1:${port}/mutate` },
    failurePolicy: 'Fail',
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    timeoutSeconds: 5,
    objectSelector: { matchLabels: { 'esi-certs-test': selector } },
    rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
  }));
  await api.createMutatingWebhookConfiguration({ body: { metadata: { name }, webhooks } });
  t.teardown(() => api.deleteMutatingWebhookConfiguration({ name }).catch(() => undefined));
}

/** Creates a labelled pod through the apiserver (and so through the webhooks); returns its annotations. */
export async function createPodThroughWebhooks(kc: KubeConfig, namespace: string, selector: string): Promise<Record<string, string>> {
  const pod = await kc.makeApiClient(CoreV1Api).createNamespacedPod({
    namespace,
    body: {
      metadata: { generateName: 'certs-', labels: { 'esi-certs-test': selector }, annotations: { 'esi-certs-test': 'pod' } },
      spec: { containers: [{ name: 'c', image: 'registry.invalid/none:1' }] },
    },
  });
  return pod.metadata?.annotations ?? {};
}

/** The caBundle of each webhook, decoded to PEM. */
export async function publishedBundles(kc: KubeConfig, name: string): Promise<string[]> {
  const cfg = await kc.makeApiClient(AdmissionregistrationV1Api).readMutatingWebhookConfiguration({ name });
  return (cfg.webhooks ?? []).map((w) => Buffer.from(w.clientConfig?.caBundle ?? '', 'base64').toString('utf8'));
}

/** Annotation each test replica's admission handler adds, so a test sees who was called. */
export const seenAnnotation = (replica: number): string => `esi-certs-test-replica-${replica}`;

/**
 * Answers AdmissionReviews (POST) by allowing the object and annotating it with
 * seenAnnotation(replica); anything else gets "ok".
 */
function handler(replica: number) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    if (req.method !== 'POST') {
      res.end('ok');
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { request: { uid: string } };
      const patch = [{ op: 'add', path: `/metadata/annotations/${seenAnnotation(replica)}`, value: 'seen' }];
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({
        apiVersion: 'admission.k8s.io/v1',
        kind: 'AdmissionReview',
        response: {
          uid: review.request.uid, allowed: true, patchType: 'JSONPatch',
          patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
        },
      }));
    });
  };
}

/** An HTTPS server on 127.0.0.1 serving src's material and swapping it on change, no restart. */
export async function startHttps(src: TlsSource, replica = 0): Promise<{ server: Server; port: number; reloads: () => number }> {
  const m = src.current();
  const server = createServer({ cert: m.certPem, key: m.keyPem }, handler(replica));
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
