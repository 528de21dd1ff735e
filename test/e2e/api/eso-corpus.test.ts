// A corpus of ESO-style documents (every field of every served external-secrets.io kind
// of ESO's published CRDs, every store provider; see eso-corpus.ts) applied to ESI's CRDs
// on a real kube-apiserver with strict field validation: all accepted, stored unchanged
// (nothing pruned, nothing defaulted).
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { ApiException, CustomObjectsApi } from '@kubernetes/client-node';
import { installCrds } from '../../../src/api/crds.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import { createNamespace } from '../../support/kube.js';
import { esoCorpus, schemaPaths, valuePaths, type CorpusDocument } from '../../support/eso/corpus.js';
import { esoBundleMissing, loadEsoCrds, servedVersions } from '../../support/eso/schema.js';

const skip = esoBundleMissing() ?? false;
const corpus = skip ? [] : esoCorpus();

t.test('the corpus sets every field ESO defines and every provider', { skip }, async (t) => {
  for (const crd of loadEsoCrds()) {
    for (const v of servedVersions(crd)) {
      const spec = v.schema.openAPIV3Schema.properties?.spec;
      if (!spec) continue;
      const wanted = schemaPaths(spec, 'spec', new Set());
      const covered = new Set<string>();
      for (const d of corpus.filter((c) => c.kind === crd.spec.names.kind && c.apiVersion.endsWith(`/${v.name}`))) valuePaths(d.spec, 'spec', covered);
      const missing = [...wanted].filter((p) => !covered.has(p));
      t.same(missing, [], `${crd.spec.names.kind}/${v.name}: ${wanted.size} field paths covered`);
    }
  }
  const providers = new Set(corpus.filter((d) => d.kind === 'SecretStore').map((d) => Object.keys(d.spec.provider as object)[0]));
  t.ok(providers.size >= 40, `${providers.size} providers`);
  for (const p of ['vault', 'aws', 'azurekv', 'gcpsm', 'kubernetes', 'fake', 'openBao', 'ovh', 'barbican', 'crd', 'dvls']) t.ok(providers.has(p), `provider ${p}`);
});

const cp = await useControlPlane(t);
const custom = cp.kc.makeApiClient(CustomObjectsApi);
const suffix = randomBytes(3).toString('hex');

function apiMessage(err: unknown): string {
  if (err instanceof ApiException) return typeof err.body === 'string' ? err.body : JSON.stringify(err.body);
  return err instanceof Error ? err.message : String(err);
}

t.test('ESI\'s CRDs accept every corpus document unchanged, with strict field validation', { skip }, async (t) => {
  await installCrds(cp.kc);
  const namespace = await createNamespace(cp.kc, 'esi-eso-corpus', t);
  const created: { plural: string; version: string; name: string }[] = [];
  t.teardown(async () => {
    for (const c of created) {
      await custom.deleteClusterCustomObject({ group: 'external-secrets.io', version: c.version, plural: c.plural, name: c.name }).catch(() => undefined);
    }
  });
  const failures: string[] = [];
  let accepted = 0;
  const one = async (doc: CorpusDocument, i: number): Promise<void> => {
    const version = doc.apiVersion.split('/')[1]!;
    const name = `corpus-${i}-${suffix}`;
    const body = { apiVersion: doc.apiVersion, kind: doc.kind, metadata: { name }, spec: doc.spec };
    const ref = { group: 'external-secrets.io', version, plural: doc.plural, body, fieldValidation: 'Strict' };
    try {
      const stored = (doc.namespaced
        ? await custom.createNamespacedCustomObject({ ...ref, namespace })
        : await custom.createClusterCustomObject(ref)) as { spec: unknown };
      if (!doc.namespaced) created.push({ plural: doc.plural, version, name });
      if (JSON.stringify(stored.spec) === JSON.stringify(doc.spec) || t.strictSame(stored.spec, doc.spec, `${doc.label}: stored unchanged`)) accepted++;
    } catch (err) {
      failures.push(`${doc.label}: ${apiMessage(err).slice(0, 600)}`);
    }
  };
  // A few requests in flight keep the run short without loading the apiserver.
  let next = 0;
  await Promise.all(Array.from({ length: 6 }, async () => {
    while (next < corpus.length) {
      const i = next++;
      await one(corpus[i]!, i);
    }
  }));
  t.same(failures, [], 'no corpus document is rejected');
  t.equal(accepted, corpus.length, `${corpus.length} documents accepted and stored unchanged`);
});
