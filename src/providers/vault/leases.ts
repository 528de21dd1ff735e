// Dynamic secrets of the vault provider (capability `leases`): a mint at any engine path
// (database/creds/x with GET, pki/issue/x with POST and parameters, ...), renewal
// (`sys/leases/renew`) and revocation (`sys/leases/revoke`). Vault revokes every lease a
// token created when that token ends, so the token a mint used is held (TokenSource.hold)
// until its last lease is revoked (docs/dynamic-secrets.md, "The minting token").
// A lease id names the engine path plus a random handle; it never enters a message (the
// id is redacted from Vault's error text too) or a log line.
import { X509Certificate } from 'node:crypto';
import { ProviderError, type GenerateRequest, type Generated, type Lease, type LeaseOperations } from '../types.js';
import type { Method } from './http.js';
import { dynamicPathProblem, trimSlashes } from './paths.js';
import { isObject } from '../../json-object.js';

type DataMap = Record<string, unknown>;

/** One authenticated call of the client (src/providers/vault/client.ts), resolving with the
 *  body and the token it used; 404 resolves with body undefined. */
export type TokenCall = (method: Method, path: string, spec: { body?: unknown; what: string; secrets?: readonly string[] }) => Promise<{ body: DataMap | undefined; token: string }>;

/** What the token source offers for held tokens (src/providers/vault/auth.ts). */
export interface TokenHolds {
  hold(token: string): void;
  release(token: string): void;
}


/** The engine path as sent, by the one rule of dynamic-secret paths (./paths.ts: no sys or
 *  climbing segment anywhere, auth only for the auth section or the whole response). */
function checkPath(storeId: string, path: string, result: GenerateRequest['result']): string {
  const problem = dynamicPathProblem(path, result ?? 'data');
  if (problem) throw new ProviderError('InvalidSpec', storeId, `dynamic secret path ${JSON.stringify(String(path).slice(0, 128))} ${problem}`);
  return trimSlashes(path);
}

/** Lease ids of tokens minted with `result: 'auth'` (see Lease.id). */
const TOKEN_LEASE = 'token-accessor:';

/** When the data stops being valid where the store says so: a certificate's notAfter
 *  (PKI's `expiration`, or the certificate itself when the engine sends no field). */
function dataExpiry(data: DataMap): Date | undefined {
  if (typeof data.expiration === 'number' && data.expiration > 0) return new Date(data.expiration * 1000);
  if (typeof data.certificate === 'string' && data.certificate.includes('BEGIN CERTIFICATE')) {
    try {
      return new Date(new X509Certificate(data.certificate).validTo);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

export class VaultLeases implements LeaseOperations {
  /** The token each live lease was minted with (released when the lease is revoked). */
  private readonly minters = new Map<string, string>();

  constructor(
    private readonly storeId: string,
    private readonly call: TokenCall,
    private readonly tokens: TokenHolds,
  ) {}

  /** Leases this client minted and has not revoked (tests and the agent's metrics read it). */
  get live(): number {
    return this.minters.size;
  }

  async generate(req: GenerateRequest): Promise<Generated> {
    const path = checkPath(this.storeId, req.path, req.result);
    const method = req.method ?? (req.parameters && Object.keys(req.parameters).length > 0 ? 'POST' : 'GET');
    if (method === 'GET' && req.parameters && Object.keys(req.parameters).length > 0) {
      throw new ProviderError('InvalidSpec', this.storeId, `dynamic secret ${path}: parameters need method POST`);
    }
    const { body, token } = await this.call(method, path, { what: 'generate', ...(method === 'POST' ? { body: req.parameters ?? {} } : {}) });
    if (!body) throw new ProviderError('NotFound', this.storeId, `no secrets engine answers at ${path} (404)`);
    const result = req.result ?? 'data';
    const data = isObject(body.data) ? body.data : undefined;
    const auth = isObject(body.auth) ? body.auth : undefined;
    const out: { data: DataMap; lease?: Lease; expiresAt?: Date } = { data: this.resultOf(path, result, body) };
    const lease = this.leaseOf(body, result === 'data' ? undefined : auth, token);
    if (lease) out.lease = lease;
    const expiresAt = data ? dataExpiry(data) : undefined;
    if (expiresAt) out.expiresAt = expiresAt;
    return out;
  }

  /** What the caller asked for: the data (which a dynamic secrets engine always sends), the
   *  auth section (empty when there is none), or the whole response. */
  private resultOf(path: string, result: 'data' | 'auth' | 'raw', body: DataMap): DataMap {
    if (result === 'raw') return body;
    if (result === 'auth') return isObject(body.auth) ? body.auth : {};
    if (!isObject(body.data)) throw new ProviderError('Unknown', this.storeId, `${path} answered without data (not a dynamic secrets engine?)`);
    return body.data;
  }

  /** The response's lease, or for a minted token (`auth`, when asked for) a lease named by
   *  its accessor; the minting token is held while either lives. */
  private leaseOf(body: DataMap, auth: DataMap | undefined, token: string): Lease | undefined {
    const seconds = (v: unknown) => (typeof v === 'number' ? v : 0);
    if (typeof body.lease_id === 'string' && body.lease_id !== '') {
      this.track(body.lease_id, token);
      return { id: body.lease_id, ttlSeconds: seconds(body.lease_duration), renewable: body.renewable === true };
    }
    if (typeof auth?.accessor !== 'string' || auth.accessor === '') return undefined;
    // A token minted with this client's token is its child: Vault revokes it with the parent
    // unless it is an orphan, so the parent is held as for a lease.
    const lease = { id: `${TOKEN_LEASE}${auth.accessor}`, ttlSeconds: seconds(auth.lease_duration), renewable: false };
    if (auth.orphan !== true) this.track(lease.id, token);
    return lease;
  }

  private track(leaseId: string, token: string): void {
    this.minters.set(leaseId, token);
    this.tokens.hold(token);
  }

  async renew(lease: Lease, incrementSeconds?: number): Promise<Lease> {
    if (lease.id.startsWith(TOKEN_LEASE)) throw new ProviderError('InvalidSpec', this.storeId, 'lease renewal: a minted token is not renewable through its lease');
    const body: DataMap = { lease_id: lease.id };
    if (incrementSeconds !== undefined) body.increment = Math.max(0, Math.floor(incrementSeconds));
    let res: DataMap | undefined;
    try {
      res = (await this.call('POST', 'sys/leases/renew', { body, what: 'lease renewal', secrets: [lease.id] })).body;
    } catch (err) {
      // Vault answers 400 "lease not found" for a lease that expired or was revoked.
      if (!(err instanceof ProviderError && /lease not found|invalid lease/i.test(err.message))) throw err;
      res = undefined;
    }
    if (!res) throw new ProviderError('NotFound', this.storeId, 'lease renewal: the lease is unknown to Vault (expired or revoked)');
    return {
      id: lease.id,
      ttlSeconds: typeof res.lease_duration === 'number' ? res.lease_duration : 0,
      renewable: res.renewable === true,
    };
  }

  /** Revokes the lease at once (Vault removes the credential: drops the database user);
   *  a lease Vault no longer knows counts as revoked. Releases the minting token. */
  async revoke(lease: Lease): Promise<void> {
    if (lease.id.startsWith(TOKEN_LEASE)) {
      const accessor = lease.id.slice(TOKEN_LEASE.length);
      await this.call('POST', 'auth/token/revoke-accessor', { body: { accessor }, what: 'token revocation', secrets: [accessor] });
    } else {
      await this.call('POST', 'sys/leases/revoke', { body: { lease_id: lease.id }, what: 'lease revocation', secrets: [lease.id] });
    }
    this.forget(lease.id);
  }

  /** Stops tracking a lease without revoking it (a credential the caller hands on). */
  forget(leaseId: string): void {
    const token = this.minters.get(leaseId);
    if (token === undefined) return;
    this.minters.delete(leaseId);
    this.tokens.release(token);
  }
}
