// The backends of `npm run bench:agent:providers` (providers.ts): for each provider, start
// the test backend the e2e tests use (test/platform/backends/*, the reference gRPC plugin,
// a local kube-apiserver), seed one ExternalSecret's worth of data (3 keys) and describe
// how an agent container reaches it: the store spec, the files the webhook would mount
// (credentials, projected tokens; paths inside the container) and the operator-set env.
// Every setup registers its cleanups on `t`; the runner runs them after that provider.
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentSecret, AgentStore } from '../../src/agent-config/types.js';

export interface Teardown {
  teardown(fn: () => unknown): void;
}

export interface ProviderSetup {
  /** The backend that answered, with its version where known. */
  backend: string;
  /** What the agent loads for this store (SDK / transport). */
  sdk: string;
  store: AgentStore;
  /** The ExternalSecret (its `store` is filled in by the runner). */
  secret: Omit<AgentSecret, 'store'>;
  /** Files the kubelet would mount: container path → content. */
  files: Record<string, string>;
  /** Operator-set agent environment (endpoint overrides, CA files). */
  env: Record<string, string>;
  pod?: { namespace: string; serviceAccountName: string };
}

export const NAMESPACE = 'bench';
const CRED_DIR = '/var/run/esi/credentials';
const TOKEN_PATH = '/var/run/secrets/esi/tokens/token';
export const KEYS = 3;

/** The value the backend holds for key `i` (and the file content the runner checks). */
export const value = (i: number) => `bench-value-${i}-${'x'.repeat(32)}`;
const indexes = () => Array.from({ length: KEYS }, (_, i) => i);

/** One ExternalSecret `app`: files key-0..key-2, each from its own remote secret. */
function secret(remoteKey: (i: number) => string, property?: string): ProviderSetup['secret'] {
  return {
    name: 'app', dataFrom: [],
    data: indexes().map((i) => ({ secretKey: `key-${i}`, remoteRef: { key: remoteKey(i), ...(property ? { property } : {}) } })),
  };
}

const store = (name: string, provider: AgentStore['provider'], extra: Partial<AgentStore> = {}): AgentStore =>
  ({ kind: 'SecretStore', name, provider, ...extra });

async function fake(): Promise<ProviderSetup> {
  const data = indexes().map((i) => ({ key: `bench/key-${i}`, value: value(i) }));
  return {
    backend: 'in the store spec', sdk: 'none (values in the spec)', store: store('fake', { fake: { data } }),
    secret: secret((i) => `bench/key-${i}`), files: {}, env: {},
  };
}

/** A version pinned in test/platform/versions.env. */
function pinned(name: string): string {
  const env = readFileSync(join(import.meta.dirname, '..', '..', 'test', 'platform', 'versions.env'), 'utf8');
  return new RegExp(`^${name}=(\\S+)`, 'm').exec(env)?.[1] ?? '?';
}

async function kubernetes(t: Teardown): Promise<ProviderSetup> {
  const { startControlPlane } = await import('../../test/support/platform/control-plane-process.js');
  const { CoreV1Api, KubeConfig, RbacAuthorizationV1Api } = await import('@kubernetes/client-node');
  const { createNamespace, serviceAccountToken } = await import('../../test/support/kube.js');
  const dir = await mkdtemp(join(tmpdir(), 'esi-bench-cp-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const cp = await startControlPlane(dir);
  t.teardown(() => cp.stop());
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
  const ns = await createNamespace(kc, 'bench');
  const names = indexes().map((i) => `bench-key-${i}`);
  for (const i of indexes()) {
    await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: names[i] }, data: { value: Buffer.from(value(i)).toString('base64') } } });
  }
  await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: 'app' } } });
  await rbac.createNamespacedRole({ namespace: ns, body: { metadata: { name: 'app' }, rules: [
    { apiGroups: [''], resources: ['secrets'], resourceNames: names, verbs: ['get'] },
  ] } });
  await rbac.createNamespacedRoleBinding({ namespace: ns, body: {
    metadata: { name: 'app' }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'app' },
    subjects: [{ kind: 'ServiceAccount', name: 'app', namespace: ns }],
  } });
  const token = await serviceAccountToken(kc, ns, 'app');
  return {
    backend: `kube-apiserver ${pinned('KUBERNETES_VERSION')} + etcd ${pinned('ETCD_VERSION')} (local)`,
    sdk: 'ESI\'s own HTTPS client (node:https)',
    store: store('k8s', { kubernetes: {
      server: { url: cp.server, caBundle: Buffer.from(cp.caPem).toString('base64') }, auth: { serviceAccount: { name: 'app' } },
    } }, { tokenPath: TOKEN_PATH }),
    secret: secret((i) => names[i]!, 'value'),
    files: { [TOKEN_PATH]: token }, env: {}, pod: { namespace: ns, serviceAccountName: 'app' },
  };
}

async function vault(t: Teardown): Promise<ProviderSetup> {
  const { createToken, startVaultServer, writePolicy } = await import('../../test/support/platform/backends/openbao.js');
  const server = await startVaultServer(t);
  await writePolicy(server, 'bench-read', 'path "secret/data/bench/*" { capabilities = ["read"] }');
  for (const i of indexes()) await server.api('POST', `secret/data/bench/key-${i}`, { data: { value: value(i) } });
  const token = await createToken(server, ['bench-read']);
  return {
    backend: `OpenBao ${server.version} dev server`,
    sdk: 'node-vault',
    store: store('vault', { vault: { server: server.addr, path: 'secret', version: 'v2', auth: { tokenSecretRef: { name: 'vault-token', key: 'token' } } } },
      { credentialsDir: CRED_DIR }),
    secret: secret((i) => `bench/key-${i}`, 'value'),
    files: { [`${CRED_DIR}/vault-token/token`]: token }, env: {},
  };
}

async function aws(t: Teardown): Promise<ProviderSetup> {
  const { allow, startMoto } = await import('../../test/support/platform/backends/moto.js');
  const { CreateSecretCommand, SecretsManagerClient } = await import('@aws-sdk/client-secrets-manager');
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const moto = await startMoto(t);
  const seeder = await moto.createUser('seeder', allow(['*']));
  const reader = await moto.createUser('reader', allow(['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret']));
  await moto.enableAuth();
  const sm = new SecretsManagerClient({ region: moto.region, endpoint: moto.endpoint, credentials: seeder });
  try {
    for (const i of indexes()) await sm.send(new CreateSecretCommand({ Name: `bench/key-${i}`, SecretString: value(i) }));
  } finally {
    sm.destroy();
  }
  return {
    backend: `moto ${moto.version} (IAM auth on)`,
    sdk: '@aws-sdk/client-secrets-manager',
    store: store('aws', { aws: { service: 'SecretsManager', region: moto.region, auth: { secretRef: {
      accessKeyIDSecretRef: { name: 'aws-creds', key: 'access-key-id' },
      secretAccessKeySecretRef: { name: 'aws-creds', key: 'secret-access-key' },
    } } } }, { credentialsDir: CRED_DIR }),
    secret: secret((i) => `bench/key-${i}`),
    files: { [`${CRED_DIR}/aws-creds/access-key-id`]: reader.accessKeyId, [`${CRED_DIR}/aws-creds/secret-access-key`]: reader.secretAccessKey },
    env: { AWS_ENDPOINT_URL: moto.endpoint },
  };
}

async function azurekv(t: Teardown): Promise<ProviderSetup> {
  const { startKeyVault } = await import('../../test/support/platform/backends/lowkey-vault.js');
  const { ClientSecretCredential } = await import('@azure/identity');
  const { SecretClient } = await import('@azure/keyvault-secrets');
  const { randomBytes, randomUUID } = await import('node:crypto');
  const kv = await startKeyVault(t);
  const admin = new SecretClient(kv.vaultUrl, new ClientSecretCredential(kv.tenantId, kv.admin.clientId, kv.admin.secret, {
    authorityHost: kv.authorityHost, disableInstanceDiscovery: true, tlsOptions: { ca: kv.caPem },
  }), { disableChallengeResourceVerification: true, tlsOptions: { ca: kv.caPem } });
  for (const i of indexes()) await admin.setSecret(`bench-key-${i}`, value(i));
  const sp = { clientId: randomUUID(), secret: randomBytes(24).toString('base64url') };
  kv.addServicePrincipal(sp, ['get']);
  return {
    backend: `${kv.label}${kv.impl === 'stand-in' ? ' (HTTPS, in the bench process)' : ''} + local Entra ID token endpoint`,
    sdk: '@azure/keyvault-secrets + @azure/identity',
    store: store('azure', { azurekv: {
      vaultUrl: kv.vaultUrl, tenantId: kv.tenantId, authType: 'ServicePrincipal',
      authSecretRef: { clientId: { name: 'azure-sp', key: 'client-id' }, clientSecret: { name: 'azure-sp', key: 'client-secret' } },
    } }, { credentialsDir: CRED_DIR }),
    secret: secret((i) => `bench-key-${i}`),
    files: { [`${CRED_DIR}/azure-sp/client-id`]: sp.clientId, [`${CRED_DIR}/azure-sp/client-secret`]: sp.secret },
    env: kv.env(),
  };
}

async function gcpsm(t: Teardown): Promise<ProviderSetup> {
  const { startGcpsmEmulator } = await import('../../test/support/platform/backends/gcpsm-emulator.js');
  const emu = await startGcpsmEmulator(t);
  const sm = emu.client();
  const project = 'esi-bench';
  for (const i of indexes()) {
    await sm.createSecret({ parent: `projects/${project}`, secretId: `bench-key-${i}`, secret: { replication: { automatic: {} } } });
    await sm.addSecretVersion({ parent: `projects/${project}/secrets/bench-key-${i}`, payload: { data: Buffer.from(value(i)) } });
  }
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const key = { type: 'service_account', project_id: project, client_email: `esi@${project}.iam.gserviceaccount.com`,
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() };
  return {
    backend: `${emu.name} (gRPC, plaintext)`,
    sdk: '@google-cloud/secret-manager (google-gax, @grpc/grpc-js)',
    store: store('gcp', { gcpsm: { projectID: project, auth: { secretRef: { secretAccessKeySecretRef: { name: 'gcp-sa', key: 'key.json' } } } } },
      { credentialsDir: CRED_DIR }),
    secret: secret((i) => `bench-key-${i}`),
    files: { [`${CRED_DIR}/gcp-sa/key.json`]: JSON.stringify(key) },
    env: { SECRET_MANAGER_EMULATOR_HOST: emu.endpoint },
  };
}

async function grpc(t: Teardown): Promise<ProviderSetup> {
  const { generateDevPki } = await import('../../examples/grpc-plugin/dev-certs.js');
  const { startPluginServer } = await import('../../examples/grpc-plugin/server.js');
  const pki = await generateDevPki(['127.0.0.1'], 'esi-agent');
  const plugin = await startPluginServer({
    tls: { cert: pki.server.cert, key: pki.server.key, clientCa: pki.ca.cert },
    data: Object.fromEntries(indexes().map((i) => [`bench/key-${i}`, value(i)])),
  });
  t.teardown(() => plugin.stop());
  const dir = `${CRED_DIR}/plugin-tls`;
  return {
    backend: 'ESI reference plugin (examples/grpc-plugin, MemoryStore, mTLS, in the bench process)',
    sdk: '@grpc/grpc-js',
    store: store('plugin', { grpc: { url: `127.0.0.1:${plugin.port}`, tlsSecretRef: { name: 'plugin-tls' } } }, { credentialsDir: CRED_DIR }),
    secret: secret((i) => `bench/key-${i}`),
    files: { [`${dir}/ca.crt`]: pki.ca.cert, [`${dir}/tls.crt`]: pki.client.cert, [`${dir}/tls.key`]: pki.client.key },
    env: {},
  };
}

/** Setups in measuring order. */
export const SETUPS: Readonly<Record<string, (t: Teardown) => Promise<ProviderSetup>>> = {
  fake, kubernetes, vault, aws, azurekv, gcpsm, grpc,
};
