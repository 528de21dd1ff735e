// The webhook provider reading a real HTTP API: OpenBao's KV v2 (a dev server over TLS,
// test/support/platform/backends/openbao.ts), the token from a `secrets[]` entry in a header, the
// server's CA as caBundle. A denied token and a missing key map to Forbidden and NotFound.
import t from 'tap';
import { createToken, startVaultServer, writePolicy } from '../../support/platform/backends/openbao.js';
import { provider } from '../../../src/providers/webhook/index.js';
import { testContext, providerError } from '../../support/provider-context.js';

const CANARY = 'CANARY-webhook-bao-4e1d';
const STORE = 'SecretStore/team-a/bao-webhook';
const dec = (b: Uint8Array) => Buffer.from(b).toString('utf8');

const bao = await startVaultServer(t, { tls: true });
await writePolicy(bao, 'app-read', 'path "secret/data/app/*" { capabilities = ["read"] }');
await bao.api('POST', 'secret/data/app/db', { data: { username: 'app_user', password: CANARY } });
const token = await createToken(bao, ['app-read']);

const spec = (jsonPath: string) => ({
  url: `${bao.addr}/v1/secret/data/{{ .remoteRef.key }}`,
  headers: { 'X-Vault-Token': '{{ .vault.token }}' },
  secrets: [{ name: 'vault', secretRef: { name: 'bao-token' } }],
  result: { jsonPath },
  caBundle: Buffer.from(bao.caPem!).toString('base64'),
});
const client = (s: object, tok = token) => provider.newClient(testContext({ storeId: STORE, spec: s, credentials: { 'bao-token/token': tok } }));

const failure = providerError;

t.test('a KV v2 field and the whole secret through the webhook provider', async (t) => {
  t.equal(dec(await (await client(spec('$.data.data.password'))).getSecret({ key: 'app/db' })), CANARY);
  const map = await (await client(spec('$.data.data'))).getSecretMap({ key: 'app/db' });
  t.same(Object.fromEntries(Object.entries(map).map(([k, v]) => [k, dec(v)])), { username: 'app_user', password: CANARY });
});

t.test("OpenBao's refusals: a key outside the policy, a missing key, a bad token", async (t) => {
  const c = await client(spec('$.data.data'));
  const outside = await failure(c.getSecret({ key: 'other/db' }));
  t.equal(outside.code, 'Forbidden', outside.message);
  const missing = await failure(c.getSecret({ key: 'app/nope' }));
  t.equal(missing.code, 'NotFound', missing.message);
  const bad = await failure((await client(spec('$.data.data'), 'not-a-token')).getSecret({ key: 'app/db' }));
  t.equal(bad.code, 'Forbidden', bad.message);
  for (const e of [outside, missing, bad]) t.notMatch(JSON.stringify({ m: e.message, e }), new RegExp(`${CANARY}|${token}`));
});
