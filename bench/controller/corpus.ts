// The controller benchmark's objects: N namespaces, one fake ClusterSecretStore holding K
// distinct remote keys, and E ExternalSecrets spread over the namespaces, each reading 1–5
// keys chosen by a seeded PRNG (identical on every run).
import { randomBytes } from 'node:crypto';
import { API_GROUP } from '../../src/api/types.js';
import type { KubeRest } from '../../src/kube/rest.js';
import { Rng } from '../lib/rng.js';

export interface CorpusSize {
  namespaces: number;
  externalSecrets: number;
  keys: number;
}

export const STORE = 'bench-fake';
export const CLASS = 'bench';

export const keyName = (i: number) => `key-${String(i).padStart(4, '0')}`;
export const nsName = (i: number) => `bench-${String(i).padStart(3, '0')}`;

/** Runs `fn` over `items` with at most `n` in flight. */
export async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) await fn(items[next++]!);
  }));
}

export function storeData(keys: number, generation = 1): { key: string; value: string }[] {
  return Array.from({ length: keys }, (_, i) => ({ key: keyName(i), value: `${generation}-${randomBytes(12).toString('hex')}` }));
}

export async function createStore(rest: KubeRest, keys: number): Promise<void> {
  await rest.create(`/apis/${API_GROUP}/v1/clustersecretstores`, {
    apiVersion: `${API_GROUP}/v1`, kind: 'ClusterSecretStore', metadata: { name: STORE },
    spec: { controller: CLASS, provider: { fake: { data: storeData(keys) } } },
  });
}

/** Creates the namespaces and ExternalSecrets; returns, per ExternalSecret, the keys it reads. */
export async function createCorpus(rest: KubeRest, size: CorpusSize, refreshInterval: string): Promise<Map<string, string[]>> {
  const rng = new Rng(20261123);
  await pool(Array.from({ length: size.namespaces }, (_, i) => nsName(i)), 16, (name) =>
    rest.create('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'esi-bench': 'controller' } } }));
  const plan = new Map<string, string[]>();
  const items = Array.from({ length: size.externalSecrets }, (_, i) => {
    const ns = nsName(i % size.namespaces);
    const name = `es-${String(i).padStart(5, '0')}`;
    const count = rng.int(1, 5);
    const keys = [...new Set(Array.from({ length: count }, () => keyName(rng.int(0, size.keys - 1))))];
    plan.set(`${ns}/${name}`, keys);
    return { ns, name, keys };
  });
  await pool(items, 32, ({ ns, name, keys }) => rest.create(`/apis/${API_GROUP}/v1/namespaces/${ns}/externalsecrets`, {
    apiVersion: `${API_GROUP}/v1`, kind: 'ExternalSecret', metadata: { name },
    spec: {
      secretStoreRef: { kind: 'ClusterSecretStore', name: STORE }, refreshInterval,
      data: keys.map((key, j) => ({ secretKey: `k${j}`, remoteRef: { key } })),
    },
  }));
  return plan;
}
