// The reference checks of store specs (src/providers/spec-checks.ts): one verdict and one
// message per rule whatever the provider, through the path the webhook and the reconciler
// both take (storeSpecProblems, src/stores/access.ts), and the webhook's backstop over the
// references a provider declares giving the same message.
import t from 'tap';
import type { SecretStoreProvider } from '../../../src/api/types.js';
import { referencedObjects, storeSpecProblems } from '../../../src/stores/access.js';
import { caBundlePem, credentialRefProblems } from '../../../src/providers/spec-checks.js';

type Spec = Record<string, unknown>;
const sel = (name: string, key = 'k') => ({ name, key });
const vault = (extra: Spec = {}): Spec => ({ server: 'https://vault.example:8200', path: 'secret', version: 'v2', auth: { tokenSecretRef: sel('tok', 'token') }, ...extra });

/** One valid spec per provider, and where each keeps its references. */
const BASE: Record<string, Spec> = {
  vault: vault(),
  openBao: { server: 'https://bao.example:8200', auth: { tokenSecretRef: sel('tok', 'token') } },
  kubernetes: { remoteNamespace: 'default', server: { url: 'https://k8s.example:6443' }, auth: { token: { bearerToken: sel('tok', 'token') } } },
  aws: { service: 'SecretsManager', region: 'eu-central-1', auth: { secretRef: { accessKeyIDSecretRef: sel('aws', 'id'), secretAccessKeySecretRef: sel('aws', 'secret') } } },
  azurekv: { vaultUrl: 'https://x.vault.azure.net', tenantId: 't', authSecretRef: { clientId: sel('az', 'id'), clientSecret: sel('az', 'secret') } },
  gcpsm: { projectID: 'p', auth: { secretRef: { secretAccessKeySecretRef: sel('gcp', 'key') } } },
  // The stores whose reference fields are declared in a field table (src/providers/fields.ts).
  onepassword: { connectHost: 'https://connect.example:8080', vaults: { v: 1 }, auth: { secretRef: { connectTokenSecretRef: sel('op', 'token') } } },
  bitwardensecretsmanager: { organizationID: 'o', projectID: 'p', auth: { secretRef: { credentials: sel('bw', 'token') } } },
  doppler: { auth: { secretRef: { dopplerToken: { name: 'dp' } } } },
  akeyless: { akeylessGWApiURL: 'https://api.akeyless.io', authSecretRef: { secretRef: { accessID: sel('ak', 'id'), accessType: sel('ak', 'type') } } },
  infisical: { auth: { universalAuthCredentials: { clientId: sel('inf', 'id'), clientSecret: sel('inf', 'secret') } }, secretsScope: { projectSlug: 'p', environmentSlug: 'dev' } },
  conjur: { url: 'https://conjur.example', auth: { apikey: { account: 'a', userRef: sel('cj', 'user'), apiKeyRef: sel('cj', 'key') } } },
  webhook: { url: 'https://hook.example/get?key={{ .remoteRef.key }}', result: { jsonPath: '$.value' } },
};

/** Spec with the Secret key selector of each provider replaced by `ref`, and its path. */
const WITH_SECRET_REF: Record<string, [(ref: unknown) => Spec, string]> = {
  vault: [(ref) => vault({ auth: { tokenSecretRef: ref } }), 'vault.auth.tokenSecretRef'],
  openBao: [(ref) => ({ ...BASE.openBao, auth: { tokenSecretRef: ref } }), 'openBao.auth.tokenSecretRef'],
  kubernetes: [(ref) => ({ ...BASE.kubernetes, auth: { token: { bearerToken: ref } } }), 'kubernetes.auth.token.bearerToken'],
  aws: [(ref) => ({ ...BASE.aws, auth: { secretRef: { accessKeyIDSecretRef: ref, secretAccessKeySecretRef: sel('aws', 'secret') } } }), 'aws.auth.secretRef.accessKeyIDSecretRef'],
  azurekv: [(ref) => ({ ...BASE.azurekv, authSecretRef: { clientId: ref, clientSecret: sel('az', 'secret') } }), 'azurekv.authSecretRef.clientId'],
  gcpsm: [(ref) => ({ projectID: 'p', auth: { secretRef: { secretAccessKeySecretRef: ref } } }), 'gcpsm.auth.secretRef.secretAccessKeySecretRef'],
  onepassword: [(ref) => ({ ...BASE.onepassword, auth: { secretRef: { connectTokenSecretRef: ref } } }), 'onepassword.auth.secretRef.connectTokenSecretRef'],
  bitwardensecretsmanager: [(ref) => ({ ...BASE.bitwardensecretsmanager, auth: { secretRef: { credentials: ref } } }), 'bitwardensecretsmanager.auth.secretRef.credentials'],
  akeyless: [(ref) => ({ ...BASE.akeyless, authSecretRef: { secretRef: { accessID: ref, accessType: sel('ak', 'type') } } }), 'akeyless.authSecretRef.secretRef.accessID'],
  infisical: [(ref) => ({ ...BASE.infisical, auth: { universalAuthCredentials: { clientId: ref, clientSecret: sel('inf', 'secret') } } }), 'infisical.auth.universalAuthCredentials.clientId'],
  conjur: [(ref) => ({ ...BASE.conjur, auth: { apikey: { account: 'a', userRef: ref, apiKeyRef: sel('cj', 'key') } } }), 'conjur.auth.apikey.userRef'],
};

/** Spec with each provider's ServiceAccount selector set to `ref`, and its path. */
const WITH_SA: Record<string, [(ref: unknown) => Spec, string]> = {
  vault: [(ref) => vault({ auth: { kubernetes: { role: 'r', serviceAccountRef: ref } } }), 'vault.auth.kubernetes.serviceAccountRef'],
  kubernetes: [(ref) => ({ ...BASE.kubernetes, auth: { serviceAccount: ref } }), 'kubernetes.auth.serviceAccount'],
  aws: [(ref) => ({ service: 'SecretsManager', region: 'eu-central-1', role: 'arn:aws:iam::123456789012:role/r', auth: { jwt: { serviceAccountRef: ref } } }), 'aws.auth.jwt.serviceAccountRef'],
  azurekv: [(ref) => ({ vaultUrl: 'https://x.vault.azure.net', tenantId: 't', authType: 'WorkloadIdentity', serviceAccountRef: ref }), 'azurekv.serviceAccountRef'],
  gcpsm: [(ref) => ({ projectID: 'p', auth: { workloadIdentity: { clusterLocation: 'l', clusterName: 'c', serviceAccountRef: ref } } }), 'gcpsm.auth.workloadIdentity.serviceAccountRef'],
  akeyless: [(ref) => ({ ...BASE.akeyless, authSecretRef: { kubernetesAuth: { accessID: 'a', k8sConfName: 'c', serviceAccountRef: ref } } }), 'akeyless.authSecretRef.kubernetesAuth.serviceAccountRef'],
  conjur: [(ref) => ({ ...BASE.conjur, auth: { jwt: { account: 'a', serviceID: 's', serviceAccountRef: ref } } }), 'conjur.auth.jwt.serviceAccountRef'],
};

/** Where each provider with a server CA keeps it. */
const CA_AT: Record<string, [(ca: Spec) => Spec, string]> = {
  vault: [(ca) => vault(ca), 'vault'],
  openBao: [(ca) => ({ ...BASE.openBao, ...ca }), 'openBao'],
  kubernetes: [(ca) => ({ ...BASE.kubernetes, server: { url: 'https://k8s.example:6443', ...ca } }), 'kubernetes.server'],
  ...Object.fromEntries(['bitwardensecretsmanager', 'akeyless', 'infisical', 'conjur', 'webhook'].map((p): [string, [(ca: Spec) => Spec, string]] => [p, [(ca) => ({ ...BASE[p], ...ca }), p]])),
};

const problems = (provider: string, spec: Spec) => storeSpecProblems({ [provider]: spec } as SecretStoreProvider);
const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

t.test('every base spec of the table is valid, so each problem below comes from the change', async (t) => {
  for (const [provider, spec] of Object.entries(BASE)) t.same(problems(provider, spec), [], provider);
  for (const [provider, [at]] of Object.entries(WITH_SA)) t.same(problems(provider, at({ name: 'app' })), [], `${provider} with a ServiceAccount`);
  for (const [provider, [at]] of Object.entries(CA_AT)) {
    t.same(problems(provider, at({ caBundle: Buffer.from(PEM).toString('base64') })), [], `${provider} with a base64 caBundle`);
    t.same(problems(provider, at({ caBundle: PEM })), [], `${provider} with a raw PEM caBundle`);
    t.same(problems(provider, at({ caProvider: { type: 'ConfigMap', name: 'ca', key: 'ca.crt' } })), [], `${provider} with a caProvider`);
  }
});

t.test('a caBundle that holds no certificate: one verdict and one message for every provider', async (t) => {
  for (const bundle of ['', Buffer.from('not a certificate').toString('base64'), 'bm90IGEgY2VydA==', 42]) {
    for (const [provider, [at, prefix]] of Object.entries(CA_AT)) {
      t.same(problems(provider, at({ caBundle: bundle })), [`spec.provider.${prefix}.caBundle must be a base64-encoded PEM certificate bundle`], `${provider} ${JSON.stringify(bundle)}`);
    }
  }
  t.equal(caBundlePem(Buffer.from(PEM).toString('base64')), PEM, 'base64 decodes to the PEM the clients trust');
  t.equal(caBundlePem(PEM), PEM, 'a raw PEM is taken as it is');
});

t.test('caProvider: type, name rule and key rule, the same for every provider', async (t) => {
  const cases: [Spec, (at: string) => string[]][] = [
    [{ type: 'Other', name: 'ca', key: 'ca.crt' }, (at) => [`${at}.type must be Secret or ConfigMap`]],
    [{ type: 'ConfigMap', name: '../kube-system', key: 'ca.crt' }, (at) => [`${at} references ConfigMap "../kube-system", which is not a valid ConfigMap name`]],
    [{ type: 'Secret', name: 'ca', key: '../ca.crt' }, (at) => [`${at} key "../ca.crt" is not a valid key (letters, digits, "-", "_", "."; not "." or starting with "..")`]],
    [{ type: 'Secret', name: 'ca' }, (at) => [`${at}.key must be a non-empty string: a Secret key selector needs name and key`]],
  ];
  for (const [ca, expected] of cases) {
    for (const [provider, [at, prefix]] of Object.entries(CA_AT)) {
      t.same(problems(provider, at({ caProvider: ca })), expected(`spec.provider.${prefix}.caProvider`), `${provider} ${JSON.stringify(ca)}`);
    }
  }
});

t.test('Secret key selectors: the same rules and messages in every provider', async (t) => {
  const cases: [unknown, (at: string) => string[]][] = [
    ['tok', (at) => [`${at} must be an object with name and key`]],
    [{ key: 'k' }, (at) => [`${at}.name must be a non-empty string`]],
    [{ name: 'tok' }, (at) => [`${at}.key must be a non-empty string: a Secret key selector needs name and key`]],
    [sel('../x'), (at) => [`${at} references Secret "../x", which is not a valid Secret name`]],
    [sel('tok', '../token'), (at) => [`${at} key "../token" is not a valid key (letters, digits, "-", "_", "."; not "." or starting with "..")`]],
    [{ ...sel('tok'), namespace: 'a/b' }, (at) => [`${at}.namespace must be a namespace name (RFC 1123 label)`]],
  ];
  for (const [ref, expected] of cases) {
    for (const [provider, [at, path]] of Object.entries(WITH_SECRET_REF)) {
      t.same(problems(provider, at(ref)), expected(`spec.provider.${path}`), `${provider} ${JSON.stringify(ref)}`);
    }
  }
});

t.test('ServiceAccount selectors: the same rules and messages in every provider', async (t) => {
  const cases: [unknown, (at: string) => string[]][] = [
    [{}, (at) => [`${at}.name must be a non-empty string`]],
    [{ name: 'Bad/Name' }, (at) => [`${at} references ServiceAccount "Bad/Name", which is not a valid ServiceAccount name`]],
    [{ name: 'app', audiences: 'sts' }, (at) => [`${at}.audiences must be a list of strings`]],
  ];
  for (const [ref, expected] of cases) {
    for (const [provider, [at, path]] of Object.entries(WITH_SA)) {
      t.same(problems(provider, at(ref)), expected(`spec.provider.${path}`), `${provider} ${JSON.stringify(ref)}`);
    }
  }
});

t.test('the webhook backstop says what the spec check says', async (t) => {
  for (const [provider, [at, path]] of Object.entries(WITH_SECRET_REF)) {
    for (const ref of [sel('../x'), sel('tok', '../token')]) {
      const provided = { [provider]: at(ref) } as SecretStoreProvider;
      const declared = referencedObjects(provided).credentials.filter((c) => c.path === path);
      t.equal(declared.length, 1, `${provider} declares ${path}`);
      t.same(credentialRefProblems(declared[0]!).map((p) => `spec.provider.${p}`), storeSpecProblems(provided), `${provider} ${JSON.stringify(ref)}`);
    }
  }
});
