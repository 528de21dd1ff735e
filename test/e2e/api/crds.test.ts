// ESI's external-secrets.io CRDs against a real kube-apiserver: they install (only when
// absent) and become Established; every valid fixture and example applies unchanged
// (nothing defaulted, nothing pruned); every invalid fixture is rejected with the
// message its `# expect:` line names; `kubectl get es` shows the promised columns.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { request } from 'node:https';
import type { RequestOptions } from 'node:https';
import { basename, join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import {
  ApiextensionsV1Api,
  ApiException,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
} from '@kubernetes/client-node';
import type { KubernetesObject } from '@kubernetes/client-node';
import { installCrds, loadCrds, packageRoot } from '../../../src/api/crds.js';
import { API_GROUP, GENERATORS_GROUP } from '../../../src/api/types.js';
import { startControlPlane } from '../../support/platform/control-plane-process.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import { createNamespace } from '../../support/kube.js';

interface Manifest extends KubernetesObject {
  spec?: unknown;
}

const ROOT = packageRoot();
const FIXTURES = join(ROOT, 'test', 'support', 'fixtures', 'manifests');
const FIELD_MANAGER = 'esi-crds-test';
const suffix = randomBytes(3).toString('hex');

const cp = await useControlPlane(t);
const kc = cp.kc;
const objects = KubernetesObjectApi.makeApiClient(kc);

async function readManifests(file: string): Promise<{ docs: Manifest[]; expect?: string }> {
  const text = await readFile(file, 'utf8');
  const expect = /^# expect: (.+)$/m.exec(text)?.[1]?.trim();
  const docs = parseAllDocuments(text)
    .map((d) => d.toJS() as Manifest | null)
    .filter((d): d is Manifest => d !== null);
  return { docs, expect };
}

async function yamlFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort().map((f) => join(dir, f));
}

/** The apiserver's own message (Status.message) of a failed call. */
function apiMessage(err: unknown): string {
  if (err instanceof ApiException) {
    let body: unknown = err.body;
    if (typeof err.body === 'string') {
      try {
        body = JSON.parse(err.body);
      } catch {
        return err.body;
      }
    }
    const msg = (body as { message?: unknown } | null)?.message;
    return typeof msg === 'string' ? msg : String(err.message);
  }
  return err instanceof Error ? err.message : String(err);
}

/** Puts a manifest in the test namespace; cluster-scoped objects get a unique name. */
function place(doc: Manifest, namespace: string): Manifest {
  const copy = structuredClone(doc);
  copy.metadata = { ...copy.metadata };
  if (copy.kind === 'ClusterSecretStore') copy.metadata.name = `${copy.metadata.name}-${suffix}`;
  else copy.metadata.namespace = namespace;
  return copy;
}

const cleanup: Manifest[] = [];

/** Server-side apply, retried briefly while discovery catches up with new CRDs. */
async function apply(doc: Manifest): Promise<Manifest> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const out = await objects.patch(doc, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
      if (doc.kind === 'ClusterSecretStore') cleanup.push(doc);
      return out as Manifest;
    } catch (err) {
      const discoveryLag =
        (err instanceof Error && /Unrecognized API version and kind|Failed to fetch resource metadata/.test(err.message)) ||
        (err instanceof ApiException && err.code === 404);
      if (!discoveryLag || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

t.teardown(async () => {
  for (const doc of cleanup) await objects.delete(doc).catch(() => undefined);
});

const crdNames = (await loadCrds()).map((c) => c.metadata?.name ?? '').sort();

t.test('installCrds creates what is absent and waits until Established', async (t) => {
  const first = await installCrds(kc);
  t.same([...first.created, ...first.existing].sort(), crdNames, 'every CRD is created or already there');

  const api = kc.makeApiClient(ApiextensionsV1Api);
  const versions: Record<string, string | undefined> = {};
  for (const name of crdNames) {
    const crd = await api.readCustomResourceDefinition({ name });
    const established = crd.status?.conditions?.find((c) => c.type === 'Established');
    t.equal(established?.status, 'True', `${name} is Established`);
    versions[name] = crd.metadata?.resourceVersion;
  }

  const second = await installCrds(kc);
  t.same(second.created, [], 'a second install creates nothing');
  t.same([...second.existing].sort(), crdNames);
  for (const name of crdNames) {
    const crd = await api.readCustomResourceDefinition({ name });
    t.equal(crd.metadata?.resourceVersion, versions[name], `${name} was left untouched`);
  }
});

t.test('discovery: short names and the external-secrets category', async (t) => {
  // installCrds waited for discovery: discovery-based clients work right away.
  for (const [version, kind] of [['v1', 'ExternalSecret'], ['v1', 'SecretStore'], ['v1', 'ClusterSecretStore'], ['v1alpha1', 'PushSecret']]) {
    const list = await objects.list<KubernetesObject>(`${API_GROUP}/${version}`, kind ?? '');
    t.ok(Array.isArray(list.items), `${kind} is listable through discovery`);
  }
  const api = kc.makeApiClient(ApiextensionsV1Api);
  for (const name of crdNames) {
    const crd = await api.readCustomResourceDefinition({ name });
    const accepted = crd.status?.acceptedNames;
    t.same(accepted?.shortNames, crd.spec.names.shortNames, `${name} short names accepted`);
    t.same(accepted?.categories, crd.spec.names.categories);
    t.ok(crd.spec.names.categories?.includes('external-secrets'), `${name}: kubectl get external-secrets lists it`);
  }
});

t.test('valid fixtures and examples apply unchanged', async (t) => {
  const namespace = await createNamespace(kc, 'esi-api-crds', t);
  const files = [
    ...(await yamlFiles(join(FIXTURES, 'valid'))),
    join(ROOT, 'examples', 'stores.yaml'),
    join(ROOT, 'examples', 'externalsecrets.yaml'),
    join(ROOT, 'examples', 'pushsecret.yaml'),
    join(ROOT, 'examples', 'generators.yaml'),
    join(ROOT, 'examples', 'stores-as-sinks', 'producer.yaml'),
    join(ROOT, 'examples', 'stores-as-sinks', 'consumer.yaml'),
  ];
  for (const file of files) {
    const { docs } = await readManifests(file);
    for (const doc of docs) {
      if (doc.kind === 'Namespace') continue; // the test namespace stands in for `demo`
      const input = place(doc, namespace);
      const label = `${basename(file)}: ${doc.kind}/${doc.metadata?.name}`;
      try {
        const stored = await apply(input);
        if (doc.apiVersion?.startsWith(`${API_GROUP}/`) || doc.apiVersion?.startsWith(`${GENERATORS_GROUP}/`)) {
          t.same(stored.spec, doc.spec, `${label} is stored exactly as written`);
          t.strictSame(JSON.parse(JSON.stringify(stored.spec)), JSON.parse(JSON.stringify(doc.spec)), `${label}: no defaults, no pruning`);
        } else {
          t.pass(`${label} applied`);
        }
      } catch (err) {
        t.fail(`${label} was rejected: ${apiMessage(err)}`);
      }
    }
  }
});

t.test('invalid fixtures are rejected with a message that says what to fix', async (t) => {
  const namespace = await createNamespace(kc, 'esi-api-crds-bad', t);
  const files = await yamlFiles(join(FIXTURES, 'invalid'));
  t.ok(files.length >= 15, `${files.length} invalid fixtures`);
  for (const file of files) {
    const { docs, expect } = await readManifests(file);
    const label = basename(file);
    if (expect === undefined || docs.length !== 1 || docs[0] === undefined) {
      t.fail(`${label}: needs one document and a '# expect: <fragment>' line`);
      continue;
    }
    try {
      // POST, as `kubectl create` and client-side `kubectl apply` of a new object do.
      const created = await objects.create(place(docs[0], namespace), undefined, undefined, FIELD_MANAGER);
      if (created.kind === 'ClusterSecretStore') cleanup.push(created);
      t.fail(`${label} was accepted; expected: ${expect}`);
    } catch (err) {
      t.equal(err instanceof ApiException ? err.code : undefined, 422, `${label}: 422 Invalid`);
      const message = apiMessage(err);
      t.ok(message.includes(expect), `${label}: message names the problem`, { expect, message });
    }
  }
});

/** GET as a Table, the way `kubectl get` asks. */
async function getTable(path: string): Promise<Table> {
  const opts: RequestOptions = { method: 'GET', headers: {} };
  await kc.applyToHTTPSOptions(opts);
  const url = new URL(path, cp.server);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { ...opts, headers: { ...opts.headers, Accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () =>
          res.statusCode === 200 ? resolve(JSON.parse(body) as Table) : reject(new Error(`${res.statusCode}: ${body}`)),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

interface Table {
  kind: string;
  columnDefinitions: { name: string; type: string }[];
  rows: { cells: unknown[] }[];
}

/** Writes `status` through the status subresource, as a controller would: read, replace, and
 *  on a conflict (the object changed in between) read again. */
async function setStatus(plural: string, namespace: string, name: string, status: object): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const ref = { group: API_GROUP, version: 'v1', namespace, plural, name };
  for (let attempt = 1; ; attempt++) {
    const current = (await custom.getNamespacedCustomObject(ref)) as Manifest;
    try {
      await custom.replaceNamespacedCustomObjectStatus({ ...ref, body: { ...current, status } });
      return;
    } catch (err) {
      if ((err as { code?: number }).code !== 409 || attempt >= 5) throw err;
    }
  }
}

t.test('printer columns: kubectl get es / ss', async (t) => {
  const namespace = await createNamespace(kc, 'esi-api-crds-cols', t);
  const { docs } = await readManifests(join(ROOT, 'examples', 'externalsecrets.yaml'));
  const db = docs.find((d) => d.kind === 'ExternalSecret' && d.metadata?.name === 'db');
  if (db === undefined) throw new Error('examples/externalsecrets.yaml has no ExternalSecret db');
  await apply(place(db, namespace));
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  await setStatus('externalsecrets', namespace, 'db', {
    conditions: [{ type: 'Ready', status: 'True', reason: 'SecretSynced', message: 'values fetched', lastTransitionTime: now }],
    refreshTime: now,
  });

  const es = await getTable(`/apis/${API_GROUP}/v1/namespaces/${namespace}/externalsecrets`);
  t.equal(es.kind, 'Table');
  t.same(es.columnDefinitions.map((c) => c.name), ['Name', 'Store', 'Refresh Interval', 'Status', 'Ready', 'Age']);
  t.equal(es.rows.length, 1);
  const cells = es.rows[0]?.cells ?? [];
  t.same(cells.slice(0, 5), ['db', 'fake', '1h', 'SecretSynced', 'True']);
  t.match(cells[5], /^\d+s$/, 'age is shown');

  const { docs: stores } = await readManifests(join(ROOT, 'examples', 'stores.yaml'));
  const fake = stores.find((d) => d.kind === 'SecretStore' && d.metadata?.name === 'fake');
  if (fake === undefined) throw new Error('examples/stores.yaml has no SecretStore fake');
  await apply(place(fake, namespace));
  await setStatus('secretstores', namespace, 'fake', {
    conditions: [{ type: 'Ready', status: 'True', reason: 'Valid', message: 'store validated', lastTransitionTime: now }],
    capabilities: 'ReadWrite',
  });
  const ss = await getTable(`/apis/${API_GROUP}/v1/namespaces/${namespace}/secretstores/fake`);
  t.same(ss.columnDefinitions.map((c) => c.name), ['Name', 'Age', 'Status', 'Capabilities', 'Ready']);
  const row = ss.rows[0]?.cells ?? [];
  t.equal(row[0], 'fake');
  t.same(row.slice(2), ['Valid', 'ReadWrite', 'True']);
});

t.test('installCrds with onlyIfAbsent: false replaces the CRDs with ESI\'s version', async (t) => {
  // On a private control plane: replacing the CRDs of the shared one would disturb the
  // controllers and webhooks of the test files running beside this one.
  const own = await startControlPlane(await mkdtemp(join(tmpdir(), 'esi-crds-replace-')));
  t.teardown(() => own.stop());
  const ownKc = new KubeConfig();
  ownKc.loadFromFile(own.kubeconfigPath);
  await installCrds(ownKc);
  const res = await installCrds(ownKc, { onlyIfAbsent: false });
  t.same([...res.created].sort(), crdNames);
  t.same(res.existing, []);
});
