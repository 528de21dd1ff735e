// The objects the adversarial tests admit pods against: a namespace, stores of several
// kinds (one per credential shape), ExternalSecrets using them, and canary values that
// must never appear in a denial, a log line or an error.
import type { V1Pod } from '@kubernetes/client-node';
import type { AdmitContext } from '../../../webhook/admission.js';
import { ManifestLookup } from '../../../webhook/inject-cmd.js';

export const NS = 'team-adv';
export const CANARY = 'CANARY-adv-4be1c09d';
const GROUP = 'external-secrets.io/v1';

const store = (name: string, provider: object, kind = 'SecretStore', extra: object = {}) => ({
  apiVersion: GROUP, kind, metadata: kind === 'SecretStore' ? { name, namespace: NS } : { name }, spec: { provider, ...extra },
});

const es = (name: string, storeName: string, kind = 'SecretStore', spec: object = {}) => ({
  apiVersion: GROUP, kind: 'ExternalSecret', metadata: { name, namespace: NS },
  spec: { secretStoreRef: { name: storeName, kind }, data: [{ secretKey: 'password', remoteRef: { key: 'db', property: 'password' } }], ...spec },
});

export const STORES = [
  store('fake', { fake: { data: [{ key: 'db', value: `{"password":"${CANARY}"}` }] } }),
  store('vault', { vault: { server: 'https://vault.example:8200', path: 'secret', version: 'v2', auth: { tokenSecretRef: { name: 'vault-token', key: 'token' } } } }),
  store('vault-k8s', { vault: { server: 'https://vault.example:8200', auth: { kubernetes: { mountPath: 'kubernetes', role: 'app' } } } }),
  store('aws', { aws: { service: 'SecretsManager', region: 'eu-west-1', role: 'arn:aws:iam::123456789012:role/app' } }),
  store('dotdot-name', { vault: { server: 'https://v:8200', auth: { tokenSecretRef: { name: '../x', key: 'token' } } } }),
  store('dotdot-key', { vault: { server: 'https://v:8200', auth: { tokenSecretRef: { name: 'vault-token', key: '../token' } } } }),
  store('regex', { fake: { data: [] } }, 'ClusterSecretStore', { conditions: [{ namespaceRegexes: ['team-(adv|b)'] }] }),
  store('regex-broken', { fake: { data: [] } }, 'ClusterSecretStore', { conditions: [{ namespaceRegexes: ['b)|(.*'] }] }),
];

export const OBJECTS: object[] = [
  { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS, labels: { tier: 'prod' } } },
  ...STORES,
  es('db', 'fake'),
  es('api', 'vault'),
  es('k8s', 'vault-k8s'),
  es('cloud', 'aws'),
  es('es-dotdot-name', 'dotdot-name'),
  es('es-dotdot-key', 'dotdot-key'),
  es('regex', 'regex', 'ClusterSecretStore'),
  es('regex-broken', 'regex-broken', 'ClusterSecretStore'),
  es('templated', 'fake', 'SecretStore', {}),
];

/** ExternalSecret names a fuzzed pod may mount (each admits on its own). */
export const GOOD_SECRETS = ['db', 'api', 'k8s', 'cloud', 'regex'];

export function admitContext(extra: Partial<AdmitContext> = {}): AdmitContext {
  return { namespace: NS, lookup: new ManifestLookup(OBJECTS as never[]), resolve: {}, agent: { image: 'esi:test', defaultTokenAudience: 'esi' }, ...extra };
}

export function labelledPod(annotations: Record<string, string>, spec: V1Pod['spec'] = { containers: [{ name: 'app', image: 'app' }] }): V1Pod {
  return { metadata: { name: 'p', namespace: NS, labels: { 'esi.dev/inject': 'true' }, annotations }, spec };
}
