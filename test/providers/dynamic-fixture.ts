// Dynamic secrets against real servers: an OpenBao dev server whose database secrets engine
// manages a real PostgreSQL (test/platform/backends/postgresql.ts), and its PKI engine. Set
// up through the HTTP API with the root token (never the code under test); the store's own
// identity is an AppRole login with only the policy docs/dynamic-secrets.md documents.
import type { Test } from 'tap';
import { ApiError, startVaultServer, writePolicy, type VaultServer } from '../platform/backends/openbao.js';
import { startPostgres, type PostgresServer } from '../platform/backends/postgresql.js';

/** The store's policy for dynamic secrets (as documented in docs/dynamic-secrets.md). */
export const DYNAMIC_POLICY = `
path "database/creds/app" { capabilities = ["read"] }
path "database/creds/short" { capabilities = ["read"] }
path "database/creds/long" { capabilities = ["read"] }
path "database/creds/rot" { capabilities = ["read"] }
path "pki/issue/web" { capabilities = ["update"] }
path "sys/leases/renew" { capabilities = ["update"] }
path "sys/leases/revoke" { capabilities = ["update"] }
`;

export interface LeaseInfo {
  ttl: number;
  lastRenewal: string | null;
}

export interface DynamicFixture {
  vault: VaultServer;
  pg: PostgresServer;
  roleId: string;
  newSecretId(): Promise<string>;
  /** The lease as the server knows it (root token), or undefined when it is gone. */
  lookup(leaseId: string): Promise<LeaseInfo | undefined>;
  /** Leases the server holds under database/creds/<role> (root token). */
  dbLeases(role?: string): Promise<string[]>;
}

export async function dynamicFixture(t: Test, opts: { tokenTtl?: string; defaultTtl?: string; maxTtl?: string } = {}): Promise<DynamicFixture> {
  const vault = await startVaultServer(t);
  const pg = await startPostgres(t);

  await vault.api('POST', 'sys/mounts/database', { type: 'database' });
  await vault.api('POST', 'database/config/pg', {
    plugin_name: 'postgresql-database-plugin', connection_url: pg.connectionUrl,
    username: pg.admin.user, password: pg.admin.password, allowed_roles: 'app,short,long,rot', verify_connection: true,
  });
  await vault.api('POST', 'database/roles/app', {
    db_name: 'pg',
    creation_statements: [`CREATE ROLE "{{name}}" WITH LOGIN PASSWORD '{{password}}' VALID UNTIL '{{expiration}}';`],
    default_ttl: opts.defaultTtl ?? '1h', max_ttl: opts.maxTtl ?? '24h',
  });

  // `short`: its max TTL is reached within a test (the agent must rotate ahead of it);
  // `rot`: the same with room for an overlap on a slow machine (the node's pods: the first
  // renewal is capped at 25 s, the successor is minted about 8 s before the end);
  // `long`: outlives any test.
  for (const [role, ttl, max] of [['short', '6s', '12s'], ['rot', '30s', '45s'], ['long', '1h', '24h']]) {
    await vault.api('POST', `database/roles/${role}`, {
      db_name: 'pg',
      creation_statements: [`CREATE ROLE "{{name}}" WITH LOGIN PASSWORD '{{password}}' VALID UNTIL '{{expiration}}';`],
      default_ttl: ttl, max_ttl: max,
    });
  }
  await vault.api('POST', 'sys/mounts/pki', { type: 'pki', config: { max_lease_ttl: '87600h' } });
  await vault.api('POST', 'pki/root/generate/internal', { common_name: 'esi-test-root', ttl: '8760h' });
  await vault.api('POST', 'pki/roles/web', { allowed_domains: 'example.test', allow_subdomains: true, max_ttl: '72h' });

  await writePolicy(vault, 'esi-dynamic', DYNAMIC_POLICY);
  await vault.api('POST', 'sys/auth/approle', { type: 'approle' });
  await vault.api('POST', 'auth/approle/role/esi', { token_policies: ['esi-dynamic'], token_ttl: opts.tokenTtl ?? '1h' });
  const roleId = ((await vault.api('GET', 'auth/approle/role/esi/role-id')).body!.data as { role_id: string }).role_id;
  const newSecretId = async () => ((await vault.api('POST', 'auth/approle/role/esi/secret-id', {})).body!.data as { secret_id: string }).secret_id;

  const lookup = async (leaseId: string): Promise<LeaseInfo | undefined> => {
    try {
      const d = (await vault.api('PUT', 'sys/leases/lookup', { lease_id: leaseId })).body!.data as { ttl: number; last_renewal: string | null };
      return { ttl: d.ttl, lastRenewal: d.last_renewal };
    } catch (err) {
      if (err instanceof ApiError && (err.status === 400 || err.status === 404)) return undefined;
      throw err;
    }
  };
  const dbLeases = async (role = 'app'): Promise<string[]> => {
    try {
      return ((await vault.api('LIST', `sys/leases/lookup/database/creds/${role}`)).body!.data as { keys: string[] }).keys;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return [];
      throw err;
    }
  };
  return { vault, pg, roleId, newSecretId, lookup, dbLeases };
}
