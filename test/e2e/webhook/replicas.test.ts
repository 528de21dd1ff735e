// Several webhook replicas started at once against one apiserver: exactly one CA wins,
// every replica serves a certificate from it, and the apiserver trusts all of them.
// Then a short certificate lifetime shows rotation without admission failures.
import { AdmissionregistrationV1Api, CoreV1Api, type V1MutatingWebhook } from '@kubernetes/client-node';
import { X509Certificate } from 'node:crypto';
import { connect } from 'node:tls';
import t, { type Test } from 'tap';
import { installCrds } from '../../../src/api/crds.js';
import { freePort } from '../../support/platform/processes.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import { createNamespace } from '../../support/kube.js';
import { startWebhook, waitForCaBundle, webhookConfiguration } from '../../support/webhook.js';

const cp = await useControlPlane(t);
const kc = cp.kc;
await installCrds(kc);

function servedCert(port: number): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const raw = s.getPeerCertificate().raw;
      s.end();
      resolve(new X509Certificate(raw));
    });
    s.on('error', reject);
  });
}

async function setup(t: Test, extraArgs: string[]) {
  const ports = [await freePort(), await freePort(), await freePort()];
  const base = webhookConfiguration(`esi-replicas-${ports[0]}`, '', `r${ports[0]}`);
  const template = base.webhooks![0]!;
  // One webhook entry per replica, each selecting its own pods, so every replica must
  // be trusted by the apiserver for all pods to be admitted.
  base.webhooks = ports.map((port, i): V1MutatingWebhook => ({
    ...template, name: `replica-${i}.esi.dev`, clientConfig: { url: `https://127.0.0.1:${port}/mutate` },
    objectSelector: { matchLabels: { 'esi.dev/inject': 'true', replica: String(i) } },
  }));
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  await admission.createMutatingWebhookConfiguration({ body: base });
  t.teardown(() => admission.deleteMutatingWebhookConfiguration({ name: base.metadata!.name! }).catch(() => undefined));
  const systemNs = await createNamespace(kc, 'esi-system', t);
  const appNs = await createNamespace(kc, 'replicas', t, { 'esi-test-run': `r${ports[0]}` });
  const hooks = await Promise.all(ports.map((port) => startWebhook({
    kubeconfigPath: cp.kubeconfigPath, namespace: systemNs, configName: base.metadata!.name!, port, extraArgs,
  })));
  t.teardown(() => Promise.all(hooks.map((h) => h.stop())));
  const custom = (await import('@kubernetes/client-node')).CustomObjectsApi;
  const api = kc.makeApiClient(custom);
  await api.createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: appNs, plural: 'secretstores', body: {
    apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'k8s' },
    spec: { provider: { kubernetes: { remoteNamespace: appNs, auth: { serviceAccount: { name: 'default' } } } } } } });
  await api.createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: appNs, plural: 'externalsecrets', body: {
    apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'db' },
    spec: { secretStoreRef: { name: 'k8s' }, data: [{ secretKey: 'password', remoteRef: { key: 'db', property: 'password' } }] } } });
  await new Promise((r) => setTimeout(r, 500));
  return { ports, hooks, systemNs, appNs, configName: base.metadata!.name! };
}

let podSeq = 0;
async function admitThroughEach(appNs: string, n: number): Promise<number> {
  const core = kc.makeApiClient(CoreV1Api);
  let injected = 0;
  for (let i = 0; i < n; i++) {
    const pod = await core.createNamespacedPod({ namespace: appNs, body: {
      metadata: { name: `p${podSeq++}`, labels: { 'esi.dev/inject': 'true', replica: String(i) }, annotations: { 'esi.dev/secrets': 'db' } },
      spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
    } });
    if (pod.spec!.initContainers?.some((c) => c.name === 'esi-agent')) injected++;
  }
  return injected;
}

t.test('three replicas started together share one CA and are all trusted', async (t) => {
  const { ports, systemNs, appNs, configName } = await setup(t, []);
  const secrets = await kc.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: systemNs });
  t.equal(secrets.items.filter((s) => s.metadata!.name === `${configName}-tls`).length, 1, 'one TLS Secret');
  const caPem = Buffer.from(await waitForCaBundle(kc, configName), 'base64').toString();
  const ca = new X509Certificate(caPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/)![0]);
  const certs = await Promise.all(ports.map(servedCert));
  for (const [i, cert] of certs.entries()) t.ok(cert.checkIssued(ca) && cert.verify(ca.publicKey), `replica ${i} serves a certificate issued by the published CA`);
  t.equal(new Set(certs.map((c) => c.serialNumber)).size, 1, 'all replicas serve the same certificate');
  t.equal(await admitThroughEach(appNs, 3), 3, 'the apiserver admitted a pod through every replica over TLS');
});

t.test('rotation with a short certificate lifetime keeps admission working', async (t) => {
  // 12 s: renewed at two thirds, with room for a loaded CI machine's scheduling delays.
  const { ports, appNs } = await setup(t, ['--cert-validity', '12']);
  const first = await servedCert(ports[0]!);
  let rotated: X509Certificate | undefined;
  let injected = 0;
  for (let i = 0; i < 30 && !rotated; i++) {
    injected += await admitThroughEach(appNs, 3);
    const now = await servedCert(ports[0]!);
    if (now.serialNumber !== first.serialNumber) rotated = now;
    await new Promise((r) => setTimeout(r, 500));
  }
  t.ok(rotated, 'the serving certificate was renewed before it expired');
  t.ok(injected > 0 && injected % 3 === 0, `every pod created during rotation was admitted (${injected})`);
  // Replicas pick up a rotation made by another one on their next check.
  let serials = 0;
  for (let i = 0; i < 40 && serials !== 1; i++) {
    serials = new Set((await Promise.all(ports.map(servedCert))).map((c) => c.serialNumber)).size;
    if (serials !== 1) await new Promise((r) => setTimeout(r, 500));
  }
  t.equal(serials, 1, 'all replicas converge on one certificate');
});
