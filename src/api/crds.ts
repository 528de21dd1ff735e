// ESI's CustomResourceDefinitions for the external-secrets.io API: loads the manifests
// shipped in charts/esi/files/crds/ and installs those a cluster lacks. ESI must work where
// another controller (e.g. External Secrets Operator) installed these CRDs, so an
// existing CRD is left alone unless the caller asks to replace it.
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiextensionsV1Api, ApiException, CustomObjectsApi, loadYaml } from '@kubernetes/client-node';
import type { KubeConfig, V1CustomResourceDefinition } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';

const CRD_DIR = join('charts', 'esi', 'files', 'crds');

/** The package root: the nearest ancestor of this module holding package.json
 *  (works from src/api/ under tsx and from dist/src/api/ after tsc). */
export function packageRoot(from: string = dirname(fileURLToPath(import.meta.url))): string {
  let dir = from;
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, CRD_DIR))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the ESI package root (with ${CRD_DIR}) above ${from}`);
    dir = parent;
  }
}

export function crdDirectory(): string {
  return join(packageRoot(), CRD_DIR);
}

/** The raw manifests (JSON as written, e.g. `x-kubernetes-validations`), sorted by file name. */
export async function loadCrdManifests(dir: string = crdDirectory()): Promise<Record<string, unknown>[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml') || f.endsWith('.yml')).sort();
  const crds: Record<string, unknown>[] = [];
  for (const file of files) {
    const text = await readFile(join(dir, file), 'utf8');
    for (const doc of parseAllDocuments(text)) {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0]?.message ?? 'invalid YAML'}`);
      const obj = doc.toJS() as Record<string, unknown> | null;
      if (obj === null || obj === undefined) continue;
      if (obj.kind !== 'CustomResourceDefinition') throw new Error(`${file}: expected a CustomResourceDefinition, got ${String(obj.kind)}`);
      crds.push(obj);
    }
  }
  return crds;
}

/** Every CRD in charts/esi/files/crds/ as a client model. The client's serializer knows only
 *  its own property names (`x_kubernetes_validations`, `_default`) and drops unknown
 *  ones, so a raw object passed to the typed API would silently lose its CEL rules:
 *  the manifests go through the client's deserializer (JSON is YAML) first. */
export async function loadCrds(dir: string = crdDirectory()): Promise<V1CustomResourceDefinition[]> {
  return (await loadCrdManifests(dir)).map((raw) => loadYaml<V1CustomResourceDefinition>(JSON.stringify(raw)));
}

export interface InstallCrdsOptions {
  /** true (default): keep CRDs that exist. false: replace them with ESI's version. */
  onlyIfAbsent?: boolean;
  /** How long to wait for each CRD to become Established, in ms (default 60 000). */
  timeoutMs?: number;
  /** The CRDs to install; those of charts/esi/files/crds/ when omitted. */
  crds?: V1CustomResourceDefinition[];
}

export interface InstallCrdsResult {
  /** CRDs this call created (or replaced, with `onlyIfAbsent: false`). */
  created: string[];
  /** CRDs that were already there and left as they were. */
  existing: string[];
}

function isStatus(err: unknown, code: number): boolean {
  return err instanceof ApiException && err.code === code;
}

async function readOrUndefined(api: ApiextensionsV1Api, name: string): Promise<V1CustomResourceDefinition | undefined> {
  try {
    return await api.readCustomResourceDefinition({ name });
  } catch (err) {
    if (isStatus(err, 404)) return undefined;
    throw err;
  }
}

/** Creates the CRD when absent; true when this call created or replaced it. */
async function ensureCrd(api: ApiextensionsV1Api, crd: V1CustomResourceDefinition, onlyIfAbsent: boolean): Promise<boolean> {
  const name = crd.metadata?.name ?? '';
  const current = await readOrUndefined(api, name);
  if (current === undefined) {
    try {
      await api.createCustomResourceDefinition({ body: crd, fieldManager: 'esi' });
      return true;
    } catch (err) {
      if (isStatus(err, 409)) return false; // another installer won the race
      throw err;
    }
  }
  if (onlyIfAbsent) return false;
  const body: V1CustomResourceDefinition = {
    ...crd,
    metadata: { ...crd.metadata, resourceVersion: current.metadata?.resourceVersion },
  };
  await api.replaceCustomResourceDefinition({ name, body, fieldManager: 'esi' });
  return true;
}

function conditionStatus(crd: V1CustomResourceDefinition, type: string): { status?: string; message?: string } {
  const c = crd.status?.conditions?.find((x) => x.type === type);
  return { status: c?.status, message: c?.message };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** True once every served version is usable: API discovery (`/apis/<group>/<version>`)
 *  lists the resource, so clients that resolve kinds through discovery (kubectl,
 *  KubernetesObjectApi) find it, and a LIST answers (right after creation the apiserver
 *  says 429 "storage is (re)initializing"). Both lag a little behind Established. */
async function usable(kc: KubeConfig, crd: V1CustomResourceDefinition): Promise<boolean> {
  const api = kc.makeApiClient(CustomObjectsApi);
  const { group, names } = crd.spec;
  for (const version of crd.spec.versions.filter((v) => v.served)) {
    try {
      const list = await api.getAPIResources({ group, version: version.name });
      if (!list.resources.some((r) => r.name === names.plural)) return false;
      await api.listClusterCustomObject({ group, version: version.name, plural: names.plural, limit: 1 });
    } catch (err) {
      if (isStatus(err, 404) || isStatus(err, 429) || isStatus(err, 503)) return false;
      throw err;
    }
  }
  return true;
}

/** Waits until the CRD is Established and its API actually answers (see `usable`);
 *  fails fast when its names conflict with another resource. */
async function waitEstablished(kc: KubeConfig, name: string, timeoutMs = 60_000): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const deadline = Date.now() + timeoutMs;
  let last = 'not found';
  while (Date.now() < deadline) {
    const crd = await readOrUndefined(api, name);
    if (crd !== undefined) {
      const names = conditionStatus(crd, 'NamesAccepted');
      if (names.status === 'False') throw new Error(`CRD ${name}: names not accepted: ${names.message ?? ''}`);
      const established = conditionStatus(crd, 'Established');
      if (established.status === 'True') {
        if (await usable(kc, crd)) return;
        last = 'Established, not yet served (discovery or storage still initializing)';
      } else {
        last = established.message ?? 'not yet Established';
      }
    }
    await sleep(100);
  }
  throw new Error(`CRD ${name} not Established after ${timeoutMs} ms (${last})`);
}

/** Installs ESI's CRDs that the cluster lacks and waits until every one is Established. */
export async function installCrds(kc: KubeConfig, opts: InstallCrdsOptions = {}): Promise<InstallCrdsResult> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const crds = opts.crds ?? (await loadCrds());
  const result: InstallCrdsResult = { created: [], existing: [] };
  for (const crd of crds) {
    const name = crd.metadata?.name;
    if (name === undefined || name === '') throw new Error('a CRD manifest has no metadata.name');
    const created = await ensureCrd(api, crd, opts.onlyIfAbsent ?? true);
    (created ? result.created : result.existing).push(name);
  }
  await Promise.all(crds.map((crd) => waitEstablished(kc, crd.metadata?.name ?? '', opts.timeoutMs)));
  return result;
}
