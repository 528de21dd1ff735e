// The one rule of dynamic-secret engine paths (src/providers/vault/paths.ts), without a
// cluster: every spelling that leaves the secrets engines is refused — by the rule itself, by
// the webhook's annotation parser, by the agent configuration's check, and by the vault
// provider's leases.generate before any request, which is what the reconciler's
// VaultDynamicSecret runs (src/controller/generatorstate/generators.ts), with InvalidSpec in the message the
// ExternalSecret's status carries. The admission and platform sides: test/e2e/webhook/denials.test.ts.
import t from 'tap';
import { dynamicPath, dynamicPathProblem } from '../../../../src/providers/vault/paths.js';
import { parseDynamic } from '../../../../src/pod-contract/annotations.js';
import { VaultLeases } from '../../../../src/providers/vault/leases.js';
import { ProviderError } from '../../../../src/providers/types.js';
import { Generators } from '../../../../src/controller/generatorstate/generators.js';
import type { ClientCache } from '../../../../src/controller/runtime/clients.js';
import { fetchExternalSecret } from '../../../../src/externalsecret/fetch.js';
import type { KubeRest } from '../../../../src/kube/rest.js';

const REFUSED: [string, RegExp][] = [
  ['', /segments separated by single slashes/],
  ['/', /segments separated by single slashes/],
  ['database//creds/app', /single slashes/],
  ['./database/creds/app', /no "\." or "\.\." segment/],
  ['database/../sys/leases/lookup', /no "\." or "\.\." segment/],
  ['database/creds/..', /"\.\."/],
  ['sys/leases/lookup', /"sys" segment/],
  ['/sys/leases/lookup', /"sys" segment/],
  ['ns1/sys/leases/lookup', /"sys" segment/],
  ['ns1/ns2/sys/leases/revoke-prefix/database', /"sys" segment/],
  ['SYS/leases/lookup', /"sys" segment/],
  ['ns1/Sys/mounts', /"sys" segment/],
  ['database/creds/sys', /"sys" segment/],
  ['auth/token/create', /"auth" segment/],
  ['ns1/auth/token/create', /"auth" segment/],
  ['http://127.0.0.1:8200/v1/secret/data/x', /is a URL/],
  ['https://metadata.google.internal/computeMetadata', /is a URL/],
  ['database/creds/x://y', /is a URL/],
  ['file:database/creds/app', /is a URL/],
  ['database/creds/app?list=true', /"\?" or "#"/],
  ['database/creds/app#frag', /"\?" or "#"/],
  ['database\\creds\\app', /backslash/],
  ['database/creds/..\\..\\sys', /backslash/],
  ['database/%2e%2e/sys/leases', /percent-encoding/],
  ['database%2fcreds%2fapp', /percent-encoding/],
  ['database/%2E%2E/x', /percent-encoding/],
  ['database/%252e%252e/x', /percent-encoding/],
  ['database/creds/app\n', /control character/],
  ['database/creds/\u0000app', /control character/],
  ['database/creds/\u0085app', /control character/],
  ['database/creds/\u2028app', /control character/],
  ['database/\u007fcreds', /control character/],
  [`database/creds/${'a'.repeat(1100)}`, /longer than 1024/],
];

/** A test name TAP can carry (no control or separator characters). */
const named = (s: string) => JSON.stringify(s).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

const ACCEPTED: [string, string][] = [
  ['database/creds/app', 'database/creds/app'],
  ['/pki/issue/web', 'pki/issue/web'],
  ['aws/creds/my-role/', 'aws/creds/my-role'],
  ['ns1/database/creds/app', 'ns1/database/creds/app'],
  ['database/creds/system', 'database/creds/system'],
  ['database/creds/authors', 'database/creds/authors'],
  ['database/creds/a.b_c-d@e', 'database/creds/a.b_c-d@e'],
];

t.test('the rule: refused spellings say why; accepted ones are sent with their slashes trimmed', async (t) => {
  for (const [path, why] of REFUSED) t.match(dynamicPathProblem(path), why, named(path));
  for (const [path, sent] of ACCEPTED) {
    t.equal(dynamicPathProblem(path), undefined, JSON.stringify(path));
    t.equal(dynamicPath(path), sent);
  }
  t.throws(() => dynamicPath('ns1/sys/leases/lookup'), /dynamic secret path "ns1\/sys\/leases\/lookup" has a "sys" segment/);
});

t.test('auth segments only for the auth section or the whole response; sys never', async (t) => {
  for (const result of ['auth', 'raw'] as const) {
    t.equal(dynamicPathProblem('auth/token/create', result), undefined, `auth/token/create with ${result}`);
    t.equal(dynamicPathProblem('ns1/auth/token/create', result), undefined, `behind a namespace with ${result}`);
    t.match(dynamicPathProblem('ns1/sys/leases/lookup', result), /"sys" segment/, `sys with ${result}`);
    t.match(dynamicPathProblem('auth/../sys/x', result), /"\.\."/);
  }
  t.match(dynamicPathProblem('auth/token/create', 'data'), /"auth" segment/);
});

t.test('the webhook\'s annotation parser applies the rule (a pod credential is data: no auth)', async (t) => {
  for (const [path] of REFUSED.filter(([p]) => p && !/[?\s]/.test(p) && p.length < 200)) {
    t.throws(() => parseDynamic('db', `bao:${path}`), /the engine path /, named(`bao:${path}`));
  }
  t.throws(() => parseDynamic('db', 'bao:ns1/sys/leases/lookup'), /the engine path has a "sys" segment/);
  t.throws(() => parseDynamic('db', 'ClusterSecretStore/bao:ns1/auth/token/create'), /"auth" segment/);
  t.match(parseDynamic('db', 'ClusterSecretStore/bao:/ns1/pki/issue/web?common_name=a.example.com'), { store: 'bao', path: 'ns1/pki/issue/web', parameters: { common_name: 'a.example.com' } });
});

/** A vault provider's lease operations whose every request is recorded (none may happen). */
function recordingLeases() {
  const calls: string[] = [];
  const leases = new VaultLeases('SecretStore/team/vault', (method, path) => {
    calls.push(`${method} ${path}`);
    return Promise.resolve({ body: { data: { username: 'u' }, lease_id: 'database/creds/app/x', lease_duration: 60 }, token: 't' });
  }, { hold: () => undefined, release: () => undefined });
  return { calls, leases };
}

t.test('the vault provider\'s generate() refuses before any request: InvalidSpec', async (t) => {
  const { calls, leases } = recordingLeases();
  for (const path of ['ns1/sys/leases/lookup', 'sys/leases/lookup', 'ns1/auth/token/create', 'x/%2e%2e/sys', 'http://127.0.0.1/x', 'db/creds/a?x=1']) {
    const err = await leases.generate({ path }).then(() => undefined, (e: unknown) => e);
    t.ok(err instanceof ProviderError && err.code === 'InvalidSpec', `${path}: InvalidSpec`);
    t.match((err as Error).message, /^SecretStore\/team\/vault: dynamic secret path /);
  }
  t.ok(await leases.generate({ path: 'ns1/auth/token/create', method: 'POST', parameters: {}, result: 'auth' }), 'auth section: allowed');
  t.same(calls, ['POST ns1/auth/token/create'], 'no request for a refused path');
  t.ok(await leases.generate({ path: '/database/creds/app/' }));
  t.same(calls.at(-1), 'GET database/creds/app', 'sent trimmed');
});

t.test('the reconciler\'s VaultDynamicSecret: sys/ behind a namespace prefix is InvalidSpec in the ExternalSecret\'s message, and nothing is requested', async (t) => {
  const { calls, leases } = recordingLeases();
  // The generator runs through the store client the cache builds for it: its lease operations
  // are the real vault provider's (src/providers/vault/leases.ts), only its transport records.
  const clients = { get: () => Promise.resolve({ fresh: { leases } }) } as unknown as ClientCache;
  const generators = new Generators({} as KubeRest, clients);
  const gen = {
    kind: 'VaultDynamicSecret' as const, what: 'VaultDynamicSecret "team/lookup"', id: 'VaultDynamicSecret:lookup', name: 'lookup', controller: '', uid: 'u', generation: 1,
    spec: { path: 'ns1/sys/leases/lookup', method: 'POST', parameters: { lease_id: 'x' }, provider: { server: 'http://127.0.0.1:1', auth: { tokenSecretRef: { name: 't', key: 'token' } } } },
  };
  const err = await generators.run('team', gen).then(() => undefined, (e: unknown) => e);
  t.ok(err instanceof ProviderError && err.code === 'InvalidSpec', 'InvalidSpec');
  t.same(calls, [], 'no request reached the store');
  // What the ExternalSecret's Ready condition says (src/externalsecret/fetch.ts wraps the cause).
  const es = await fetchExternalSecret({} as never, { name: 'lookup', data: [], dataFrom: [{ sourceRef: { generatorRef: { apiVersion: 'generators.external-secrets.io/v1alpha1', kind: 'VaultDynamicSecret', name: 'lookup' } } }] }, {
    generate: () => generators.run('team', gen),
  }).then(() => undefined, (e: unknown) => e as Error);
  t.match(es?.message, /dataFrom\[0\].*dynamic secret path "ns1\/sys\/leases\/lookup" has a "sys" segment: a system path, not a secrets engine \[InvalidSpec\]/);
});
