// The agent end to end with the `kubernetes` provider against the real apiserver: an
// init-only agent (in-process, root = temp dir) authenticates with the pod's projected
// token (written where the store's `tokenPath` points, under the root, as the kubelet
// would), reads Kubernetes Secrets and renders files; RBAC denial fails the agent with a
// message naming the missing permission. No secret value ever reaches the logs.
import { CoreV1Api, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import t, { type Test } from 'tap';
import { runAgent } from '../../../injector/agent.js';
import type { AgentConfig } from '../../../src/agent-config/types.js';
import { captureLogger, tempRoot } from '../../support/fixtures/agent.js';
import { createNamespace, serviceAccountToken } from '../../support/kube.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';

const CANARY_PW = 'K8S-E2E-pw-0c4f9a';
const CANARY_TOKEN = 'K8S-E2E-tok-6b21e8';
const cp = await useControlPlane(t);
const core = cp.kc.makeApiClient(CoreV1Api);
const rbac = cp.kc.makeApiClient(RbacAuthorizationV1Api);
const ns = await createNamespace(cp.kc, 'k8s-e2e', t);

const b64 = (s: string) => Buffer.from(s).toString('base64');
await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'db-creds' }, data: { username: b64('app_user'), password: b64(CANARY_PW) } } });
await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'api' }, data: {
  token: b64(CANARY_TOKEN), 'config.json': b64(JSON.stringify({ db: { host: 'pg.internal', port: 5432 } })),
} } });

// The pod runs as `app`, whose Role may only get the two Secrets it needs.
for (const name of ['app', 'stranger']) await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name } } });
await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name: 'app-secrets' }, rules: [
  { apiGroups: [''], resources: ['secrets'], resourceNames: ['db-creds', 'api'], verbs: ['get'] },
] } });
await rbac.createNamespacedRoleBinding({ namespace: ns, body: {
  metadata: { name: 'app-secrets' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'app-secrets' },
  subjects: [{ kind: 'ServiceAccount', name: 'app', namespace: ns }],
} });

const STORE = `SecretStore/${ns}/cluster-secrets`;
const TOKEN_PATH = '/var/run/esi/tokens/token-0';

function config(serviceAccountName: string): AgentConfig {
  return {
    version: 1,
    mode: 'init-only',
    pod: { namespace: ns, name: 'app-0', serviceAccountName },
    outputDir: '/var/run/esi/secrets',
    fileMode: 0o440,
    refreshSeconds: 60,
    port: 0,
    stores: {
      [STORE]: {
        kind: 'SecretStore',
        name: 'cluster-secrets',
        provider: { kubernetes: { server: { url: cp.server, caBundle: b64(cp.caPem) }, auth: { serviceAccount: { name: serviceAccountName } } } },
        tokenPath: TOKEN_PATH,
      },
    },
    secrets: [
      { name: 'db', store: STORE, data: [], dataFrom: [{ extract: { key: 'db-creds' } }] },
      {
        name: 'api', store: STORE, dataFrom: [], data: [
          { secretKey: 'token', remoteRef: { key: 'api', property: 'token' } },
          { secretKey: 'db-host', remoteRef: { key: 'api', property: 'config.json.db.host' } },
        ],
      },
    ],
    templates: [{ file: 'app.conf', template: 'dsn=postgres://{{db.username}}:{{db.password}}@{{api.db-host}}/app\ntoken={{api.token}}\n' }],
  };
}

/** What the kubelet does for the projected token volume: a TokenRequest token on disk. */
async function mountToken(root: string, sa: string): Promise<void> {
  const path = join(root, TOKEN_PATH);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, await serviceAccountToken(cp.kc, ns, sa), { mode: 0o440 });
}

const out = (root: string, rel: string) => join(root, 'var/run/esi/secrets', rel);

function noCanary(tt: Test, text: string, where: string): void {
  for (const c of [CANARY_PW, CANARY_TOKEN]) tt.notOk(text.includes(c), `${where} holds no secret value`);
}

t.test('init-only agent renders files from Kubernetes Secrets with the pod token', async (tt) => {
  const root = await tempRoot(tt);
  await mountToken(root, 'app');
  const { logger, text } = captureLogger();
  const code = await runAgent({ config: config('app'), root, logger });
  tt.equal(code, 0, 'the agent exits 0 after the first render');
  tt.equal(await readFile(out(root, 'db/username'), 'utf8'), 'app_user');
  tt.equal(await readFile(out(root, 'db/password'), 'utf8'), CANARY_PW);
  tt.equal(await readFile(out(root, 'api/token'), 'utf8'), CANARY_TOKEN);
  tt.equal(await readFile(out(root, 'api/db-host'), 'utf8'), 'pg.internal', 'a JSON path inside a data key');
  tt.equal(await readFile(out(root, 'app.conf'), 'utf8'), `dsn=postgres://app_user:${CANARY_PW}@pg.internal/app\ntoken=${CANARY_TOKEN}\n`);
  tt.same((await readdir(out(root, 'db'))).sort(), ['password', 'username']);
  for (const f of ['db/password', 'api/token', 'app.conf']) tt.equal((await stat(out(root, f))).mode & 0o777, 0o440, `${f} has mode 0440`);
  noCanary(tt, text(), 'the agent log');
});

t.test('a service account without RBAC: the agent fails and says which permission is missing', async (tt) => {
  const root = await tempRoot(tt);
  await mountToken(root, 'stranger');
  const { logger, text } = captureLogger();
  const code = await runAgent({ config: config('stranger'), root, logger });
  tt.not(code, 0, 'the agent fails');
  const log = text();
  tt.match(log, `system:serviceaccount:${ns}:stranger`);
  tt.match(log, `RBAC must allow \\"get\\" on secrets in namespace \\"${ns}\\" for the pod's service account`);
  tt.match(log, /\[Forbidden\]/);
  await tt.rejects(stat(out(root, 'db/password')), 'nothing was written');
  noCanary(tt, log, 'the agent log');
});

t.test('an expired or foreign token: AuthFailed, nothing written', async (tt) => {
  const root = await tempRoot(tt);
  const path = join(root, TOKEN_PATH);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, 'not-a-token');
  const { logger, text } = captureLogger();
  tt.not(await runAgent({ config: config('app'), root, logger }), 0);
  tt.match(text(), /401 Unauthorized/);
  tt.match(text(), /\[AuthFailed\]/);
  noCanary(tt, text(), 'the agent log');
});
