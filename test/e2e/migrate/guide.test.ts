// docs/migration.md played whole, on a private control plane with the garbage collector (a
// CRD is deleted here, which would disturb other files on the shared one): ESO's CRDs
// (../shared/reference/) installed by a Helm release that renders them as templates without
// `helm.sh/resource-policy: keep`, as ESO's chart does with installCRDs=true; a store, an
// ExternalSecret and its Secret owned by it; `esi migrate check` says the CRDs are unsafe and
// names the refused store; then the guide's steps — spec.controller: esi, the CRDs kept and
// taken out of ESO's release, `helm uninstall` of that release — and nothing is lost: the CRDs,
// the store, the ExternalSecret and the Secret with its value; the check then passes.
// On a guide without the keep step, `helm uninstall` deletes the CRDs and the garbage
// collector the Secret: what the first check's "unsafe" finding is about.
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { installCrds } from '../../../src/api/crds.js';
import { findHelm, Helm } from '../../support/helm.js';
import { esoBundleMissing, esoBundlePath } from '../../support/eso/schema.js';
import { esiProcess } from '../../support/webhook.js';
import { startControlPlane } from '../../support/platform/control-plane-process.js';
import { startController, until } from '../../support/fixtures/controller.js';

const CANARY = 'migrate-guide-canary-5d0e2b';
const missing = esoBundleMissing();
const helmFound = await findHelm();
// One test holding the others: tap waits for its promise (the set-up's awaits included).
t.test('the migration guide', { skip: missing ?? (helmFound.path ? false : helmFound.reason ?? 'no helm') }, async (t) => {
  const helm = new Helm(helmFound.path!);
  const dir = mkdtempSync(join(tmpdir(), 'esi-migrate-'));
  const cp = await startControlPlane(join(dir, 'cp'), { controllers: ['garbage-collector-controller'] });
  t.teardown(() => cp.stop());
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const kubeArgs = ['--kubeconfig', cp.kubeconfigPath];

  // ESO's chart as far as CRDs go: its CRDs as templates, behind installCRDs (default true).
  const chart = join(dir, 'external-secrets');
  mkdirSync(join(chart, 'templates'), { recursive: true });
  writeFileSync(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: external-secrets\nversion: 2.9.0\n');
  writeFileSync(join(chart, 'values.yaml'), 'installCRDs: true\n');
  writeFileSync(join(chart, 'templates', 'crds.yaml'), `{{- if .Values.installCRDs }}\n${readFileSync(esoBundlePath(), 'utf8')}\n{{- end }}\n`);
  const r = await helm.run(['install', 'external-secrets', chart, '--namespace', 'default', ...kubeArgs], 300_000);
  t.equal(r.code, 0, `ESO's release installed the CRDs (${r.stderr.trim()})`);
  // ESI beside it leaves ESO's CRDs as they are (installCrds installs only what is absent).
  await installCrds(kc);

  const ns = 'orders';
  await core.createNamespace({ body: { metadata: { name: ns } } });
  await core.createNamespace({ body: { metadata: { name: 'esi-system' } } });
  const group = { group: 'external-secrets.io', version: 'v1', namespace: ns };
  await custom.createNamespacedCustomObject({ ...group, plural: 'secretstores', body: {
    apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'fake' },
    spec: { provider: { fake: { data: [{ key: 'db', value: CANARY }] } } },
  } });
  // A store ESI refuses as it stands: a namespaced vault store with Kubernetes auth and no
  // ServiceAccount would log in as the controller.
  await custom.createNamespacedCustomObject({ ...group, plural: 'secretstores', body: {
    apiVersion: 'external-secrets.io/v1', kind: 'SecretStore', metadata: { name: 'vault-ambient' },
    spec: { provider: { vault: { server: 'https://vault.example:8200', auth: { kubernetes: { role: 'app' } } } } },
  } });
  await custom.createNamespacedCustomObject({ ...group, plural: 'externalsecrets', body: {
    apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name: 'db' },
    spec: { refreshInterval: '1h', secretStoreRef: { name: 'fake', kind: 'SecretStore' }, target: { name: 'db' }, data: [{ secretKey: 'password', remoteRef: { key: 'db' } }] },
  } });

  const check = async () => {
    const p = esiProcess(['migrate', 'check', ...kubeArgs, '-o', 'json']);
    const code = await new Promise<number | null>((res) => p.child.on('exit', res));
    const out = p.output();
    return { code, report: JSON.parse(out.slice(out.indexOf('{'))) as { ok: boolean; findings: { kind: string; name: string; verdict: string; reason?: string; fix?: string }[] } };
  };

  await t.test('before: the check says the CRDs are unsafe and names the refused store', async (t) => {
    const { code, report } = await check();
    t.equal(code, 1, 'exit 1 while something is refused or unsafe');
    const crd = report.findings.find((f) => f.name === 'externalsecrets.external-secrets.io');
    t.match(crd, { verdict: 'unsafe', reason: /Helm release default\/external-secrets owns it without helm\.sh\/resource-policy: keep/, fix: /kubectl annotate crd externalsecrets\.external-secrets\.io helm\.sh\/resource-policy=keep/ });
    t.match(report.findings.find((f) => f.name === 'vault-ambient'), { verdict: 'refused', reason: /names no ServiceAccount/ });
    t.match(report.findings.find((f) => f.kind === 'ExternalSecret' && f.name === 'db'), { verdict: 'other-class', fix: /spec\.controller: esi/ });
  });

  await t.test('the guide: move the store, keep the CRDs, uninstall ESO; nothing is lost', async (t) => {
    const ctl = await startController(cp.kubeconfigPath, ['--controller-class', 'esi', '--claim-unclassed=false', '--leader-elect=false', '--namespace', 'esi-system'], t);
    // Step 2: the store moves to ESI, which writes the Secret owned by its ExternalSecret.
    await custom.patchNamespacedCustomObject({ ...group, plural: 'secretstores', name: 'fake', body: [{ op: 'add', path: '/spec/controller', value: 'esi' }] });
    const secret = await until('the Secret ESI writes', async () => (await core.readNamespacedSecret({ namespace: ns, name: 'db' }).catch(() => undefined)));
    t.equal(Buffer.from(secret.data!.password!, 'base64').toString(), CANARY);
    t.match(secret.metadata?.ownerReferences, [{ kind: 'ExternalSecret', name: 'db', controller: true }], 'owned by its ExternalSecret, as ESO\'s are');
    await custom.deleteNamespacedCustomObject({ ...group, plural: 'secretstores', name: 'vault-ambient' });
    // Step 3: keep the CRDs, take them out of ESO's release, then uninstall it.
    const crds = (await ext.listCustomResourceDefinition()).items.filter((c) => c.spec.group.endsWith('external-secrets.io'));
    for (const c of crds) {
      await ext.patchCustomResourceDefinition({ name: c.metadata!.name!, body: [{ op: 'add', path: '/metadata/annotations/helm.sh~1resource-policy', value: 'keep' }] });
    }
    const up = await helm.run(['upgrade', 'external-secrets', chart, '--namespace', 'default', '--reuse-values', '--set', 'installCRDs=false', ...kubeArgs], 300_000);
    t.equal(up.code, 0, `helm upgrade --set installCRDs=false (${up.stderr.trim()})`);
    const down = await helm.run(['uninstall', 'external-secrets', '--namespace', 'default', ...kubeArgs], 300_000);
    t.equal(down.code, 0, `helm uninstall (${down.stderr.trim()})`);
    // Nothing lost, now and after the garbage collector had its chance (a marker object it
    // does delete shows it ran).
    const marker = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'gc-marker', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'gone', uid: '00000000-0000-0000-0000-000000000000' }] } } });
    await until('the garbage collector ran', async () => (await core.readNamespacedConfigMap({ namespace: ns, name: marker.metadata!.name! }).then(() => undefined, () => true)), 120_000);
    const left = (await ext.listCustomResourceDefinition()).items.filter((c) => c.spec.group.endsWith('external-secrets.io')).length;
    t.equal(left, crds.length, `every CRD is still there (${left})`);
    t.ok(await custom.getNamespacedCustomObject({ ...group, plural: 'externalsecrets', name: 'db' }), 'the ExternalSecret');
    t.ok(await custom.getNamespacedCustomObject({ ...group, plural: 'secretstores', name: 'fake' }), 'the store');
    const after = await core.readNamespacedSecret({ namespace: ns, name: 'db' });
    t.equal(Buffer.from(after.data!.password!, 'base64').toString(), CANARY, 'the Secret and its value');
    t.equal(after.metadata?.uid, secret.metadata?.uid, 'the same Secret, never deleted in between');
    await ctl.stop();
    t.notOk(ctl.output().includes(CANARY), 'no value in the controller log');
  });

  await t.test('after: the check passes', async (t) => {
    const { code, report } = await check();
    t.equal(code, 0, JSON.stringify(report.findings.filter((f) => f.verdict !== 'served' && f.verdict !== 'safe')));
    t.ok(report.findings.filter((f) => f.kind === 'CustomResourceDefinition').every((f) => f.verdict === 'safe'), 'every CRD is safe');
  });
});
