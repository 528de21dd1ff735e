// src/migrate/check.ts without a cluster: each verdict from the objects an operator has — the
// CRDs by their Helm marks, stores by the reconciler's own rules, ExternalSecrets by their store
// and spec.
import t from 'tap';
import { failing, migrationCheck, type CrdObject } from '../../../src/migrate/check.js';
import type { AnySecretStore, ExternalSecret } from '../../../src/api/types.js';

const crd = (name: string, annotations: Record<string, string> = {}, helm = true): CrdObject => ({
  metadata: { name, labels: helm ? { 'app.kubernetes.io/managed-by': 'Helm' } : {}, annotations: helm ? { 'meta.helm.sh/release-name': 'external-secrets', 'meta.helm.sh/release-namespace': 'eso', ...annotations } : annotations },
  spec: { group: name.slice(name.indexOf('.') + 1) },
});
const store = (name: string, provider: object, extra: object = {}, kind = 'SecretStore'): AnySecretStore =>
  ({ apiVersion: 'external-secrets.io/v1', kind, metadata: kind === 'SecretStore' ? { name, namespace: 'app' } : { name }, spec: { provider, ...extra } }) as AnySecretStore;
const es = (name: string, spec: object): ExternalSecret => ({ apiVersion: 'external-secrets.io/v1', kind: 'ExternalSecret', metadata: { name, namespace: 'app' }, spec } as ExternalSecret);
const fake = { fake: { data: [] } };

t.test('CRDs: a Helm-owned one without keep is unsafe; kept, unmanaged or of another group are fine', async (t) => {
  const f = migrationCheck({
    crds: [crd('externalsecrets.external-secrets.io'), crd('secretstores.external-secrets.io', { 'helm.sh/resource-policy': 'keep' }),
      crd('passwords.generators.external-secrets.io', {}, false), crd('certificates.cert-manager.io')],
    stores: [], externalSecrets: [], controllerClass: 'esi', claimUnclassed: false, allowAmbientIdentity: false,
  });
  t.same(f.map((x) => [x.name, x.verdict]), [['externalsecrets.external-secrets.io', 'unsafe'], ['secretstores.external-secrets.io', 'safe'], ['passwords.generators.external-secrets.io', 'safe']]);
  t.match(f[0], { reason: /Helm release eso\/external-secrets/, fix: /helm upgrade external-secrets --reuse-values --set installCRDs=false/ });
  t.ok(failing(f));
});

t.test('stores and ExternalSecrets', async (t) => {
  const stores = [
    store('ok', fake, { controller: 'esi' }),
    store('eso', fake),
    store('bad', { vault: { server: 'https://v/?x' , auth: { tokenSecretRef: { name: 't', key: 'k' } } } }, { controller: 'esi' }),
    store('ambient', { vault: { server: 'https://v', auth: { kubernetes: { role: 'r' } } } }, { controller: 'esi' }),
    store('alien', { nosuch: {} }, { controller: 'esi' }),
    store('css-ambient', { vault: { server: 'https://v', auth: { kubernetes: { role: 'r' } } } }, { controller: 'esi' }, 'ClusterSecretStore'),
  ];
  const ref = (name: string, kind = 'SecretStore') => ({ secretStoreRef: { name, kind }, data: [{ secretKey: 'a', remoteRef: { key: 'a' } }] });
  const ess = [
    es('served', ref('ok')), es('unclassed', ref('eso')), es('on-bad', ref('bad')), es('missing', ref('nope')),
    es('fast', { ...ref('ok'), refreshInterval: '100ms' }), es('v1', { ...ref('ok'), target: { template: { engineVersion: 'v1' } } }),
    es('gen', { dataFrom: [{ sourceRef: { generatorRef: { apiVersion: 'generators.external-secrets.io/v1alpha1', kind: 'Webhook', name: 'w' } } }] }),
    es('css', ref('css-ambient', 'ClusterSecretStore')),
  ];
  const verdicts = (allowAmbientIdentity: boolean, claimUnclassed = false) => Object.fromEntries(
    migrationCheck({ crds: [], stores, externalSecrets: ess, controllerClass: 'esi', claimUnclassed, allowAmbientIdentity }).map((x) => [`${x.kind}/${x.name}`, x]));
  const v = verdicts(false);
  t.match(v['SecretStore/ok'], { verdict: 'served' });
  t.match(v['SecretStore/eso'], { verdict: 'other-class', fix: /spec\.controller: esi/ });
  t.match(v['SecretStore/bad'], { verdict: 'refused', reason: /vault\.server must not have a query or fragment/ });
  t.match(v['SecretStore/ambient'], { verdict: 'refused', reason: /names no ServiceAccount/ });
  t.match(v['SecretStore/alien'], { verdict: 'refused', reason: /not supported by ESI|nosuch/ });
  t.match(v['ClusterSecretStore/css-ambient'], { verdict: 'refused', reason: /--allow-ambient-identity/ });
  t.match(v['ExternalSecret/served'], { verdict: 'served' });
  t.match(v['ExternalSecret/unclassed'], { verdict: 'other-class' });
  t.match(v['ExternalSecret/on-bad'], { verdict: 'refused', reason: /its store SecretStore\/app\/bad is refused/ });
  t.match(v['ExternalSecret/missing'], { verdict: 'refused', reason: /SecretStore\/app\/nope does not exist/ });
  t.match(v['ExternalSecret/fast'], { verdict: 'different', reason: /raised to 1s/ });
  t.match(v['ExternalSecret/v1'], { verdict: 'refused', reason: /engineVersion v1/ });
  t.match(v['ExternalSecret/gen'], { verdict: 'refused', reason: /generator kind Webhook is not served/ });
  t.match(v['ExternalSecret/css'], { verdict: 'refused' });
  const lent = verdicts(true, true);
  t.match(lent['ClusterSecretStore/css-ambient'], { verdict: 'served' }, 'with the identity lent, an operator\'s store is served');
  t.match(lent['SecretStore/ambient'], { verdict: 'refused' }, 'a SecretStore never');
  t.match(lent['SecretStore/eso'], { verdict: 'served' }, 'unclassed stores with claimUnclassed');
});
