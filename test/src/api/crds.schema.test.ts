// Structure of ESI's CRDs (charts/esi/files/crds/), checked without a cluster: what a
// GitOps user and `kubectl get` rely on. The apiserver test (test/e2e/api/crds.test.ts)
// proves the same manifests are accepted and validate as intended.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { crdDirectory, loadCrdManifests, loadCrds, packageRoot } from '../../../src/api/crds.js';
import { API_GROUP, GENERATOR_RESOURCES, GENERATORS_GROUP, OTHER_PROVIDER_NAMES, providerName } from '../../../src/api/types.js';
import { PROVIDER_NAMES } from '../../../src/providers/registry.js';

const all = await loadCrds();
const crds = all.filter((c) => c.spec.group === API_GROUP);
const generators = all.filter((c) => c.spec.group === GENERATORS_GROUP);
const byKind = new Map(crds.map((c) => [c.spec.names.kind, c]));

/** A schema node as written in the YAML (the client model renames the x-kubernetes-* keys). */
interface RawSchema {
  type?: string;
  properties?: Record<string, RawSchema>;
  items?: RawSchema;
  additionalProperties?: RawSchema | boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-validations'?: { rule: string; message?: string }[];
}
interface RawCrd {
  spec: { names: { kind: string }; versions: { schema: { openAPIV3Schema: RawSchema } }[] };
}
/** Every CRD of charts/esi/files/crds/, both groups. */
const raw = (await loadCrdManifests()) as unknown as RawCrd[];
const rawByKind = new Map(raw.map((c) => [c.spec.names.kind, c]));

/** Every node of a schema with its JSON path. */
function* walk(node: unknown, path: string): Generator<[string, Record<string, unknown>]> {
  if (node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const [i, v] of node.entries()) yield* walk(v, `${path}[${i}]`);
    return;
  }
  const obj = node as Record<string, unknown>;
  yield [path, obj];
  for (const [k, v] of Object.entries(obj)) yield* walk(v, `${path}.${k}`);
}

/** Schema nodes only (properties / items / additionalProperties), for the structural checks. */
function* schemaNodes(schema: RawSchema, path: string): Generator<[string, RawSchema]> {
  yield [path, schema];
  for (const [k, v] of Object.entries(schema.properties ?? {})) yield* schemaNodes(v, `${path}.${k}`);
  if (schema.items !== undefined) yield* schemaNodes(schema.items, `${path}[]`);
  const ap = schema.additionalProperties;
  if (ap !== undefined && typeof ap === 'object') yield* schemaNodes(ap, `${path}{}`);
}

function schemaOf(crd: RawCrd | undefined): RawSchema {
  const s = crd?.spec.versions[0]?.schema.openAPIV3Schema;
  if (s === undefined) throw new Error('no schema');
  return s;
}

t.test('the package root and CRD directory are found from the module', async (t) => {
  const root = packageRoot();
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { name: string };
  t.equal(pkg.name, 'esi');
  t.equal(crdDirectory(), join(root, 'charts', 'esi', 'files', 'crds'));
});

t.test('six CRDs of the external-secrets.io group', async (t) => {
  t.same(
    crds.map((c) => c.metadata?.name),
    [
      'clusterexternalsecrets.external-secrets.io',
      'clusterpushsecrets.external-secrets.io',
      'clustersecretstores.external-secrets.io',
      'externalsecrets.external-secrets.io',
      'pushsecrets.external-secrets.io',
      'secretstores.external-secrets.io',
    ],
  );
  for (const crd of crds) {
    t.equal(crd.apiVersion, 'apiextensions.k8s.io/v1');
    t.equal(crd.spec.group, API_GROUP);
    t.equal(crd.metadata?.name, `${crd.spec.names.plural}.${API_GROUP}`);
    t.same(crd.spec.names.categories, ['external-secrets'], `${crd.spec.names.kind} category`);
  }
  for (const kind of ['ClusterSecretStore', 'ClusterExternalSecret', 'ClusterPushSecret']) t.equal(byKind.get(kind)?.spec.scope, 'Cluster');
  for (const kind of ['ExternalSecret', 'SecretStore', 'PushSecret']) t.equal(byKind.get(kind)?.spec.scope, 'Namespaced');
  const shortNames = Object.fromEntries(crds.map((c) => [c.spec.names.kind, c.spec.names.shortNames]));
  t.same(shortNames, {
    ExternalSecret: ['es'], SecretStore: ['ss'], ClusterSecretStore: ['css'], PushSecret: ['ps'],
    ClusterExternalSecret: ['ces'], ClusterPushSecret: undefined,
  });
});

t.test('the generators.external-secrets.io CRDs: ESO\'s kinds, v1alpha1, ClusterGenerator cluster-scoped', async (t) => {
  t.same(generators.map((c) => c.spec.names.kind).sort(), [...Object.keys(GENERATOR_RESOURCES), 'GeneratorState'].sort());
  for (const crd of generators) {
    const kind = crd.spec.names.kind;
    t.equal(crd.metadata?.name, `${crd.spec.names.plural}.${GENERATORS_GROUP}`);
    t.same(crd.spec.names.categories, ['external-secrets', 'external-secrets-generators'], `${kind} categories`);
    t.same(crd.spec.versions.map((v) => [v.name, v.served, v.storage]), [['v1alpha1', true, true]], `${kind} version`);
    t.equal(crd.spec.scope, kind === 'ClusterGenerator' ? 'Cluster' : 'Namespaced', `${kind} scope`);
    if (kind in GENERATOR_RESOURCES) t.equal(crd.spec.names.plural, GENERATOR_RESOURCES[kind as keyof typeof GENERATOR_RESOURCES]);
  }
});

t.test('served versions: v1 (v1alpha1 for PushSecret and ClusterPushSecret), each storage, status subresource and printer columns', async (t) => {
  for (const crd of crds) {
    const kind = crd.spec.names.kind;
    t.same(
      crd.spec.versions.map((v) => v.name),
      [kind.endsWith('PushSecret') ? 'v1alpha1' : 'v1'],
      `${kind} versions`,
    );
    for (const v of crd.spec.versions) {
      t.ok(v.served && v.storage, `${kind}/${v.name} served and storage`);
      t.same(v.subresources?.status, {}, `${kind}/${v.name} has the status subresource`);
      t.ok((v.additionalPrinterColumns ?? []).length > 0, `${kind}/${v.name} has printer columns`);
      t.ok(v.schema?.openAPIV3Schema?.properties?.status, `${kind}/${v.name} has a status schema`);
    }
  }
});

t.test('printer columns', async (t) => {
  const cols = (kind: string) =>
    (byKind.get(kind)?.spec.versions[0]?.additionalPrinterColumns ?? []).map((c) => [c.name, c.jsonPath]);
  const reason = '.status.conditions[?(@.type=="Ready")].reason';
  const status = '.status.conditions[?(@.type=="Ready")].status';
  t.same(cols('ExternalSecret'), [
    ['Store', '.spec.secretStoreRef.name'],
    ['Refresh Interval', '.spec.refreshInterval'],
    ['Status', reason],
    ['Ready', status],
    ['Age', '.metadata.creationTimestamp'],
  ]);
  const store = [
    ['Age', '.metadata.creationTimestamp'],
    ['Status', reason],
    ['Capabilities', '.status.capabilities'],
    ['Ready', status],
  ];
  t.same(cols('SecretStore'), store);
  t.same(cols('ClusterSecretStore'), store);
  t.same(cols('PushSecret'), [
    ['Age', '.metadata.creationTimestamp'],
    ['Status', reason],
  ]);
  t.same(cols('ClusterPushSecret'), cols('PushSecret'));
  t.same(cols('ClusterExternalSecret'), [
    ['Store', '.spec.externalSecretSpec.secretStoreRef.name'],
    ['Refresh Interval', '.spec.refreshTime'],
    ['Ready', status],
    ['Age', '.metadata.creationTimestamp'],
  ]);
});

t.test('no default anywhere (GitOps tools would see drift)', async (t) => {
  for (const crd of raw) {
    const defaults = [...walk(crd.spec, 'spec')].filter(([, node]) => 'default' in node).map(([p]) => p);
    t.same(defaults, [], `${crd.spec.names.kind} sets no default`);
  }
  for (const crd of crds) {
    const defaults = [...walk(crd.spec, 'spec')].filter(([, node]) => node._default !== undefined).map(([p]) => p);
    t.same(defaults, [], `${crd.spec.names.kind} (client model) sets no default`);
  }
});

t.test('schemas are structural: every node is typed unless it preserves unknown fields', async (t) => {
  for (const crd of raw) {
    const untyped = [...schemaNodes(schemaOf(crd), '')]
      .filter(([, s]) => s.type === undefined && s['x-kubernetes-preserve-unknown-fields'] !== true && s['x-kubernetes-int-or-string'] !== true)
      .map(([p]) => p);
    t.same(untyped, [], `${crd.spec.names.kind}: untyped nodes`);
  }
});

t.test('every CEL rule carries a message a user can act on', async (t) => {
  let rules = 0;
  for (const crd of raw) {
    for (const [path, node] of schemaNodes(schemaOf(crd), '')) {
      rules += (node['x-kubernetes-validations'] ?? []).length;
      for (const v of node['x-kubernetes-validations'] ?? []) {
        t.ok(v.message && v.message.length > 20, `${crd.spec.names.kind}${path}: rule ${v.rule} has a message`);
      }
    }
  }
  // The schema keeps only rules about ESI's own grpc provider: every stricter check of
  // the external-secrets.io API is made at admission, where ESO documents stay valid.
  t.ok(rules >= 1, `${rules} CEL rules`);
  // The client model must carry them too, or installCrds would create CRDs without them.
  const typedRules = JSON.stringify(crds).match(/"x_kubernetes_validations"/g)?.length ?? 0;
  t.ok(typedRules > 0, 'loadCrds() keeps the CEL rules in the client model');
});

t.test('SecretStore and ClusterSecretStore accept the same providers', async (t) => {
  const provider = (kind: string) => schemaOf(rawByKind.get(kind)).properties?.spec?.properties?.provider;
  t.same(provider('SecretStore'), provider('ClusterSecretStore'));
  const names = Object.keys(provider('SecretStore')?.properties ?? {}).sort();
  t.same(names, [...PROVIDER_NAMES, ...OTHER_PROVIDER_NAMES].sort(), 'the CRD lists the providers the registry serves and the ones types.ts accepts');
  for (const other of OTHER_PROVIDER_NAMES) {
    t.equal(provider('SecretStore')?.properties?.[other]?.['x-kubernetes-preserve-unknown-fields'], true, `${other} is free-form`);
  }
  t.equal(provider('SecretStore')?.['x-kubernetes-validations'], undefined, 'no "exactly one provider" rule: admission checks it');
});

t.test('the cluster-scoped kinds embed the namespaced specs (freshness: test/scripts/generate.test.ts)', async (t) => {
  const spec = (kind: string) => schemaOf(rawByKind.get(kind)).properties?.spec;
  t.same(spec('ClusterExternalSecret')?.properties?.externalSecretSpec?.properties, spec('ExternalSecret')?.properties);
  t.same(spec('ClusterPushSecret')?.properties?.pushSecretSpec?.properties, spec('PushSecret')?.properties);
});

t.test('providerName()', async (t) => {
  t.equal(providerName({ fake: { data: [] } }), 'fake');
  t.equal(providerName({ onepassword: {} }), 'onepassword');
  t.equal(providerName({}), undefined);
  t.equal(providerName({ fake: { data: [] }, grpc: { url: 'x:1' } }), undefined);
});

t.test('the examples hold what the demo relies on', async (t) => {
  const docs = async (file: string) =>
    parseAllDocuments(await readFile(join(packageRoot(), 'examples', file), 'utf8')).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string; namespace?: string }; spec?: Record<string, unknown> },
    );
  const stores = await docs('stores.yaml');
  const fake = stores.find((d) => d.kind === 'SecretStore' && d.metadata.name === 'fake');
  t.equal(fake?.metadata.namespace, 'demo');
  const keys = ((fake?.spec?.provider as { fake: { data: { key: string }[] } }).fake.data ?? []).map((d) => d.key);
  t.ok(keys.includes('username') && keys.includes('password'), 'fake store serves username and password');
  const providers = new Set(stores.filter((d) => d.spec?.provider).map((d) => Object.keys(d.spec?.provider as object)[0]));
  t.same([...providers].sort(), ['fake'], 'examples run end to end with nothing installed (test/examples/)');

  const es = await docs('externalsecrets.yaml');
  const db = es.find((d) => d.kind === 'ExternalSecret' && d.metadata.name === 'db');
  t.equal(db?.metadata.namespace, 'demo');
  t.same((db?.spec?.secretStoreRef as { name: string }).name, 'fake');
  t.same(
    (db?.spec?.data as { remoteRef: { key: string } }[]).map((d) => d.remoteRef.key),
    ['username', 'password'],
  );
  const push = await docs('pushsecret.yaml');
  t.ok(push.some((d) => d.kind === 'PushSecret'));
});
