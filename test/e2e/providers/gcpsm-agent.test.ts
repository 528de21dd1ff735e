// gcpsm end to end.
//  1. The agent (runAgent, in-process, a temp dir as root) renders files from a Secret
//     Manager emulator through the lazily loaded gcpsm provider, with a service-account
//     key mounted as the store's credential; the captured logs hold no secret value.
//  2. Workload identity: a real projected token of the local kube-apiserver
//     (TokenRequest) exchanged by the provider's external-account client at a local STS
//     stand-in that verifies it as GCP STS does (RS256 signature against the
//     apiserver's JWKS, issuer, audience) and checks the OAuth token-exchange form.
//     Real GCP STS is not reachable from here; what it would do beyond that (attribute
//     conditions, IAM) is not covered.
import { generateKeyPairSync } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import t from 'tap';
import { runAgent } from '../../../injector/agent.js';
import type { AgentConfig } from '../../../src/agent-config/types.js';
import { newGcpsmClient } from '../../../src/providers/gcpsm/index.js';
import { JWT_TOKEN_TYPE } from '../../../src/providers/gcpsm/auth.js';
import { federationPlan } from '../../../src/providers/gcpsm/spec.js';
import { ProviderError } from '../../../src/providers/types.js';
import { startGcpsmEmulator } from '../../support/platform/backends/gcpsm-emulator.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import { createNamespace, serviceAccountToken } from '../../support/kube.js';
import { apiserverIssuer, verifyJwt } from '../../support/oidc.js';
import { captureLogger, tempRoot } from '../../support/fixtures/agent.js';
import { testContext } from '../../support/provider-context.js';

const PROJECT = 'esi-e2e';
const STORE = 'SecretStore/team-a/gcp';
const CANARY_PW = 'CANARY-gcpsm-pw-41d7';
const CANARY_TOKEN = 'CANARY-gcpsm-tok-9e02';
const CANARY_FOUND = 'CANARY-gcpsm-found-77aa';

t.test('the agent renders files from Secret Manager (emulator) with a mounted key', async (tt) => {
  const emu = await startGcpsmEmulator(tt);
  const sm = emu.client();
  const seed = async (id: string, value: string, labels: Record<string, string> = {}) => {
    await sm.createSecret({ parent: `projects/${PROJECT}`, secretId: id, secret: { labels, replication: { automatic: {} } } }).catch((err: { code?: number }) => {
      if (err.code !== 6) throw err;
    });
    await sm.addSecretVersion({ parent: `projects/${PROJECT}/secrets/${id}`, payload: { data: Buffer.from(value) } });
  };
  await seed('db-creds', JSON.stringify({ username: 'app_user', password: CANARY_PW }));
  await seed('api-token', CANARY_TOKEN);
  await seed('feature-a', CANARY_FOUND, { team: 'payments' });
  await seed('feature-b', 'other-team', { team: 'search' });

  const root = await tempRoot(tt);
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const keyFile = join(root, 'var/run/esi/credentials/team-a-gcp/gcp-sa/key.json');
  await mkdir(dirname(keyFile), { recursive: true });
  await writeFile(keyFile, JSON.stringify({ type: 'service_account', project_id: PROJECT, private_key: pem, client_email: 'esi@esi-e2e.iam.gserviceaccount.com' }), { mode: 0o400 });

  const before = process.env.SECRET_MANAGER_EMULATOR_HOST;
  process.env.SECRET_MANAGER_EMULATOR_HOST = emu.endpoint;
  tt.teardown(() => {
    if (before === undefined) delete process.env.SECRET_MANAGER_EMULATOR_HOST;
    else process.env.SECRET_MANAGER_EMULATOR_HOST = before;
  });

  const config: AgentConfig = {
    version: 1,
    mode: 'init-only',
    pod: { namespace: 'team-a', name: 'app-0', serviceAccountName: 'app' },
    outputDir: '/var/run/esi/secrets',
    fileMode: 0o440,
    refreshSeconds: 60,
    port: 0,
    stores: {
      [STORE]: {
        kind: 'SecretStore',
        name: 'gcp',
        provider: { gcpsm: { projectID: PROJECT, auth: { secretRef: { secretAccessKeySecretRef: { name: 'gcp-sa', key: 'key.json' } } } } },
        credentialsDir: '/var/run/esi/credentials/team-a-gcp',
      },
    },
    secrets: [
      { name: 'db', store: STORE, data: [], dataFrom: [{ extract: { key: 'db-creds' } }] },
      { name: 'api', store: STORE, data: [{ secretKey: 'token', remoteRef: { key: 'api-token' } }, { secretKey: 'user', remoteRef: { key: 'db-creds', property: 'username' } }], dataFrom: [] },
      { name: 'features', store: STORE, data: [], dataFrom: [{ find: { tags: { team: 'payments' } } }] },
    ],
    templates: [{ file: 'app.conf', template: 'dsn=postgres://{{db.username}}:{{db.password}}@db/app\ntoken={{api.token}}\n' }],
  };
  const out = (rel: string) => readFile(join(root, 'var/run/esi/secrets', rel), 'utf8');
  const { logger, text } = captureLogger();
  tt.equal(await runAgent({ config, root, logger }), 0, 'init-only run succeeds');
  tt.equal(await out('db/password'), CANARY_PW);
  tt.equal(await out('db/username'), 'app_user');
  tt.equal(await out('api/token'), CANARY_TOKEN);
  tt.equal(await out('api/user'), 'app_user', 'a JSON property');
  tt.equal(await out('features/feature-a'), CANARY_FOUND, 'find by tags (labels)');
  tt.rejects(out('features/feature-b'), 'other labels are not selected');
  tt.equal(await out('app.conf'), `dsn=postgres://app_user:${CANARY_PW}@db/app\ntoken=${CANARY_TOKEN}\n`);
  tt.match(text(), /SECRET_MANAGER_EMULATOR_HOST is set/, 'the emulator mode is logged');

  // A new version is what the next run serves (`latest`).
  await seed('api-token', `${CANARY_TOKEN}-v2`);
  tt.equal(await runAgent({ config, root, logger }), 0);
  tt.equal(await out('api/token'), `${CANARY_TOKEN}-v2`);

  // A missing secret fails the run with a message naming store and key, not values.
  const broken = { ...config, secrets: [{ name: 'missing', store: STORE, data: [{ secretKey: 'x', remoteRef: { key: 'no-such-secret' } }], dataFrom: [] }] };
  tt.equal(await runAgent({ config: broken, root, logger }), 1, 'a missing secret fails init-only');
  tt.match(text(), /no-such-secret/);
  tt.match(text(), /NotFound/);

  const logs = text();
  const keyBody = pem.split('\n')[5]!;
  for (const secret of [CANARY_PW, CANARY_TOKEN, CANARY_FOUND, keyBody]) tt.notOk(logs.includes(secret), 'the agent logs hold no secret value or key material');
});

// ---------------------------------------------------------------- workload identity

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d));
    req.on('end', () => resolve(body));
  });
}

t.test('workload identity: the pod token exchanged at STS (local stand-in verifying it)', async (tt) => {
  const cp = await useControlPlane(tt);
  const ns = await createNamespace(cp.kc, 'gcpsm-wi', tt);
  const { issuer, jwks } = await apiserverIssuer(cp);

  const wi = { serviceAccountRef: { name: 'default' }, clusterProjectID: 'host-proj', clusterLocation: 'europe-west1', clusterName: 'prod' };
  const gke = federationPlan(wi, PROJECT);
  if (Array.isArray(gke)) throw new Error(gke.join());
  /** What the STS stand-in expects (switched to the pool provider below). */
  const plan = { ...gke };
  const exchanges: Record<string, string>[] = [];
  const sts = createServer((req, res) => {
    void readBody(req).then((body) => {
      const form = Object.fromEntries(new URLSearchParams(body)) as Record<string, string>;
      exchanges.push(form);
      const ok = form.grant_type === 'urn:ietf:params:oauth:grant-type:token-exchange' && form.audience === plan.stsAudience &&
        form.subject_token_type === JWT_TOKEN_TYPE && form.requested_token_type === 'urn:ietf:params:oauth:token-type:access_token';
      const claims = verifyJwt(form.subject_token ?? '', jwks, issuer, plan.tokenAudience);
      res.setHeader('content-type', 'application/json');
      if (!ok || typeof claims === 'string') {
        res.statusCode = 400;
        res.end(JSON.stringify({ error: 'invalid_grant', error_description: typeof claims === 'string' ? claims : 'bad request' }));
        return;
      }
      res.end(JSON.stringify({ access_token: `sts-token-for-${String(claims.sub)}`, issued_token_type: 'urn:ietf:params:oauth:token-type:access_token', token_type: 'Bearer', expires_in: 3600 }));
    });
  });
  await new Promise<void>((r) => sts.listen(0, '127.0.0.1', r));
  tt.teardown(() => sts.close());
  const stsTokenUrl = `http://127.0.0.1:${(sts.address() as AddressInfo).port}/v1/token`;

  // The pod's projected token: minted by the apiserver for `audience` (what the webhook
  // mounts); the audience the provider asks for is recorded.
  const asked: (string | undefined)[] = [];
  const ctx = (s: unknown, audience: string) => ({
    ...testContext({ storeId: STORE, spec: s }),
    serviceAccountToken: async (requested?: string) => {
      asked.push(requested);
      return serviceAccountToken(cp.kc, ns, 'default', [audience]);
    },
  });
  const spec = { projectID: PROJECT, auth: { workloadIdentity: wi } };
  const good = await newGcpsmClient(ctx(spec, plan.tokenAudience), { stsTokenUrl, emulatorHost: '' });
  tt.teardown(() => good.close());
  await good.validate();
  tt.same(asked, ['host-proj.svc.id.goog'], 'the provider asked for a token for the identity pool');
  tt.equal(exchanges.length, 1);
  tt.equal(exchanges[0]!.audience, 'identitynamespace:host-proj.svc.id.goog:https://container.googleapis.com/v1/projects/host-proj/locations/europe-west1/clusters/prod');
  tt.match(exchanges[0]!.scope ?? '', /cloud-platform/, 'scoped to cloud-platform');

  // A token for another audience is refused by STS: AuthFailed, nothing quoted.
  const bad = await newGcpsmClient(ctx(spec, 'https://kubernetes.default.svc'), { stsTokenUrl, emulatorHost: '' });
  tt.teardown(() => bad.close());
  const err = await bad.validate().then(() => undefined, (e: unknown) => e);
  tt.ok(err instanceof ProviderError && err.code === 'AuthFailed', `AuthFailed (got ${(err as Error)?.message})`);
  tt.notMatch((err as Error).message, /eyJ/, 'no token in the message');

  // An IAM workload identity pool provider (any cluster trusted by its issuer).
  const pool = 'https://iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/k8s/providers/kind';
  const poolSpec = { projectID: PROJECT, auth: { workloadIdentity: { serviceAccountRef: { name: 'default', audiences: [pool] } } } };
  const poolPlan = federationPlan(poolSpec.auth.workloadIdentity, PROJECT);
  if (Array.isArray(poolPlan)) throw new Error(poolPlan.join());
  Object.assign(plan, poolPlan); // the STS stand-in now expects the pool provider
  const viaPool = await newGcpsmClient(ctx(poolSpec, pool), { stsTokenUrl, emulatorHost: '' });
  tt.teardown(() => viaPool.close());
  await viaPool.validate();
  tt.equal(asked[asked.length - 1], pool, 'the token is asked for the pool provider audience');
  tt.equal(exchanges[exchanges.length - 1]!.audience, '//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/k8s/providers/kind');
});
