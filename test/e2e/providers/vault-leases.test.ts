// The vault provider's lease operations (capability `leases`) against a real OpenBao whose
// database secrets engine manages a real PostgreSQL, and its PKI engine: what a user checks
// is the database (the minted login works, the user is dropped at revocation), the server's
// own lease records (renewals, revocation) and that no lease id reaches a message.
// Run: `npx tap test/e2e/providers/vault-leases.test.ts` (ESI_NO_PLATFORM=1 is enough).
import t from 'tap';
import { X509Certificate } from 'node:crypto';
import { tokenCount, writePolicy } from '../../support/platform/backends/openbao.js';
import { until } from '../../support/platform/until.js';
import { provider, type VaultClient } from '../../../src/providers/vault/index.js';
import { ProviderError } from '../../../src/providers/types.js';
import { testContext } from '../../support/provider-context.js';
import { dynamicFixture } from '../../support/fixtures/dynamic.js';

const STORE = 'SecretStore/dyn/vault';
const f = await dynamicFixture(t);

async function newClient(): Promise<VaultClient> {
  const spec = { server: f.vault.addr, auth: { appRole: { roleId: f.roleId, secretRef: { name: 'approle', key: 'secret-id' } } } };
  const ctx = testContext({ storeId: STORE, spec, namespace: 'dyn', credentials: { 'approle/secret-id': await f.newSecretId() } });
  return (await provider.newClient(ctx)) as VaultClient;
}

const caught = (p: Promise<unknown>): Promise<unknown> => p.then(() => undefined, (err: unknown) => err);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

t.test('vault declares the leases capability; the client offers the operations', async (t) => {
  t.equal(provider.capabilities.leases, true);
  const c = await newClient();
  t.teardown(() => c.close());
  t.ok(c.leases, 'client.leases');
});

t.test('database credentials: minted once, accepted by PostgreSQL, renewed on the server, dropped at revocation', async (t) => {
  const c = await newClient();
  t.teardown(() => c.close());
  const before = await f.pg.roles();
  const g = await c.leases.generate({ path: 'database/creds/app' });
  const login = { user: str(g.data.username), password: str(g.data.password) };
  t.ok(login.user && login.password, 'a username and a password');
  t.ok(g.lease, 'a lease');
  const lease = g.lease!;
  t.equal(lease.renewable, true);
  t.ok(lease.ttlSeconds > 3000 && lease.ttlSeconds <= 3600, `the role's default TTL (${lease.ttlSeconds}s)`);
  t.equal(await f.pg.psql('SELECT current_user', login), login.user, 'PostgreSQL accepts the minted credentials');
  t.same((await f.pg.roles()).filter((r) => !before.includes(r)), [login.user], 'exactly one new database user');
  t.equal(c.leases.live, 1);

  const renewed = await c.leases.renew(lease, 600);
  t.equal(renewed.id, lease.id);
  t.ok(renewed.ttlSeconds > 0 && renewed.ttlSeconds <= 600, `the renewal grants what was asked at most (${renewed.ttlSeconds}s)`);
  const seen = await f.lookup(lease.id);
  t.ok(seen?.lastRenewal, 'the server recorded the renewal');
  t.ok(seen!.ttl <= 600, `the server's TTL is the renewed one (${seen!.ttl}s)`);

  await c.leases.revoke(lease);
  t.equal(await f.lookup(lease.id), undefined, 'the server no longer knows the lease');
  t.notOk((await f.pg.roles()).includes(login.user), 'the database user is gone');
  t.match(await caught(f.pg.psql('SELECT 1', login)), /authentication failed|does not exist/, 'the credentials no longer log in');
  t.equal(c.leases.live, 0);
  await t.resolves(c.leases.revoke(lease), 'revoking twice is harmless');
});

t.test('errors name the store and the path, never a lease id', async (t) => {
  const c = await newClient();
  t.teardown(() => c.close());
  const g = await c.leases.generate({ path: 'database/creds/app' });
  await c.leases.revoke(g.lease!);
  const gone = await caught(c.leases.renew(g.lease!));
  t.ok(gone instanceof ProviderError && gone.code === 'NotFound', `renewing a revoked lease is NotFound (${(gone as Error)?.message})`);
  const secretPart = g.lease!.id.split('/').pop()!;
  t.notOk((gone as Error).message.includes(secretPart), 'the lease id is not in the message');
  t.match((gone as Error).message, STORE);

  const denied = await caught(c.leases.generate({ path: 'database/creds/other' }));
  t.ok(denied instanceof ProviderError && denied.code === 'Forbidden', `a path outside the policy is Forbidden (${(denied as Error)?.message})`);
  t.match((denied as Error).message, /database\/creds\/other/);
  for (const path of ['', '../sys/leases', 'database//creds', 'sys/leases/lookup', 'auth/token/create']) {
    const bad = await caught(c.leases.generate({ path }));
    t.ok(bad instanceof ProviderError && bad.code === 'InvalidSpec', `"${path}" is refused before any call`);
  }
  const get = await caught(c.leases.generate({ path: 'pki/issue/web', method: 'GET', parameters: { common_name: 'a.example.test' } }));
  t.match((get as Error)?.message, /parameters need method POST/);
});

t.test('PKI: a POST with parameters; expiresAt is the certificate\'s notAfter', async (t) => {
  const c = await newClient();
  t.teardown(() => c.close());
  const g = await c.leases.generate({ path: 'pki/issue/web', parameters: { common_name: 'app.example.test', ttl: '2h' } });
  const cert = new X509Certificate(str(g.data.certificate));
  t.equal(cert.subject, 'CN=app.example.test');
  t.ok(str(g.data.private_key).includes('PRIVATE KEY'), 'the private key');
  t.ok(g.expiresAt, 'expiresAt');
  t.equal(g.expiresAt!.getTime(), new Date(cert.validTo).getTime(), 'expiresAt is notAfter');
  const hours = (g.expiresAt!.getTime() - Date.now()) / 3_600_000;
  t.ok(hours > 1.9 && hours <= 2.01, `about two hours (${hours.toFixed(2)} h)`);
  t.equal(g.lease, undefined, 'PKI issues no lease by default (the certificate\'s validity is what counts)');
});

t.test('the token that minted live leases is not revoked by a re-login or by close', async (t) => {
  const baseline = await tokenCount(f.vault);
  const c = await newClient();
  const g = await c.leases.generate({ path: 'database/creds/app' });
  const login = { user: str(g.data.username), password: str(g.data.password) };
  t.equal(await tokenCount(f.vault), baseline + 1, 'one login');

  // A re-login (the token's max TTL reached, its renewal refused): forced here without
  // waiting, through the token source's own replacement path.
  const tokens = (c as unknown as { tokens: { obtain(): Promise<unknown>; heldTokens: number } }).tokens;
  await tokens.obtain();
  t.equal(c.tokenStats.logins, 2, 'a second login');
  t.equal(await tokenCount(f.vault), baseline + 2, 'the replaced token is kept: it minted a live lease');
  t.ok(await f.lookup(g.lease!.id), 'the lease lives on');
  t.equal(await f.pg.psql('SELECT current_user', login), login.user, 'the credentials still work');

  await c.leases.revoke(g.lease!);
  await until('the replaced token revoked with its last lease', async () => (await tokenCount(f.vault)) === baseline + 1);
  t.pass('with its last lease revoked, the replaced token is revoked');

  // close() with a live lease: the token stays (revoking it would revoke the lease).
  const g2 = await c.leases.generate({ path: 'database/creds/app' });
  await c.close();
  t.ok(await f.lookup(g2.lease!.id), 'close() left the live lease alone');
  t.equal(await tokenCount(f.vault), baseline + 1, 'and its token');
  await f.vault.api('PUT', 'sys/leases/revoke', { lease_id: g2.lease!.id });

  // Without live leases, close() revokes the token as before.
  const c2 = await newClient();
  const g3 = await c2.leases.generate({ path: 'database/creds/app' });
  await c2.leases.revoke(g3.lease!);
  const n = await tokenCount(f.vault);
  await c2.close();
  t.equal(await tokenCount(f.vault), n - 1, 'close() revoked the token whose leases were all revoked');
});

t.test('result auth: a token minted at auth/token/create is the auth section, outlives its minting client, and is revoked by accessor', async (t) => {
  // The generator's use (ESO's resultType Auth): the store may create child tokens.
  await writePolicy(f.vault, 'esi-tokens', 'path "auth/token/create" { capabilities = ["update"] }\npath "auth/token/revoke-accessor" { capabilities = ["update"] }');
  await f.vault.api('POST', 'auth/approle/role/esi', { token_policies: ['esi-dynamic', 'esi-tokens'], token_ttl: '1h' });
  t.teardown(() => f.vault.api('POST', 'auth/approle/role/esi', { token_policies: ['esi-dynamic'], token_ttl: '1h' }));
  const c = await newClient();
  const asData = await caught(c.leases.generate({ path: 'auth/token/create', method: 'POST', parameters: {} }));
  t.match((asData as Error)?.message, /has an "auth" segment: an auth path, not a secrets engine \(a generator reads a token there with resultType Auth or Raw\)/, 'auth paths only for the auth section');
  t.ok((await caught(c.leases.generate({ path: 'sys/leases/lookup', result: 'raw' }))) instanceof ProviderError, 'sys/ stays refused');

  const mint = () => c.leases.generate({ path: 'auth/token/create', method: 'POST', parameters: { policies: ['esi-dynamic'], ttl: '10m' }, result: 'auth' });
  const g = await mint();
  const token = str(g.data.client_token);
  t.match(token, /^s\./, 'the auth section holds the new token');
  t.same(g.data.policies, ['default', 'esi-dynamic']);
  t.equal(g.data.lease_duration, 600);
  t.match(g.lease, { ttlSeconds: 600, renewable: false }, 'a lease on the token, named by its accessor');
  t.notOk(g.lease!.id.includes(token), 'the lease handle does not carry the token');
  const self = async (tok: string) => (((await f.vault.api('GET', 'auth/token/lookup-self', undefined, tok)).body!.data as { policies: string[] }).policies);
  t.same(await self(token), ['default', 'esi-dynamic'], 'the token works');

  const g2 = await mint();
  await c.leases.revoke(g2.lease!);
  t.ok(await caught(self(str(g2.data.client_token))), 'revoked by its accessor: the token no longer works');

  await c.close();
  t.same(await self(token), ['default', 'esi-dynamic'], 'close() kept the minting token, so its child token still works');
  await f.vault.api('POST', 'auth/token/revoke', { token });
});

t.test('result raw: the whole response, with the lease and the data', async (t) => {
  const c = await newClient();
  t.teardown(() => c.close());
  const g = await c.leases.generate({ path: 'database/creds/app', result: 'raw' });
  t.equal(g.data.lease_id, g.lease!.id, 'the response\'s lease id, as the store sent it');
  t.equal(g.data.renewable, true);
  t.equal(typeof g.data.lease_duration, 'number');
  const data = g.data.data as Record<string, string>;
  const login = { user: data.username!, password: data.password! };
  t.equal(await f.pg.psql('SELECT current_user', login), login.user, 'the credentials in its data log in');
  await c.leases.revoke(g.lease!);
  t.notOk((await f.pg.roles()).includes(login.user), 'revoked as a data result is');
});
