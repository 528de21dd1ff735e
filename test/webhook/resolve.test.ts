// The resolution rules admission applies to a pod's annotations (webhook/resolve.ts), without a
// cluster (test/e2e/webhook/ covers the API path).
import t from 'tap';
import { admit } from '../../webhook/admission.js';
import { ctx, pod } from '../support/fixtures/admission.js';

t.test('resolution rules', async (t) => {
  const deny = (ann: Record<string, string>, c = ctx()) => {
    const r = admit(pod(ann), c);
    return r.kind === 'denied' ? r.message : `not denied: ${r.kind}`;
  };
  t.equal(admit(pod({ 'esi.dev/secrets': 'es-prod' }), ctx()).kind, 'mutated', 'matchExpressions on namespace labels admit');
  t.match(deny({ 'esi.dev/secrets': 'es-regex' }), /ClusterSecretStore "regex" may not be used from namespace "team-a"/);
  t.match(deny({ 'esi.dev/secrets': 'es-dev-only' }, ctx({ resolve: { storeClasses: [''] } })), /spec\.controller "dev" is not served by this ESI instance/);
  t.equal(admit(pod({ 'esi.dev/secrets': 'es-dev-only' }), ctx()).kind, 'mutated', 'by default every class is served');
  t.match(deny({ 'esi.dev/secrets': 'es-vault-bad' }), /SecretStore "team-a\/vault-bad": spec\.provider\.vault\.server must use https:\/\/ or http:\/\//,
    'the provider\'s own spec rules deny at admission, naming the field');
  t.match(deny({ 'esi.dev/secrets': 'es-other' }), /spec\.provider\.alibaba is not supported by ESI \(supported: fake, kubernetes, vault, openBao, aws, azurekv, gcpsm, grpc, webhook, onepassword, doppler, bitwardensecretsmanager, infisical, akeyless, conjur\)/);
  const fake = admit(pod({ 'esi.dev/secrets': 'es-fake' }), ctx());
  t.match(fake.kind === 'mutated' ? fake.warnings : [], [/uses the fake provider/], 'the fake provider comes with a warning');
  const aws = admit(pod({ 'esi.dev/secrets': 'es-prod', 'esi.dev/token-audience': 'custom' }), ctx());
  const vols = aws.kind === 'mutated' ? aws.pod.spec!.volumes! : [];
  t.same(vols.find((v) => v.name === 'esi-tokens')?.projected?.sources, [{ serviceAccountToken: { audience: 'sts.amazonaws.com', expirationSeconds: 3600, path: 'token-0' } }],
    'AWS web identity gets the STS audience');
});
