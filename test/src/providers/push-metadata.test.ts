// PushSecret data[].metadata checks without I/O: ESO's envelope, each provider's own
// fields (applied, unsupported by name, unknown, malformed), and the providers that apply
// none (grpc, fake). What each provider does with the fields is tested against its
// backend in test/e2e/pushsecret/metadata.test.ts.
import t from 'tap';
import { checkPushMetadata } from '../../../src/providers/push-metadata.js';
import { providerMeta } from '../../../src/providers/registry.js';

const env = (spec: object) => ({ apiVersion: 'kubernetes.external-secrets.io/v1alpha1', kind: 'PushSecretMetadata', spec });
const check = (provider: string, raw: unknown) => checkPushMetadata(providerMeta(provider)!, raw, 'spec.data[0].metadata');

t.test('the envelope', async (t) => {
  t.same(check('vault', undefined), { problems: [] }, 'no metadata');
  t.same(check('vault', env({})), { problems: [] }, 'an empty spec is no metadata');
  t.match(check('vault', 'tags').problems, [/spec.data\[0\].metadata must be an object/]);
  const bad = check('vault', { apiVersion: 'v1', kind: 'Secret', spec: {}, extra: 1 }).problems.join('\n');
  t.match(bad, /metadata.apiVersion must be kubernetes.external-secrets.io\/v1alpha1/);
  t.match(bad, /metadata.kind must be PushSecretMetadata/);
  t.match(bad, /metadata.extra is not a field of PushSecretMetadata/);
  t.match(check('vault', { ...env({}), spec: [] }).problems, [/metadata.spec must be an object/]);
});

t.test('each provider accepts its fields and names the others', async (t) => {
  t.same(check('vault', env({ customMetadata: { team: 'a' } })), { metadata: { customMetadata: { team: 'a' } }, problems: [] });
  t.match(check('vault', env({ tags: { a: 'b' } })).problems, [/spec.data\[0\].metadata.spec.tags is not a field of the vault provider's push metadata \(it applies: customMetadata\)/]);
  t.same(check('openBao', env({ customMetadata: { team: 'a' } })).problems, [], 'openBao: served by the vault client');
  t.match(check('vault', env({ customMetadata: { a: 1 } })).problems, [/metadata.spec.customMetadata must be a map of non-empty keys to strings/]);

  t.same(check('aws', env({ tags: { a: 'b' }, description: 'd', kmsKeyID: 'alias/k', secretPushFormat: 'binary' })).problems, []);
  t.match(check('aws', env({ secretPushFormat: 'yaml' })).problems, [/metadata.spec.secretPushFormat must be string or binary/]);

  t.same(check('kubernetes', env({ labels: { a: 'b' }, annotations: { c: 'd' }, targetMergePolicy: 'Replace' })).problems, []);
  t.match(check('kubernetes', env({ sourceMergePolicy: 'Merge' })).problems, [/metadata.spec.sourceMergePolicy is not supported by ESI's kubernetes provider/]);

  t.same(check('gcpsm', env({ labels: { a: 'b' }, annotations: { c: 'd' }, mergePolicy: 'Merge', replicationLocation: 'europe-west1', cmekKeyName: 'k' })).problems, []);
  t.match(check('gcpsm', env({ topics: ['t'] })).problems, [/metadata.spec.topics is not supported by ESI's gcpsm provider/]);

  t.same(check('azurekv', env({ tags: { a: 'b' }, expirationDate: '2031-01-02T03:04:05Z' })).problems, []);
  t.match(check('azurekv', env({ expirationDate: 'tomorrow' })).problems, [/metadata.spec.expirationDate must be an RFC 3339 date-time/]);

  for (const p of ['grpc', 'fake']) {
    t.match(check(p, env({ tags: { a: 'b' } })).problems, [new RegExp(`the ${p} provider applies no push metadata; remove metadata.spec.tags`)], p);
  }
});

t.test('bounded: large maps are refused, not applied', async (t) => {
  const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v']));
  t.match(check('vault', env({ customMetadata: many })).problems, [/has 65 entries; at most 64/]);
});
