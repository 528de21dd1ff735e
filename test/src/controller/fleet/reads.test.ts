// The sources a pod's ExternalSecrets read through stores that opted in to change
// notifications (src/controller/fleet/reads.ts), for the cloud stores: AWS entries by service
// and region, GCP secrets by location and id; a store that did not opt in gives none.
import t from 'tap';
import type { AnySecretStore, ExternalSecret } from '../../../../src/api/types.js';
import { awsScope, gcpScope, podSources } from '../../../../src/controller/fleet/reads.js';

const OPT_IN = { 'esi.dev/change-notifications': 'true' };
const store = (name: string, provider: object, annotations: Record<string, string> = OPT_IN) =>
  ({ kind: 'SecretStore', metadata: { name, namespace: 'team', annotations }, spec: { provider } }) as unknown as AnySecretStore;
const STORES: Record<string, AnySecretStore> = {
  gcp: store('gcp', { gcpsm: { projectID: 'proj' } }),
  regional: store('regional', { gcpsm: { projectID: 'proj', location: 'europe-west1' } }),
  quiet: store('quiet', { gcpsm: { projectID: 'proj' } }, {}),
  aws: store('aws', { aws: { service: 'SecretsManager', region: 'eu-west-1', prefix: 'team/' } }),
};
const lookup = (_kind: string, _ns: string, name: string) => STORES[name];
const es = (storeName: string, keys: string[], find = false) => ({
  metadata: { name: `es-${storeName}`, namespace: 'team' },
  spec: { secretStoreRef: { name: storeName }, data: keys.map((key) => ({ secretKey: key.replace(/\W/g, ''), remoteRef: { key } })), ...(find ? { dataFrom: [{ find: { name: { regexp: '.*' } } }] } : {}) },
}) as unknown as ExternalSecret;

t.test('gcpsm: a secret id in the store\'s location, a full name in its own', async (t) => {
  t.same(podSources('team', [es('gcp', ['db', 'projects/123/locations/us-east1/secrets/api/versions/2'])], lookup), [
    { kind: 'gcp', scope: gcpScope('global'), name: 'db' },
    { kind: 'gcp', scope: gcpScope('us-east1'), name: 'api' },
  ]);
  t.same(podSources('team', [es('regional', ['db'])], lookup), [{ kind: 'gcp', scope: gcpScope('europe-west1'), name: 'db' }]);
  t.same(podSources('team', [es('regional', [], true)], lookup), [{ kind: 'gcp', scope: gcpScope('europe-west1'), name: '*' }], 'a find follows the location');
  t.same(podSources('team', [es('quiet', ['db'])], lookup), [], 'a store that did not opt in: none');
});

t.test('aws: the store\'s prefix and region', async (t) => {
  t.same(podSources('team', [es('aws', ['db'])], lookup), [{ kind: 'aws', scope: awsScope('SecretsManager', 'eu-west-1'), name: 'team/db' }]);
});
