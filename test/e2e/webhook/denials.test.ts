// Every refusal goes through the real apiserver: the client sees the webhook's message,
// naming the annotation or object and what to fix, and nothing is stored.
import { CoreV1Api } from '@kubernetes/client-node';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { stringify } from 'yaml';
import { esiProcess } from '../../support/webhook.js';
import { labelledPod, setupWebhook } from '../../support/fixtures/webhook.js';

const fx = await setupWebhook(t);
const runId = (fx.manifests[2] as { metadata: { name: string } }).metadata.name.replace('shared-', '');

async function refused(t: Test, name: string, annotations: Record<string, string>, expected: RegExp[], spec = {}) {
  const err = await fx.createPod(labelledPod(name, annotations, spec)).then(() => undefined, (e: { code?: number; body?: string }) => e);
  t.ok(err, `pod ${name} was refused`);
  t.equal(err?.code, 403, 'as Forbidden');
  const message = (JSON.parse(err?.body ?? '{}') as { message?: string }).message ?? '';
  t.match(message, /admission webhook "inject.esi.dev" denied the request: ESI cannot inject secrets into pod/);
  for (const re of expected) t.match(message, re);
  await t.rejects(fx.kc.makeApiClient(CoreV1Api).readNamespacedPod({ name, namespace: fx.ns }), { code: 404 }, 'nothing stored');
  return message;
}

t.test('bad annotations', async (t) => {
  await refused(t, 'bad-mode', { 'esi.dev/secrets': 'db', 'esi.dev/mode': 'daemon' }, [/esi\.dev\/mode: must be one of native-sidecar, init-only, sidecar \(got "daemon"\)/]);
  await refused(t, 'bad-interval', { 'esi.dev/secrets': 'db', 'esi.dev/refresh-interval': 'often' }, [/esi\.dev\/refresh-interval: "often" must be a Go duration such as 30s/]);
  await refused(t, 'typo', { 'esi.dev/secret': 'db' }, [/esi\.dev\/secret: unknown annotation; did you mean esi\.dev\/secrets\?/, /esi\.dev\/secrets: required/]);
  await refused(t, 'bad-template', { 'esi.dev/secrets': 'db', 'esi.dev/template-app.conf': 'x={{db.password' }, [/esi\.dev\/template-app\.conf: the template does not parse: line 1, column \d+: syntax error/]);
  await refused(t, 'remote-reload', { 'esi.dev/secrets': 'db', 'esi.dev/on-change': 'http://10.0.0.1/reload' }, [/esi\.dev\/on-change: URL host "10\.0\.0\.1" is not loopback/]);
  await refused(t, 'signal', { 'esi.dev/secrets': 'db', 'esi.dev/on-change': 'signal:SIGHUP:nginx' }, [/needs spec\.shareProcessNamespace: true/]);
  // A sys/ path behind a Vault namespace prefix is still the system backend.
  await refused(t, 'sys-behind-ns', { 'esi.dev/dynamic-lookup': 'bao:ns1/sys/leases/lookup' }, [/esi\.dev\/dynamic-lookup: the engine path has a "sys" segment: a system path, not a secrets engine \(got "bao:ns1\/sys\/leases\/lookup"\)/]);
  await refused(t, 'climbing-path', { 'esi.dev/dynamic-db': 'ClusterSecretStore/bao:database/%2e%2e/sys/leases' }, [/esi\.dev\/dynamic-db: the engine path contains percent-encoding/]);
  await refused(t, 'no-container', { 'esi.dev/secrets': 'db', 'esi.dev/containers': 'web' }, [/esi\.dev\/containers: the pod has no container named "web"/]);
});

t.test('resolution and access rules', async (t) => {
  await refused(t, 'missing-es', { 'esi.dev/secrets': 'db,nope' }, [new RegExp(`ExternalSecret "nope" not found in namespace "${fx.ns}"; create it before the pod`)]);
  await refused(t, 'excluded-ns', { 'esi.dev/secrets': 'restricted' }, [new RegExp(`ClusterSecretStore "restricted-${runId}" may not be used from namespace "${fx.ns}": its spec.conditions do not admit namespace`)]);
  await refused(t, 'cross-creds', { 'esi.dev/secrets': 'crossns' }, [new RegExp(`vault.auth.tokenSecretRef references Secret "${fx.otherNs}/root-token" in another namespace`), /use pod identity or a SecretStore/]);
});

t.test('a store that names another ServiceAccount is refused', async (t) => {
  const custom = (await import('@kubernetes/client-node')).CustomObjectsApi;
  const api = fx.kc.makeApiClient(custom);
  await api.createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: fx.ns, plural: 'secretstores', body: {
    apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'as-admin' },
    spec: { provider: { kubernetes: { remoteNamespace: 'kube-system', auth: { serviceAccount: { name: 'cluster-admin-sa' } } } } },
  } });
  await api.createNamespacedCustomObject({ group: 'external-secrets.io', version: 'v1', namespace: fx.ns, plural: 'externalsecrets', body: {
    apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'escalate' },
    spec: { secretStoreRef: { name: 'as-admin' }, data: [{ secretKey: 'k', remoteRef: { key: 'admin-token' } }] },
  } });
  await new Promise((r) => setTimeout(r, 300));
  await refused(t, 'escalate', { 'esi.dev/secrets': 'escalate' }, [/kubernetes.auth.serviceAccount names ServiceAccount ".*\/cluster-admin-sa" but the pod runs as ".*\/default"/]);
});

t.test('esi inject gives the same denial offline', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'esi-inject-'));
  const file = join(dir, 'all.yaml');
  const pod = labelledPod('offline', { 'esi.dev/secrets': 'restricted' });
  pod.metadata!.namespace = fx.ns;
  const ns = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: fx.ns, labels: { 'esi-test-run': runId } } };
  await writeFile(file, [...fx.manifests, ns, pod].map((o) => stringify(o)).join('---\n'));
  const p = esiProcess(['inject', '-f', file]);
  const code = await new Promise((r) => p.child.on('exit', r));
  t.equal(code, 1, 'exit 1 on denial');
  t.match(p.output(), new RegExp(`ESI cannot inject secrets into pod "offline": ClusterSecretStore "restricted-${runId}" may not be used`));
});
