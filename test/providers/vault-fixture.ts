// Shared set-up of vault.test.ts and vault-auth.test.ts: a real Vault-API dev server
// (OpenBao when built, else HashiCorp Vault; test/platform/backends/openbao-install.sh)
// seeded through its HTTP API with the root token (never the provider under test), and
// helpers to build clients and check errors.
import type { Test } from 'tap';
import { createToken, kvRead, kvWrite, mountKv, startVaultServer, writePolicy } from '../platform/backends/openbao.js';
import { provider, type VaultClient } from '../../src/providers/vault/index.js';
import { ProviderError } from '../../src/providers/types.js';
import { testContext } from './context.js';

export const CANARY = 'vault-canary-7f3e';
export const STORE = 'SecretStore/vault-test/vault';
export const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');
export const json = (m: Record<string, Uint8Array>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, text(v)]));

export type Spec = Record<string, unknown>;
export type Kv = 'v1' | 'v2';
export const MOUNT: Record<Kv, string> = { v1: 'kv1', v2: 'secret' };

/** A run id, so keys of one run never collide with an earlier one's. */
export const run = `r${Date.now().toString(36)}`;

export const caught = (p: Promise<unknown>): Promise<unknown> => p.then(() => undefined, (err: unknown) => err);

export function isError(tt: Test, err: unknown, code: string, opts: { key?: string; match?: RegExp; notContain?: string[] } = {}): void {
  tt.ok(err instanceof ProviderError, `a ProviderError (got ${(err as Error)?.name}: ${(err as Error)?.message})`);
  if (!(err instanceof ProviderError)) return;
  tt.equal(err.code, code, `code ${code}: ${err.message}`);
  tt.match(err.message, STORE, 'names the store');
  if (opts.key) tt.match(err.message, opts.key, 'names the key');
  if (opts.match) tt.match(err.message, opts.match);
  for (const s of [CANARY, ...(opts.notContain ?? [])]) tt.notOk(err.message.includes(s), 'holds no secret');
}

/** Starts the dev server (stopped at `t`'s teardown) with KV v1 at kv1/, policies, a read-write token and an approle role. */
export async function vaultFixture(t: Test) {
  const server = await startVaultServer(t);

  await mountKv(server, 'kv1', 1);
  const RW = '{ capabilities = ["create", "read", "update", "delete", "list"] }';
  await writePolicy(server, 'esi-rw', `path "secret/*" ${RW}\npath "kv1/*" ${RW}`);
  await writePolicy(server, 'esi-narrow', 'path "secret/data/allowed/*" { capabilities = ["read"] }');
  const rwToken = await createToken(server, ['esi-rw']);
  await server.api('POST', 'sys/auth/approle', { type: 'approle' });
  await server.api('POST', 'auth/approle/role/esi', { token_policies: ['esi-rw'], token_ttl: '10m' });
  const roleId = ((await server.api('GET', 'auth/approle/role/esi/role-id')).body!.data as { role_id: string }).role_id;
  const newSecretId = async (role = 'esi') => ((await server.api('POST', `auth/approle/role/${role}/secret-id`, {})).body!.data as { secret_id: string }).secret_id;
  const approleSecretId = await newSecretId();

  function tokenSpec(kv: Kv, extra: Spec = {}): Spec {
    return { server: server.addr, path: MOUNT[kv], version: kv, auth: { tokenSecretRef: { name: 'vault-token', key: 'token' } }, ...extra };
  }

  async function newClient(spec: Spec, opts: { credentials?: Record<string, string>; token?: () => Promise<string>; timeoutMs?: number } = {}): Promise<VaultClient> {
    const ctx = testContext({ storeId: STORE, spec, namespace: 'vault-test', credentials: { 'vault-token/token': rwToken, ...opts.credentials }, ...(opts.token ? { token: opts.token } : {}), ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}) });
    return (await provider.newClient(ctx)) as VaultClient;
  }

  /** Seeds / reads a data map directly through the HTTP API (root token). */
  const seed = (kv: Kv, key: string, data: Record<string, unknown>, tags?: Record<string, string>) =>
    kvWrite(server, MOUNT[kv], kv === 'v1' ? 1 : 2, key, data, tags);
  const rawRead = (kv: Kv, key: string) => kvRead(server, MOUNT[kv], kv === 'v1' ? 1 : 2, key);

  return { server, rwToken, roleId, newSecretId, approleSecretId, tokenSpec, newClient, seed, rawRead };
}
