// The cluster the benchmark's webhook "sees": namespaces, SecretStores, ClusterSecretStores
// (with conditions) and a few hundred ExternalSecrets, generated from a fixed seed.
// Provider specs are realistic vault / aws / kubernetes (plus gcpsm, azurekv) configurations.
import type { V1Namespace } from '@kubernetes/client-node';
import type { ClusterSecretStore, ExternalSecret, ExternalSecretData, SecretStore, SecretStoreProvider } from '../../src/api/types.js';
import type { ObjectLookup } from '../../webhook/resolve.js';
import { HANDLEBARS, TEMPLATE_ENGINE_ANNOTATION } from '../../src/templating/eso.js';
import { Rng } from '../lib/rng.js';

export const GROUP_VERSION = 'external-secrets.io/v1';
/** The service account every injectable pod runs as; stores that name one use it. */
export const WORKLOAD_SA = 'workload';
/** ExternalSecret present in every namespace whose ClusterSecretStore admits none of them. */
export const FORBIDDEN_ES = 'audit-log';

export const TEAMS = ['payments', 'checkout', 'search', 'identity', 'ledger', 'catalog', 'shipping', 'pricing', 'reviews', 'notifications', 'fraud', 'analytics'] as const;
export const ENVS = ['prod', 'staging', 'dev'] as const;

/** Names of the ExternalSecrets every namespace holds (all resolvable from it). */
export const ES_NAMES = ['db', 'db-config', 'api-keys', 'redis', 'tls', 'oauth-client', 'kafka', 'smtp', 'feature-flags', 'shared-certs', 'analytics-key', 'signing-keys'] as const;

export interface Cluster {
  namespaces: V1Namespace[];
  secretStores: SecretStore[];
  clusterSecretStores: ClusterSecretStore[];
  externalSecrets: ExternalSecret[];
}

const ready = (rng: Rng) => ({
  conditions: [{ type: 'Ready', status: 'True' as const, reason: 'Valid', message: 'store validated', lastTransitionTime: `2025-0${rng.int(1, 9)}-1${rng.int(0, 9)}T0${rng.int(0, 9)}:1${rng.int(0, 9)}:00Z` }],
  capabilities: 'ReadWrite' as const,
});

function meta(rng: Rng, name: string, namespace?: string) {
  return {
    name, ...(namespace ? { namespace } : {}), uid: rng.uuid(), resourceVersion: String(rng.int(100000, 9999999)), generation: rng.int(1, 4),
    creationTimestamp: new Date(Date.UTC(2025, rng.int(0, 8), rng.int(1, 28))) as unknown as Date,
    labels: { 'app.kubernetes.io/managed-by': 'argocd', 'app.kubernetes.io/part-of': 'platform-secrets' },
    annotations: { 'argocd.argoproj.io/tracking-id': `platform-secrets:external-secrets.io/${name}:${namespace ?? ''}/${name}` } as Record<string, string>,
  };
}

function namespaceStores(rng: Rng, ns: string, team: string, env: string): SecretStore[] {
  const store = (name: string, provider: SecretStoreProvider): SecretStore => ({
    apiVersion: GROUP_VERSION, kind: 'SecretStore', metadata: meta(rng, name, ns),
    spec: { provider, retrySettings: { maxRetries: 5, retryInterval: '10s' }, refreshInterval: 300 }, status: ready(rng),
  });
  return [
    store('vault', {
      vault: {
        server: `https://vault.${env}.internal.example.com:8200`, path: 'kv', version: 'v2', namespace: `teams/${team}`,
        caProvider: { type: 'ConfigMap', name: 'vault-ca', key: 'ca.crt' },
        auth: { kubernetes: { mountPath: `kubernetes-${env}`, role: `${team}-${env}`, serviceAccountRef: { name: WORKLOAD_SA, audiences: ['vault'] } } },
      },
    }),
    store('aws', {
      aws: {
        service: 'SecretsManager', region: rng.pick(['eu-central-1', 'eu-west-1', 'us-east-1']),
        role: `arn:aws:iam::${rng.int(100000000000, 999999999999)}:role/${team}-${env}-secrets-reader`,
        auth: { jwt: { serviceAccountRef: { name: WORKLOAD_SA } } },
      },
    }),
    store('cluster-secrets', {
      kubernetes: {
        remoteNamespace: `${team}-shared`,
        server: { url: 'https://kubernetes.default.svc', caProvider: { type: 'ConfigMap', name: 'kube-root-ca.crt', key: 'ca.crt' } },
        auth: { serviceAccount: { name: WORKLOAD_SA } },
      },
    }),
    store('vault-static', {
      vault: {
        server: `https://vault-legacy.${env}.internal.example.com:8200`, path: 'secret', version: 'v1',
        auth: { tokenSecretRef: { name: 'vault-token', key: 'token' } },
      },
    }),
  ];
}

function clusterStores(rng: Rng): ClusterSecretStore[] {
  const store = (name: string, provider: SecretStoreProvider, conditions: ClusterSecretStore['spec']['conditions']): ClusterSecretStore => ({
    apiVersion: GROUP_VERSION, kind: 'ClusterSecretStore', metadata: meta(rng, name), spec: { provider, conditions }, status: ready(rng),
  });
  return [
    store('shared-vault', {
      vault: { server: 'https://vault.shared.internal.example.com:8200', path: 'shared', version: 'v2', auth: { kubernetes: { mountPath: 'kubernetes', role: 'shared-readers' } } },
    }, [{ namespaceSelector: { matchExpressions: [{ key: 'env', operator: 'In', values: ['prod', 'staging'] }] } }, { namespaceSelector: { matchLabels: { 'esi.dev/shared-secrets': 'true' } } }]),
    store('platform-ssm', {
      aws: { service: 'ParameterStore', region: 'eu-central-1', prefix: '/platform/', role: 'arn:aws:iam::210987654321:role/platform-ssm-reader' },
    }, [{ namespaceRegexes: [`^(${TEAMS.join('|')})-(prod|staging|dev)$`] }]),
    store('gcp-shared', {
      gcpsm: { projectID: 'acme-shared-secrets', auth: { workloadIdentity: { clusterLocation: 'europe-west1', clusterName: 'prod-1', clusterProjectID: 'acme-platform', serviceAccountRef: { name: WORKLOAD_SA } } } },
    }, [{ namespaces: TEAMS.flatMap((t) => ENVS.map((e) => `${t}-${e}`)) }]),
    store('azure-kv', {
      azurekv: { vaultUrl: 'https://acme-shared.vault.azure.net', tenantId: '3f1c2d4e-0000-4000-a000-1234567890ab', authType: 'WorkloadIdentity', serviceAccountRef: { name: WORKLOAD_SA } },
    }, [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'never-matches' } } }, { namespaceRegexes: ['^[a-z]+-(prod|staging|dev)$'] }]),
    store('secops-vault', {
      vault: { server: 'https://vault.secops.internal.example.com:8200', path: 'secops', auth: { kubernetes: { mountPath: 'kubernetes', role: 'secops' } } },
    }, [{ namespaces: ['secops'] }, { namespaceSelector: { matchLabels: { 'esi.dev/tier': 'secops' } } }]),
  ];
}

function dataEntries(rng: Rng, name: string): ExternalSecretData[] {
  const keys = ['username', 'password', 'host', 'port', 'database', 'token', 'client-id', 'client-secret', 'private-key', 'certificate'];
  return rng.sample(keys, rng.int(1, 6)).map((k) => ({
    secretKey: k, remoteRef: { key: `${name}/${rng.hex(6)}`, property: k, ...(rng.chance(0.2) ? { version: `v${rng.int(1, 9)}` } : {}) },
  }));
}

function externalSecret(rng: Rng, ns: string, name: string, storeRef: { name: string; kind: 'SecretStore' | 'ClusterSecretStore' }): ExternalSecret {
  const style = rng.weighted({ data: 6, extract: 2, find: 1 });
  const spec: ExternalSecret['spec'] = {
    secretStoreRef: storeRef, refreshInterval: rng.pick(['1h', '15m', '30m', '5m']),
    target: { name: `${name}-secret`, creationPolicy: rng.pick(['Owner', 'None'] as const), deletionPolicy: 'Retain' },
  };
  if (style === 'data') spec.data = dataEntries(rng, name);
  if (style === 'extract') spec.dataFrom = [{ extract: { key: `${ns}/${name}`, conversionStrategy: 'Default', decodingStrategy: 'None' } }];
  if (style === 'find') {
    spec.dataFrom = [{ find: { name: { regexp: `^${name}/.*` } }, rewrite: [{ regexp: { source: `^${name}/(.*)`, target: '$1' } }] }];
  }
  const metadata = meta(rng, name, ns);
  if (rng.chance(0.25)) {
    // ESI renders handlebars only, opted into with an annotation (src/templating/eso.ts).
    metadata.annotations[TEMPLATE_ENGINE_ANNOTATION] = HANDLEBARS;
    spec.target!.template = {
      mergePolicy: 'Merge', type: 'Opaque',
      data: { 'connection-string': `postgres://{{username}}:{{password}}@${name}.${ns}.svc:5432/app?sslmode=require` },
    };
  }
  return {
    apiVersion: GROUP_VERSION, kind: 'ExternalSecret', metadata, spec,
    status: { conditions: [{ type: 'Ready', status: 'True', reason: 'SecretSynced', message: 'secret synced' }], refreshTime: '2025-09-01T10:00:00Z', syncedResourceVersion: `1-${rng.hex(32)}` },
  };
}

/** Stores an ExternalSecret of namespace `env` may use (all of them admit it). */
function storesFor(env: string): { name: string; kind: 'SecretStore' | 'ClusterSecretStore' }[] {
  const own = ['vault', 'vault', 'aws', 'aws', 'cluster-secrets', 'vault-static'].map((name) => ({ name, kind: 'SecretStore' as const }));
  const shared = ['platform-ssm', 'gcp-shared', 'azure-kv', ...(env === 'dev' ? [] : ['shared-vault'])];
  return [...own, ...shared.map((name) => ({ name, kind: 'ClusterSecretStore' as const }))];
}

export function buildCluster(seed = 7): Cluster {
  const rng = new Rng(seed);
  const out: Cluster = { namespaces: [], secretStores: [], clusterSecretStores: clusterStores(rng), externalSecrets: [] };
  for (const team of TEAMS) {
    for (const env of ENVS) {
      const ns = `${team}-${env}`;
      out.namespaces.push({
        apiVersion: 'v1', kind: 'Namespace',
        metadata: { name: ns, uid: rng.uuid(), labels: { 'kubernetes.io/metadata.name': ns, team, env, 'istio-injection': rng.pick(['enabled', 'disabled']) } },
      });
      out.secretStores.push(...namespaceStores(rng, ns, team, env));
      const choices = storesFor(env);
      for (const name of ES_NAMES) out.externalSecrets.push(externalSecret(rng, ns, name, rng.pick(choices)));
      out.externalSecrets.push(externalSecret(rng, ns, FORBIDDEN_ES, { name: 'secops-vault', kind: 'ClusterSecretStore' }));
    }
  }
  return out;
}

export function clusterObjects(c: Cluster): { kind?: string; metadata?: { name?: string; namespace?: string } }[] {
  return [...c.namespaces, ...c.secretStores, ...c.clusterSecretStores, ...c.externalSecrets] as never;
}

/** Keyed maps, like the informer caches WatchCaches reads (ObjectCache.get is a map lookup). */
export class IndexedLookup implements ObjectLookup {
  private readonly es = new Map<string, ExternalSecret>();
  private readonly ss = new Map<string, SecretStore>();
  private readonly css = new Map<string, ClusterSecretStore>();
  private readonly ns = new Map<string, V1Namespace>();

  constructor(c: Cluster) {
    for (const o of c.externalSecrets) this.es.set(`${o.metadata.namespace}/${o.metadata.name}`, o);
    for (const o of c.secretStores) this.ss.set(`${o.metadata.namespace}/${o.metadata.name}`, o);
    for (const o of c.clusterSecretStores) this.css.set(o.metadata.name!, o);
    for (const o of c.namespaces) this.ns.set(o.metadata!.name!, o);
  }
  externalSecret(namespace: string, name: string) {
    return this.es.get(`${namespace}/${name}`);
  }
  secretStore(namespace: string, name: string) {
    return this.ss.get(`${namespace}/${name}`);
  }
  clusterSecretStore(name: string) {
    return this.css.get(name);
  }
  namespace(name: string) {
    return this.ns.get(name);
  }
}
