// A stand-in for a service-mesh injector (Istio, Linkerd with native sidecars): a second
// mutating webhook, ordered to run after ESI's, that appends a proxy to the pod's
// initContainers as a native sidecar (restartPolicy: Always). A small fastify TLS server
// on 127.0.0.1 with its own CA; it stops at the test's teardown, or after `lifetimeMs`.
import { AdmissionregistrationV1Api, type KubeConfig, type V1Container, type V1Pod } from '@kubernetes/client-node';
import Fastify from 'fastify';
import { generateCa, issueServingCert } from '../../certs/pki.js';

export const MESH_PROXY = 'mesh-proxy';

export interface MeshWebhook {
  /** Init container names of every pod the mesh webhook was sent, in order. */
  seen: string[][];
}

interface Review {
  request: { uid: string; object: V1Pod };
}

export interface MeshOptions {
  /** The proxy container beyond its name and restartPolicy (default: an image never run). */
  proxy?: Omit<V1Container, 'name' | 'restartPolicy'>;
  /** Further labels a namespace needs to be served (default: `esi-test-run=<runId>` alone). */
  namespaceLabels?: Record<string, string>;
  lifetimeMs?: number;
}

/** Runs the mesh webhook and registers it for the namespaces labelled `esi-test-run=<runId>`.
 *  Its configuration is named `zz-mesh-<runId>`: the apiserver calls webhooks in the order of
 *  their configurations' names, so it runs after ESI's `esi-test-<runId>`. */
export async function startMeshWebhook(kc: KubeConfig, runId: string, t: { teardown(fn: () => unknown): void }, opts: MeshOptions = {}): Promise<MeshWebhook> {
  const now = Date.now();
  const ca = await generateCa(now, 3_600_000);
  const serving = await issueServingCert(ca, { dnsNames: [], ips: ['127.0.0.1'] }, now, 3_600_000);
  const seen: string[][] = [];
  const app = Fastify({ https: { cert: serving.certPem, key: serving.keyPem } });
  app.post('/mutate', async (req) => {
    const { uid, object: pod } = (req.body as Review).request;
    const inits = pod.spec?.initContainers ?? [];
    seen.push(inits.map((c) => c.name));
    const proxy: V1Container = { image: 'registry.example/mesh-proxy:1', ...opts.proxy, name: MESH_PROXY, restartPolicy: 'Always' };
    // Like a real injector: once per pod (a reinvocation must not add a second proxy).
    const patch = inits.some((c) => c.name === MESH_PROXY) ? []
      : pod.spec?.initContainers ? [{ op: 'add', path: '/spec/initContainers/-', value: proxy }] : [{ op: 'add', path: '/spec/initContainers', value: [proxy] }];
    const response = { uid, allowed: true, ...(patch.length ? { patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(patch)).toString('base64') } : {}) };
    return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as { port: number };
  const stop = setTimeout(() => void app.close(), opts.lifetimeMs ?? 10 * 60_000).unref();
  const name = `zz-mesh-${runId}`;
  const api = kc.makeApiClient(AdmissionregistrationV1Api);
  await api.createMutatingWebhookConfiguration({
    body: {
      apiVersion: 'admissionregistration.k8s.io/v1', kind: 'MutatingWebhookConfiguration', metadata: { name },
      webhooks: [{
        name: 'inject.mesh.example',
        clientConfig: { url: `https://127.0.0.1:${port}/mutate`, caBundle: Buffer.from(ca.certPem).toString('base64') },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        namespaceSelector: { matchLabels: { 'esi-test-run': runId, ...opts.namespaceLabels } },
        failurePolicy: 'Fail', sideEffects: 'None', admissionReviewVersions: ['v1'], timeoutSeconds: 10, reinvocationPolicy: 'Never',
      }],
    },
  });
  t.teardown(async () => {
    clearTimeout(stop);
    await api.deleteMutatingWebhookConfiguration({ name }).catch(() => undefined);
    await app.close();
  });
  return { seen };
}
