// Names are names, never paths: the one name rule (src/kube/names.ts), the one path builder
// (src/kube/paths.ts), and the lint rule that keeps every other file from assembling a
// Kubernetes REST path by hand (eslint.config.js). The end-to-end proof against the real
// apiserver, as a tenant, is test/e2e/adversarial/controller-names.test.ts.
import t from 'tap';
import { ESLint } from 'eslint';
import { join } from 'node:path';
import { isDnsLabel, isDnsSubdomain, nameProblem } from '../../../src/kube/names.js';
import { InvalidNameError } from '../../../src/kube/names.js';
import { CLUSTER_SECRET_STORES, EXTERNAL_SECRETS, LEASES, resourceOf, resourcePath, SECRETS } from '../../../src/kube/paths.js';

const CLIMBS = ['..', '../kube-system/secrets/ca', 'a/../../b', '%2e%2e', 'x%2Fy', 'a/b', '.', 'A', '-a', 'a-', 'a..b', '', 'a'.repeat(254)];

t.test('the name rules are the apiserver\'s', async (t) => {
  for (const ok of ['a', 'db-creds', 'a.b.c', '0x', 'a'.repeat(253)]) t.ok(isDnsSubdomain(ok), `subdomain ${ok.slice(0, 20)}`);
  for (const bad of CLIMBS) t.notOk(isDnsSubdomain(bad), `not a subdomain: ${JSON.stringify(bad.slice(0, 30))}`);
  t.ok(isDnsLabel('team-a'));
  for (const bad of ['a.b', 'a'.repeat(64), 'kube-system/..', '..']) t.notOk(isDnsLabel(bad), `not a label: ${bad.slice(0, 20)}`);
  t.match(nameProblem('../x', 'subdomain'), /must be an RFC 1123 subdomain .*got "\.\.\/x"/);
  t.match(nameProblem('x'.repeat(300), 'subdomain'), /got "x{64}…"$/, 'a long value is cut in the message');
  t.equal(nameProblem('ok', 'subdomain'), undefined);
});

t.test('paths are built from validated names, each segment encoded', async (t) => {
  t.equal(resourcePath(SECRETS, { namespace: 'team-a', name: 'db' }), '/api/v1/namespaces/team-a/secrets/db');
  t.equal(resourcePath(SECRETS), '/api/v1/secrets');
  t.equal(resourcePath(SECRETS, { query: { labelSelector: 'esi.dev/managed=true', limit: 500, continue: undefined } }),
    '/api/v1/secrets?labelSelector=esi.dev%2Fmanaged%3Dtrue&limit=500');
  t.equal(resourcePath(EXTERNAL_SECRETS, { namespace: 'ns', name: 'es', subresource: 'status' }), '/apis/external-secrets.io/v1/namespaces/ns/externalsecrets/es/status');
  t.equal(resourcePath(CLUSTER_SECRET_STORES, { name: 'shared' }), '/apis/external-secrets.io/v1/clustersecretstores/shared');
  t.equal(resourcePath(LEASES, { namespace: 'esi-system', name: 'esi-controller' }), '/apis/coordination.k8s.io/v1/namespaces/esi-system/leases/esi-controller');
  t.equal(resourcePath(resourceOf('v1', 'configmaps', true), { namespace: 'a', name: 'b' }), '/api/v1/namespaces/a/configmaps/b');
  for (const bad of CLIMBS) {
    t.throws(() => resourcePath(SECRETS, { namespace: 'team-a', name: bad }), InvalidNameError, `name ${JSON.stringify(bad.slice(0, 30))} refused`);
    t.throws(() => resourcePath(SECRETS, { namespace: bad, name: 'db' }), InvalidNameError, `namespace ${JSON.stringify(bad.slice(0, 30))} refused`);
  }
  t.throws(() => resourcePath(CLUSTER_SECRET_STORES, { namespace: 'a', name: 'b' }), /cluster-scoped/);
  t.throws(() => resourcePath(SECRETS, { namespace: 'a', subresource: 'status' }), /needs an object name/);
});

t.test('lint refuses a Kubernetes path assembled outside src/kube/paths.ts', async (t) => {
  const root = join(import.meta.dirname, '..', '..', '..');
  const eslint = new ESLint({ cwd: root });
  const code = [
    'export const a = (ns: string, n: string) => `/api/v1/namespaces/${ns}/secrets/${n}`;',
    "export const b = (n: string) => '/apis/external-secrets.io/v1/clustersecretstores/' + n;",
    "export const c = (ns: string) => 'namespaces/' + ns;",
    "export const d = '/v1/sys/leases/renew';",
  ].join('\n');
  const [res] = await eslint.lintText(code, { filePath: join(root, 'src/controller/example.ts') });
  const hits = res!.messages.filter((m) => m.ruleId === 'no-restricted-syntax').map((m) => m.line);
  t.same(hits, [1, 2, 3], 'the three Kubernetes paths are flagged, the Vault path is not');
  const [own] = await eslint.lintText(code, { filePath: join(root, 'src/kube/paths.ts') });
  t.equal(own!.messages.filter((m) => m.ruleId === 'no-restricted-syntax').length, 0, 'paths.ts itself may');
});
