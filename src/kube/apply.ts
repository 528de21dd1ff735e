// Creates (or replaces) objects from YAML manifests, like `kubectl apply` for the simple
// case. Used by the demo and tests; product code reads the API through informers.
import { KubernetesObjectApi, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import { parseAllDocuments } from 'yaml';

export async function readManifests(file: string): Promise<KubernetesObject[]> {
  const docs = parseAllDocuments(await readFile(file, 'utf8'));
  const out: KubernetesObject[] = [];
  for (const doc of docs) {
    if (doc.errors.length) throw new Error(`${file}: ${doc.errors[0]!.message}`);
    const value = doc.toJS() as KubernetesObject | null;
    if (value?.kind) out.push(value);
  }
  return out;
}

/** Creates each object, or replaces it when it exists. Returns "kind/name" per object. */
export async function applyObjects(kc: KubeConfig, objects: KubernetesObject[]): Promise<string[]> {
  const api = KubernetesObjectApi.makeApiClient(kc);
  const done: string[] = [];
  for (const obj of objects) {
    try {
      await api.create(obj);
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
      const current = await api.read(obj as KubernetesObject & { metadata: { name: string; namespace?: string } });
      await api.replace({ ...obj, metadata: { ...obj.metadata, resourceVersion: current.metadata?.resourceVersion } });
    }
    done.push(`${obj.kind}/${obj.metadata?.name}`);
  }
  return done;
}
