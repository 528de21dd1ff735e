// The controller's secure /metrics (docs/metrics.md, "Authentication"): HTTPS on its own port,
// answered only to a caller whose bearer token the apiserver accepts and who may `get`
// /metrics (src/kube/access-review.ts). The probes stay on the plain probe port (kubelet
// probes carry no token). The certificate comes from the certs/ sources: mounted files
// (cert-manager) or one the replicas keep in a Secret of their namespace, as the webhook does.
import type { KubeConfig } from '@kubernetes/client-node';
import { createServer, type Server } from 'node:https';
import type { Logger } from 'pino';
import { fileTlsSource, selfManagedTlsSource, type TlsSource } from '../../../certs/index.js';
import type { MetricsAccessReview } from '../../kube/access-review.js';

export interface MetricsTlsFlags {
  certFile?: string;
  keyFile?: string;
  secretName: string;
  serviceName: string;
}

/** The serving certificate of the secure metrics port: files when given, else self-managed. */
export function metricsTls(f: MetricsTlsFlags, o: { kc: KubeConfig; namespace: string; logger: Logger }): Promise<TlsSource> {
  if (f.certFile && f.keyFile) return fileTlsSource({ certFile: f.certFile, keyFile: f.keyFile, logger: o.logger });
  return selfManagedTlsSource({
    kc: o.kc, namespace: o.namespace, logger: o.logger, secretName: f.secretName, serviceName: f.serviceName, purpose: 'metrics',
  });
}

/** The exposition text and its content type (src/controller/runtime/metrics.ts). */
export interface Exposition { contentType: string; metrics(): Promise<string> }

export interface SecureMetricsSources {
  registry: Exposition;
  tls: TlsSource;
  access: MetricsAccessReview;
  logger: Logger;
}

export async function startSecureMetricsServer(host: string, port: number, src: SecureMetricsSources): Promise<Server> {
  const material = src.tls.current();
  const server = createServer({ cert: material.certPem, key: material.keyPem }, (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') return void res.writeHead(405).end();
    if (path !== '/metrics') return void res.writeHead(404).end();
    void src.access.check(req.headers.authorization).then(async (v) => {
      if (v.status !== 200) {
        src.logger.debug({ status: v.status, user: v.user }, 'metrics request refused');
        return void res.writeHead(v.status, { 'content-type': 'text/plain' }).end(`${v.message}\n`);
      }
      const text = await src.registry.metrics();
      res.writeHead(200, { 'content-type': src.registry.contentType }).end(text);
    }).catch(() => res.writeHead(500).end());
  });
  src.tls.onChange((m) => {
    server.setSecureContext({ cert: m.certPem, key: m.keyPem });
    src.logger.info('metrics serving certificate reloaded');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
