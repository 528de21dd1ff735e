// The chart's CRDs (docs/install.md): rendered from files/crds/ behind installCRDs and External
// Secrets Operator's per-kind toggles, marked as ESI's and kept on uninstall; then, with the
// pinned helm on a private control plane (its CRDs are created and deleted here, which the
// shared plane's other tests must not see): a release creates them, upgrades them and leaves
// them on uninstall; CRDs an older chart's crds/ created become the release's once marked;
// installed after ESO's chart, with ESO's CRDs present, it succeeds and
// leaves every one of them as ESO's chart left it, installing only a kind ESO left out.
import { ApiextensionsV1Api, KubeConfig, PatchStrategy, setHeaderOptions, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { installCrds, loadCrdManifests, loadCrds } from '../../../src/api/crds.js';
import { startControlPlane } from '../../support/platform/control-plane-process.js';
import { until } from '../../support/platform/until.js';
import { CHART, findHelm, Helm, ofKind, parseManifests, type K8sObject } from '../../support/helm.js';

const NS = 'esi-system';
const KEEP = 'helm.sh/resource-policy';
const MARK = 'app.kubernetes.io/part-of';

type Crd = K8sObject & { spec: { names: { kind: string } } };
const crdsOf = (objs: K8sObject[]) => ofKind(objs, 'CustomResourceDefinition') as Crd[];
const kinds = (objs: K8sObject[]) => crdsOf(objs).map((c) => c.spec.names.kind).sort();

const found = await findHelm();
if (found.path) await suite(new Helm(found.path));
else t.plan(0, `helm is not available, chart CRD tests skipped: ${found.reason}`);

async function suite(helm: Helm): Promise<void> {
  const shipped = await loadCrdManifests();
  const allKinds = shipped.map((c) => (c as { spec: { names: { kind: string } } }).spec.names.kind).sort();

  t.test('installCRDs (default): every shipped CRD, as generated, marked as ESI\'s and kept on uninstall', async (t) => {
    t.notOk(existsSync(join(CHART, 'crds')), 'no crds/ folder: Helm would create those on install only and never upgrade them');
    const crds = crdsOf(await helm.template('esi', NS));
    t.equal(crds.length, 13);
    t.same(kinds(crds), allKinds, 'the CRDs of files/crds/ (npm run generate writes them)');
    for (const crd of crds) {
      const source = shipped.find((s) => (s as { metadata: { name: string } }).metadata.name === crd.metadata.name) as { spec: unknown } | undefined;
      t.same(crd.spec, source?.spec, `${crd.metadata.name}: the generated schema, unchanged by the template`);
      t.equal(crd.metadata.annotations?.[KEEP], 'keep', `${crd.metadata.name}: helm uninstall keeps it (and its objects)`);
      t.equal(crd.metadata.labels?.[MARK], 'esi', `${crd.metadata.name}: ESI's mark, read by --claim-unclassed=auto`);
    }
  });

  t.test('installCRDs=false renders none; each ESO toggle removes its kind only; crds.annotations adds', async (t) => {
    t.same(crdsOf(await helm.template('esi', NS, ['--set', 'installCRDs=false'])), []);
    const toggles: [string, string][] = [
      ['createClusterExternalSecret', 'ClusterExternalSecret'], ['createClusterSecretStore', 'ClusterSecretStore'],
      ['createClusterPushSecret', 'ClusterPushSecret'], ['createClusterGenerator', 'ClusterGenerator'], ['createPushSecret', 'PushSecret'],
    ];
    for (const [value, kind] of toggles) {
      t.same(kinds(await helm.template('esi', NS, ['--set', `crds.${value}=false`])), allKinds.filter((k) => k !== kind), `crds.${value}=false: no ${kind}`);
    }
    const annotated = crdsOf(await helm.template('esi', NS, ['--set', 'crds.annotations.argocd\\.argoproj\\.io/sync-options=ServerSideApply=true']));
    t.match(annotated[0]!.metadata.annotations, { [KEEP]: 'keep', 'argocd.argoproj.io/sync-options': 'ServerSideApply=true' });
    const bad = await helm.run(['template', 'esi', CHART, '--set', 'crds.createSecretStores=false']);
    t.match(bad.stderr, /additional properties 'createSecretStores' not allowed/, 'the schema refuses an unknown toggle');
  });

  t.test('on a real apiserver', async (t) => {
    const cp = await startControlPlane(await mkdtemp(join(tmpdir(), 'esi-chart-crds-')));
    t.teardown(() => cp.stop());
    const kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfigPath);
    const api = kc.makeApiClient(ApiextensionsV1Api);
    const names = shipped.map((c) => (c as { metadata: { name: string } }).metadata.name);
    const read = (name: string) => api.readCustomResourceDefinition({ name }).catch(() => undefined);
    const helmIn = (ns: string) => ['--namespace', ns, '--create-namespace', '--kubeconfig', cp.kubeconfigPath];
    // Deleting a CRD waits for the apiserver's finalizer to remove its objects. Right after an
    // update its storage may be "(re)initializing": the finalizer's list fails and its retry
    // backs off exponentially (minutes). Any update of the CRD queues it again at once, so a
    // CRD still there is touched while waiting.
    const deleteAll = async () => {
      for (const name of names) await api.deleteCustomResourceDefinition({ name });
      await until('the CRDs are deleted', async () => {
        const left = (await Promise.all(names.map(read))).filter((c) => c !== undefined);
        for (const c of left) {
          await api.patchCustomResourceDefinition({ name: c.metadata!.name!, body: { metadata: { annotations: { 'esi.dev/test-retry': String(Date.now()) } } } },
            setHeaderOptions('Content-Type', PatchStrategy.MergePatch)).catch(() => undefined);
        }
        return left.length === 0;
      }, 120_000);
    };
    const run = async (args: string[]) => {
      const r = await helm.run(args, 180_000);
      if (r.code !== 0) throw new Error(`helm ${args.slice(0, 2).join(' ')} failed: ${r.stderr}`);
      return r;
    };

    t.test('alone: helm install creates them, helm upgrade upgrades them, helm uninstall keeps them', async (t) => {
      await run(['install', 'esi', CHART, ...helmIn(NS)]);
      for (const name of names) {
        const crd = await read(name);
        t.match(crd?.metadata, { labels: { [MARK]: 'esi' }, annotations: { [KEEP]: 'keep', 'meta.helm.sh/release-name': 'esi' } }, `${name} created by the release`);
      }
      await run(['upgrade', 'esi', CHART, ...helmIn(NS), '--reuse-values', '--set', 'crds.annotations.team=platform']);
      t.equal((await read('externalsecrets.external-secrets.io'))?.metadata?.annotations?.team, 'platform', 'helm upgrade changed the CRD');
      await run(['upgrade', 'esi', CHART, ...helmIn(NS), '--reuse-values', '--set', 'crds.createPushSecret=false']);
      t.ok(await read('pushsecrets.external-secrets.io'), 'a kind turned off stays installed (resource-policy keep)');
      await run(['uninstall', 'esi', '--namespace', NS, '--kubeconfig', cp.kubeconfigPath, '--wait']);
      for (const name of names) t.ok(await read(name), `${name} kept by helm uninstall`);
      // Start the next case from a cluster without them.
      await deleteAll();
    });

    t.test("from a chart with crds/: left alone, and owned by the release once marked as docs/install.md says", async (t) => {
      // What Helm's crds/ created: ESI's CRDs with ESI's mark and no release.
      await installCrds(kc);
      await run(['install', 'esi', CHART, ...helmIn(NS)]);
      const crd = await read('externalsecrets.external-secrets.io');
      t.notOk(crd?.metadata?.annotations?.[KEEP], 'belongs to no release: not taken over silently');
      // docs/install.md, "Upgrading": kubectl annotate … meta.helm.sh/release-name=esi …; kubectl label … managed-by=Helm
      for (const name of names) {
        await api.patchCustomResourceDefinition({ name, body: {
          metadata: { annotations: { 'meta.helm.sh/release-name': 'esi', 'meta.helm.sh/release-namespace': NS }, labels: { 'app.kubernetes.io/managed-by': 'Helm' } },
        } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
      }
      await run(['upgrade', 'esi', CHART, ...helmIn(NS), '--reuse-values']);
      for (const name of names) t.equal((await read(name))?.metadata?.annotations?.[KEEP], 'keep', `${name}: now the release's, upgraded with it`);
      await run(['uninstall', 'esi', '--namespace', NS, '--kubeconfig', cp.kubeconfigPath, '--wait']);
      await deleteAll();
    });

    t.test("after ESO's chart, with ESO's CRDs present: the install succeeds and leaves them as they are", async (t) => {
      // What ESO's chart (installCRDs=true, crds.createClusterPushSecret=false) leaves: the
      // same schemas, without ESI's mark, owned by its Helm release.
      const eso = (await loadCrds())
        .filter((c) => c.metadata!.name !== 'clusterpushsecrets.external-secrets.io')
        .map((c): V1CustomResourceDefinition => {
          delete c.metadata!.labels![MARK];
          c.metadata!.labels!['app.kubernetes.io/managed-by'] = 'Helm';
          c.metadata!.annotations = { 'meta.helm.sh/release-name': 'external-secrets', 'meta.helm.sh/release-namespace': 'external-secrets' };
          return c;
        });
      await installCrds(kc, { crds: eso });
      const before = new Map(await Promise.all(eso.map(async (c) => [c.metadata!.name!, (await read(c.metadata!.name!))!.metadata!.resourceVersion] as const)));
      const r = await run(['install', 'esi', CHART, ...helmIn('esi-next-to-eso')]);
      t.match(r.stdout, /STATUS: deployed/);
      for (const [name, version] of before) {
        const crd = await read(name);
        t.equal(crd?.metadata?.resourceVersion, version, `${name}: ESO's, not modified`);
        t.equal(crd?.metadata?.annotations?.['meta.helm.sh/release-name'], 'external-secrets', `${name}: still ESO's release's`);
        t.notOk(crd?.metadata?.labels?.[MARK], `${name}: no ESI mark, so ESI's controller leaves unclassed stores to ESO`);
      }
      const added = await read('clusterpushsecrets.external-secrets.io');
      t.match(added?.metadata, { labels: { [MARK]: 'esi' }, annotations: { 'meta.helm.sh/release-name': 'esi' } }, 'the kind ESO left out is installed by ESI');
      const manifest = parseManifests((await run(['get', 'manifest', 'esi', '--namespace', 'esi-next-to-eso', '--kubeconfig', cp.kubeconfigPath])).stdout);
      t.same(crdsOf(manifest).map((c) => c.metadata.name), ['clusterpushsecrets.external-secrets.io'], 'the release holds only the CRD it created');
      const up = await run(['upgrade', 'esi', CHART, ...helmIn('esi-next-to-eso'), '--reuse-values', '--set', 'logLevel=debug']);
      t.match(up.stdout, /has been upgraded/);
      for (const [name, version] of before) t.equal((await read(name))?.metadata?.resourceVersion, version, `${name}: untouched by helm upgrade`);
    });
  });
}
