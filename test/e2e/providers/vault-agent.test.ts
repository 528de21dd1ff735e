// End to end: the agent (in-process, init-only, temp root) renders files from a real
// Vault-API dev server, through the vault provider loaded by the lazy registry — one store
// with kubernetes auth (the pod's projected token at the store's `tokenPath`, checked by
// the real apiserver's TokenReview), one with a static token mounted in `credentialsDir`.
// The agent's whole log is scanned for the values and tokens. Run: `npx tap <this file>`.
import t from 'tap';
import { CoreV1Api } from '@kubernetes/client-node';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { runAgent } from '../../../injector/agent.js';
import type { AgentConfig } from '../../../src/agent-config/types.js';
import { createNamespace, serviceAccountToken } from '../../support/kube.js';
import { captureLogger, tempRoot } from '../../support/fixtures/agent.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import { createToken, enableKubernetesAuth, startVaultServer, tokenCount, writePolicy } from '../../support/platform/backends/openbao.js';

const PASSWORD = 'CANARY-vault-pw-2b7e91';
const API_TOKEN = 'CANARY-vault-api-c04d5a';
const TOKEN_PATH = '/var/run/secrets/esi/vault/token';
const CRED_DIR = '/var/run/secrets/esi/credentials/vault-static';

const server = await startVaultServer(t);
const cp = await useControlPlane(t);
const ns = await createNamespace(cp.kc, 'vault-e2e', t);
await cp.kc.makeApiClient(CoreV1Api).createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'app' } } });

await writePolicy(server, 'app-read', 'path "secret/data/app/*" { capabilities = ["read"] }\npath "secret/metadata/app/*" { capabilities = ["list", "read"] }');
await enableKubernetesAuth(server, cp, { mount: 'kubernetes', reviewerNamespace: ns });
await server.api('POST', 'auth/kubernetes/role/app', {
  bound_service_account_names: ['app'], bound_service_account_namespaces: [ns], audience: 'vault', token_policies: ['app-read'], token_ttl: '5m',
});
await server.api('POST', 'secret/data/app/db', { data: { username: 'app_user', password: PASSWORD } });
await server.api('POST', 'secret/data/app/api', { data: { token: API_TOKEN } });
const staticToken = await createToken(server, ['app-read']);

function config(role = 'app'): AgentConfig {
  const vault = { server: server.addr, path: 'secret', version: 'v2' as const };
  return {
    version: 1,
    mode: 'init-only',
    pod: { namespace: ns, name: 'app-0', serviceAccountName: 'app' },
    outputDir: '/var/run/esi/secrets',
    fileMode: 0o440,
    refreshSeconds: 60,
    port: 0,
    stores: {
      [`SecretStore/${ns}/vault-k8s`]: {
        kind: 'SecretStore', name: 'vault-k8s', tokenPath: TOKEN_PATH, tokenAudience: 'vault',
        provider: { vault: { ...vault, auth: { kubernetes: { mountPath: 'kubernetes', role } } } },
      },
      [`SecretStore/${ns}/vault-static`]: {
        kind: 'SecretStore', name: 'vault-static', credentialsDir: CRED_DIR,
        provider: { vault: { ...vault, auth: { tokenSecretRef: { name: 'vault-token', key: 'token' } } } },
      },
    },
    secrets: [
      { name: 'db', store: `SecretStore/${ns}/vault-k8s`, data: [], dataFrom: [{ extract: { key: 'app/db' } }] },
      { name: 'api', store: `SecretStore/${ns}/vault-static`, data: [{ secretKey: 'token', remoteRef: { key: 'app/api', property: 'token' } }], dataFrom: [] },
      { name: 'all', store: `SecretStore/${ns}/vault-k8s`, data: [], dataFrom: [{ find: { path: 'app' }, rewrite: [{ regexp: { source: '^app/', target: '' } }] }] },
    ],
    templates: [{ file: 'app.conf', template: 'url=postgres://{{db.username}}:{{db.password}}@db/app\ntoken={{api.token}}\n' }],
  } as AgentConfig;
}

async function place(root: string, path: string, content: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), content, { mode: 0o600 });
}

t.test('init-only agent renders files from Vault with kubernetes and token auth, leaves no token behind', async (tt) => {
  const root = await tempRoot(tt);
  const podToken = await serviceAccountToken(cp.kc, ns, 'app', ['vault']);
  await place(root, TOKEN_PATH, podToken);
  await place(root, join(CRED_DIR, 'vault-token', 'token'), staticToken);
  const before = await tokenCount(server);
  const log = captureLogger();

  tt.equal(await runAgent({ config: config(), root, logger: log.logger }), 0, 'exit 0');
  const out = (p: string) => readFile(join(root, '/var/run/esi/secrets', p), 'utf8');
  tt.equal(await out('db/password'), PASSWORD);
  tt.equal(await out('db/username'), 'app_user');
  tt.equal(await out('api/token'), API_TOKEN);
  tt.equal(await out('all/db'), JSON.stringify({ password: PASSWORD, username: 'app_user' }), 'find: each secret as its JSON map');
  tt.equal(await out('app.conf'), `url=postgres://app_user:${PASSWORD}@db/app\ntoken=${API_TOKEN}\n`);
  tt.equal((await stat(join(root, '/var/run/esi/secrets/db/password'))).mode & 0o777, 0o440);
  tt.equal(await tokenCount(server), before, 'the kubernetes-auth token was revoked when the agent exited');
  await server.api('GET', 'auth/token/lookup-self', undefined, staticToken);
  tt.pass('the static token is left valid');

  const text = log.text();
  for (const s of [PASSWORD, API_TOKEN, podToken, staticToken, server.rootToken]) tt.notOk(text.includes(s), 'the log holds no value or token');
});

t.test('a refused login fails the init container with a value-free message', async (tt) => {
  const root = await tempRoot(tt);
  const podToken = await serviceAccountToken(cp.kc, ns, 'app', ['vault']);
  await place(root, TOKEN_PATH, podToken);
  await place(root, join(CRED_DIR, 'vault-token', 'token'), staticToken);
  const log = captureLogger();
  tt.equal(await runAgent({ config: config('no-such-role'), root, logger: log.logger }), 1, 'exit 1');
  const line = log.lines.find((l) => l.includes('"secret":"db"'));
  tt.ok(line, 'one line names the secret');
  tt.match(line, new RegExp(`SecretStore/${ns}/vault-k8s.*kubernetes login at auth/kubernetes refused.*AuthFailed`));
  await tt.rejects(stat(join(root, '/var/run/esi/secrets/db')), { code: 'ENOENT' }, 'nothing written');
  const text = log.text();
  for (const s of [PASSWORD, API_TOKEN, podToken, staticToken]) tt.notOk(text.includes(s), 'the log holds no value or token');
});
