// ESO's `openBao` store kind end to end against a real OpenBao server: the documents are
// applied to the real apiserver (ESI's CRDs) and read back, the webhook's admission path
// (`admit`, as in `esi inject`) injects a pod that mounts them, the kubelet's part is played
// by materializeVolumes (the token Secret read from the API), and the injected agent runs
// (`esi agent --root`, init-only) and writes the files. Served by the vault implementation
// (src/providers/openbao/); fields the vault implementation does not model are denials
// naming the openBao field. Run: `npx tap <this file>`.
import t from 'tap';
import { CustomObjectsApi, CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installCrds } from '../../../src/api/crds.js';
import { admit } from '../../../webhook/admission.js';
import { ManifestLookup } from '../../../webhook/inject-cmd.js';
import { createNamespace } from '../../support/kube.js';
import { agentContainer, materializeVolumes, runAgentProcess } from '../../support/kubelet.js';
import { AGENT_IMAGE } from '../../support/webhook.js';
import { useControlPlane } from '../../support/platform/controlPlane.js';
import { createToken, startVaultServer, writePolicy } from '../../support/platform/backends/openbao.js';

const CANARY = 'CANARY-openbao-5d21c7';
const server = await startVaultServer(t);
const cp = await useControlPlane(t);
await installCrds(cp.kc);
const core = cp.kc.makeApiClient(CoreV1Api);
const custom = cp.kc.makeApiClient(CustomObjectsApi);
const ns = await createNamespace(cp.kc, 'openbao-e2e', t);

await writePolicy(server, 'app-read', 'path "secret/data/app/*" { capabilities = ["read"] }\npath "secret/metadata/app/*" { capabilities = ["list", "read"] }');
await server.api('POST', 'secret/data/app/db', { data: { username: 'app_user', password: `${CANARY}-pw` } });
const token = await createToken(server, ['app-read']);
await server.api('POST', 'sys/auth/approle', { type: 'approle' });
await server.api('POST', 'auth/approle/role/app', { token_policies: ['app-read'], token_ttl: '5m' });
const roleId = ((await server.api('GET', 'auth/approle/role/app/role-id')).body!.data as { role_id: string }).role_id;
const secretId = ((await server.api('POST', 'auth/approle/role/app/secret-id', {})).body!.data as { secret_id: string }).secret_id;
await core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'bao' }, stringData: { token, 'secret-id': secretId } } });

const G = { group: 'external-secrets.io', version: 'v1', namespace: ns };
async function apply(plural: string, body: { kind: string; metadata: { name: string }; spec: object }): Promise<object> {
  await custom.createNamespacedCustomObject({ ...G, plural, body: { apiVersion: 'external-secrets.io/v1', ...body } });
  // What the webhook's cache would hold: the object as the apiserver stored it.
  return custom.getNamespacedCustomObject({ ...G, plural, name: body.metadata.name }) as Promise<object>;
}
const bao = { server: server.addr, path: 'secret', version: 'v2' };
const stores = [
  await apply('secretstores', { kind: 'SecretStore', metadata: { name: 'bao-token' }, spec: { provider: { openBao: { ...bao, auth: { tokenSecretRef: { name: 'bao', key: 'token' } } } } } }),
  await apply('secretstores', { kind: 'SecretStore', metadata: { name: 'bao-approle' }, spec: { provider: { openBao: { ...bao, auth: { appRole: { path: 'approle', roleId, secretRef: { name: 'bao', key: 'secret-id' } } } } } } }),
  await apply('secretstores', { kind: 'SecretStore', metadata: { name: 'bao-userpass' }, spec: { provider: { openBao: { ...bao, auth: { userPass: { path: 'userpass', username: 'app', secretRef: { name: 'bao', key: 'token' } } } } } } }),
  await apply('secretstores', { kind: 'SecretStore', metadata: { name: 'bao-authns' }, spec: { provider: { openBao: { ...bao, auth: { namespace: 'team-a', tokenSecretRef: { name: 'bao', key: 'token' } } } } } }),
];
const es = (name: string, store: string, spec: object) => apply('externalsecrets', { kind: 'ExternalSecret', metadata: { name }, spec: { secretStoreRef: { name: store }, ...spec } });
const externalSecrets = [
  await es('db', 'bao-token', { dataFrom: [{ extract: { key: 'app/db' } }] }),
  await es('db-approle', 'bao-approle', { data: [{ secretKey: 'password', remoteRef: { key: 'app/db', property: 'password' } }] }),
  await es('db-userpass', 'bao-userpass', { dataFrom: [{ extract: { key: 'app/db' } }] }),
  await es('db-authns', 'bao-authns', { dataFrom: [{ extract: { key: 'app/db' } }] }),
];
const lookup = new ManifestLookup([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, ...stores, ...externalSecrets] as never);

function admitPod(secrets: string) {
  const pod: V1Pod = {
    metadata: { name: 'app', namespace: ns, labels: { 'esi.dev/inject': 'true' }, annotations: { 'esi.dev/secrets': secrets, 'esi.dev/mode': 'init-only' } },
    spec: { containers: [{ name: 'app', image: 'registry.example/app:1' }] },
  };
  return { pod, out: admit(pod, { namespace: ns, lookup, resolve: {}, agent: { image: AGENT_IMAGE, defaultTokenAudience: 'esi' } }) };
}

t.test('a pod mounting openBao ExternalSecrets (token and appRole auth) gets the files from OpenBao', async (t) => {
  const { out } = admitPod('db,db-approle');
  if (out.kind !== 'mutated') throw new Error(`not injected: ${JSON.stringify(out)}`);
  const container = agentContainer(out.pod);
  const root = await mkdtemp(join(tmpdir(), 'esi-openbao-'));
  await materializeVolumes(cp.kc, { ...out.pod, metadata: { ...out.pod.metadata, namespace: ns } }, container, root);
  const agent = runAgentProcess(container, root);
  const code = await new Promise<number | null>((r) => agent.child.on('exit', r));
  t.equal(code, 0, `the agent exits 0\n${agent.output().slice(-2000)}`);
  const file = (p: string) => readFile(join(root, '/var/run/secrets/esi', p), 'utf8');
  t.equal(await file('db/username'), 'app_user');
  t.equal(await file('db/password'), `${CANARY}-pw`);
  t.equal(await file('db-approle/password'), `${CANARY}-pw`, 'appRole login with the secret id mounted from the Secret');
  const log = agent.output();
  for (const s of [CANARY, token, secretId]) t.notOk(log.includes(s), 'no value or credential in the agent log');
});

t.test('openBao fields the vault implementation does not model are denied, naming the field', async (t) => {
  const message = (secrets: string) => {
    const out = admitPod(secrets).out;
    return out.kind === 'denied' ? out.message : `not denied: ${out.kind}`;
  };
  t.match(message('db-userpass'), /SecretStore "[^"]+\/bao-userpass": spec\.provider\.openBao\.auth\.userPass is not supported by ESI \(use tokenSecretRef, appRole\)/);
  t.match(message('db-authns'), /openBao\.auth\.namespace \(logging in to another namespace\) is not supported by ESI, which logs in within openBao\.namespace; remove it or set it to openBao\.namespace/);
});
