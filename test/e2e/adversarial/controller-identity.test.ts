// Identity lending: a tenant's SecretStore that names no credential must
// not be read with the controller's own cloud identity. The controller process gets an
// Azure managed identity (the IMDS stand-in of test/support/platform/backends/entra-standin.ts knows
// it and may read the vault) and GCP ambient access (the emulator, which asks for no
// credential: whoever reaches it is trusted, like ADC on GKE), as an operator's pod would.
// The tenant writes stores and ExternalSecrets with its own client (test/support/tenant.ts).
// Without --allow-ambient-identity every such store is refused (Ready=False, AccessDenied,
// naming the field and the flag) and IMDS sees no request; with it, a ClusterSecretStore may
// use the identity and a SecretStore still may not.
import { ClientSecretCredential } from '@azure/identity';
import { SecretClient } from '@azure/keyvault-secrets';
import { randomBytes, randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { GROUP, controllerEnv, create, getSecret, ready, startController, until, useEnv } from '../../support/fixtures/controller.js';
import { createTenant, type Tenant } from '../../support/tenant.js';
import { startGcpsmEmulator } from '../../support/platform/backends/gcpsm-emulator.js';
import { startKeyVault } from '../../support/platform/backends/lowkey-vault.js';
import { providerMeta, providerNames } from '../../../src/providers/registry.js';

const CANARY = 'ctl-ident-canary-5e19b2';
const PROJECT = 'esi-ident';
const env = await controllerEnv(t);
const tenant = await createTenant(env.kc, 'ident-tenant', t);
const ns = tenant.namespace;


// The controller's identity: the system-assigned managed identity of "its pod", allowed to read.
const kv = await startKeyVault(t, { forceStandIn: true });
useEnv(t, kv.env());
const controllerIdentity = randomUUID();
kv.addManagedIdentity(controllerIdentity, ['get', 'list']);
const admin = new SecretClient(kv.vaultUrl, new ClientSecretCredential(kv.tenantId, kv.admin.clientId, kv.admin.secret, {
  authorityHost: kv.authorityHost, disableInstanceDiscovery: true, tlsOptions: { ca: kv.caPem },
}), { disableChallengeResourceVerification: true, tlsOptions: { ca: kv.caPem } });
const run = `i${randomBytes(3).toString('hex')}`;
await admin.setSecret(`${run}-platform`, `${CANARY}-azure`);

const emu = await startGcpsmEmulator(t);
useEnv(t, { SECRET_MANAGER_EMULATOR_HOST: emu.endpoint });
const sm = emu.client();
await sm.createSecret({ parent: `projects/${PROJECT}`, secretId: 'platform', secret: { replication: { automatic: {} } } });
await sm.addSecretVersion({ parent: `projects/${PROJECT}/secrets/platform`, payload: { data: Buffer.from(`${CANARY}-gcp`) } });

const imdsRequests = () => kv.tokenRequests.filter((r) => r.endpoint === 'imds');
const azure = { azurekv: { vaultUrl: kv.vaultUrl, authType: 'ManagedIdentity' } };
const gcp = { gcpsm: { projectID: PROJECT } };

// Two controllers of their own classes: the default one, and one the operator allowed.
const strict = env.cls;
const lenient = `${env.cls}-amb`;
const common = ['--claim-unclassed=false', '--leader-elect=false', '--coalesce-window', '2s'];
const ctlStrict = await startController(env.cp.kubeconfigPath, ['--controller-class', strict, ...common], t);
const ctlLenient = await startController(env.cp.kubeconfigPath, ['--controller-class', lenient, '--allow-ambient-identity=true', ...common], t);

async function tenantCreate(tn: Tenant, plural: string, body: object): Promise<void> {
  await tn.custom.createNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: tn.namespace, plural, body: { apiVersion: `${GROUP}/v1`, ...body } });
}

function es(name: string, store: string, key: string, kind = 'SecretStore') {
  return { kind: 'ExternalSecret', metadata: { name }, spec: { secretStoreRef: { name: store, kind }, refreshInterval: '1h', target: { name }, data: [{ secretKey: 'v', remoteRef: { key } }] } };
}

async function refused(t: Test, name: string, field: RegExp): Promise<void> {
  const got = await ready(env, ns, name, 'False', 'AccessDenied', 90_000);
  const msg = got.status?.conditions?.find((c) => c.type === 'Ready')?.message ?? '';
  t.match(msg, field, `${name}: the message names the store field`);
  t.match(msg, /--allow-ambient-identity/, `${name}: the message names the flag`);
  t.notOk(await getSecret(env, ns, name), `${name}: no Secret was written`);
}

t.test('every provider that can authenticate without naming a credential says so, with the field', async (t) => {
  const ambient: Record<string, unknown> = {
    aws: { service: 'SecretsManager', region: 'eu-west-1', role: 'arn:aws:iam::1:role/r' },
    azurekv: { vaultUrl: 'https://x.vault.azure.net', authType: 'ManagedIdentity' },
    gcpsm: { projectID: 'p' },
    vault: { server: 'https://v', path: 'kv', auth: { kubernetes: { role: 'r' } } },
    kubernetes: { remoteNamespace: 'x' },
  };
  for (const name of providerNames()) {
    const found = providerMeta(name)!.ambientIdentity?.(ambient[name] ?? {});
    if (name in ambient) t.match(found, { field: new RegExp(`^${name}\\.`) }, `${name}: ambient identity detected`);
    else t.notOk(found, `${name}: no ambient identity`);
  }
  t.notOk(providerMeta('azurekv')!.ambientIdentity?.({ vaultUrl: 'https://x', authType: 'WorkloadIdentity', serviceAccountRef: { name: 'sa' } }), 'a named ServiceAccount is not ambient');
  t.notOk(providerMeta('gcpsm')!.ambientIdentity?.({ projectID: 'p', auth: { secretRef: { secretAccessKeySecretRef: { name: 'k', key: 'k' } } } }), 'a key is not ambient');
});

t.test("a tenant's SecretStore is not read with the controller's identity", async (t) => {
  await tenantCreate(tenant, 'secretstores', { kind: 'SecretStore', metadata: { name: 'az-mi' }, spec: { controller: strict, provider: azure } });
  await tenantCreate(tenant, 'secretstores', { kind: 'SecretStore', metadata: { name: 'gcp-adc' }, spec: { controller: strict, provider: gcp } });
  await tenantCreate(tenant, 'externalsecrets', es('steal-az', 'az-mi', `${run}-platform`));
  await tenantCreate(tenant, 'externalsecrets', es('steal-gcp', 'gcp-adc', 'platform'));
  await refused(t, 'steal-az', /spec\.provider\.azurekv\.authType/);
  await refused(t, 'steal-gcp', /spec\.provider\.gcpsm\.auth/);
  // The lenient controller lends nothing to a SecretStore either.
  await tenantCreate(tenant, 'secretstores', { kind: 'SecretStore', metadata: { name: 'az-mi-2' }, spec: { controller: lenient, provider: azure } });
  await tenantCreate(tenant, 'externalsecrets', es('steal-az-2', 'az-mi-2', `${run}-platform`));
  await refused(t, 'steal-az-2', /spec\.provider\.azurekv\.authType/);
  type Store = { status?: { conditions?: { type: string; status: string; reason: string; message: string }[] } };
  const store = await until('the store\'s Ready condition', async () => {
    const s = (await tenant.custom.getNamespacedCustomObject({ group: GROUP, version: 'v1', namespace: ns, plural: 'secretstores', name: 'az-mi' })) as Store;
    return s.status?.conditions?.find((c) => c.type === 'Ready');
  });
  t.match(store, { status: 'False', reason: 'InvalidStoreConfiguration', message: /--allow-ambient-identity/ }, 'the store says it is refused');
  t.same(imdsRequests(), [], 'IMDS was never asked for the controller\'s token');
});

t.test('a ClusterSecretStore uses it only where the operator allowed it', async (t) => {
  const css = (name: string, cls: string) => create(env, undefined, 'clustersecretstores', {
    kind: 'ClusterSecretStore', metadata: { name }, spec: { controller: cls, provider: azure, conditions: [{ namespaces: [ns] }] },
  });
  await css(`${strict}-mi`, strict);
  await tenantCreate(tenant, 'externalsecrets', es('css-strict', `${strict}-mi`, `${run}-platform`, 'ClusterSecretStore'));
  await refused(t, 'css-strict', /spec\.provider\.azurekv\.authType/);
  t.same(imdsRequests(), [], 'still no request to IMDS');

  await css(`${lenient}-mi`, lenient);
  await tenantCreate(tenant, 'externalsecrets', es('css-lenient', `${lenient}-mi`, `${run}-platform`, 'ClusterSecretStore'));
  await ready(env, ns, 'css-lenient', 'True', 'SecretSynced', 90_000);
  t.equal(Buffer.from((await getSecret(env, ns, 'css-lenient'))?.data?.v ?? '', 'base64').toString(), `${CANARY}-azure`, 'the operator-allowed ClusterSecretStore syncs');
  t.match(imdsRequests(), [{ clientId: controllerIdentity, granted: true }], 'with the controller\'s managed identity');
});

t.test('no canary in logs', async (t) => {
  for (const [what, text] of [['strict logs', ctlStrict.output()], ['lenient logs', ctlLenient.output()]] as const) t.notOk(text.includes(CANARY), `no canary in ${what}`);
});
