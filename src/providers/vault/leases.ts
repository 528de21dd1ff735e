// Dynamic secrets of the vault provider (capability `leases`): a mint at any engine path
// (database/creds/x with GET, pki/issue/x with POST and parameters, ...), renewal
// (`sys/leases/renew`) and revocation (`sys/leases/revoke`). Vault revokes every lease a
// token created when that token ends, so the token a mint used is held (TokenSource.hold)
// until its last lease is revoked: see docs/decisions/0054-dynamic-secrets.md.
// A lease id names the engine path plus a random handle; it never enters a message (the
// id is redacted from Vault's error text too) or a log line.
import { X509Certificate } from 'node:crypto';
import { ProviderError, type GenerateRequest, type Generated, type Lease, type LeaseOperations } from '../types.js';
import type { Method } from './http.js';

type DataMap = Record<string, unknown>;

/** One authenticated call of the client (src/providers/vault/client.ts), resolving with the
 *  body and the token it used; 404 resolves with body undefined. */
export type TokenCall = (method: Method, path: string, spec: { body?: unknown; what: string; secrets?: readonly string[] }) => Promise<{ body: DataMap | undefined; token: string }>;

/** What the token source offers for held tokens (src/providers/vault/auth.ts). */
export interface TokenHolds {
  hold(token: string): void;
  release(token: string): void;
}

const isMap = (v: unknown): v is DataMap => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Engine paths are relative (no leading slash), with no empty, `.` or `..` segment. */
function checkPath(storeId: string, path: string): string {
  const p = path.replace(/^\/+|\/+$/g, '');
  if (!p || p.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    throw new ProviderError('InvalidSpec', storeId, `dynamic secret path "${path}" is not a Vault path (segments separated by single slashes, no "." or "..")`);
  }
  if (/^(sys|auth)\//.test(p)) throw new ProviderError('InvalidSpec', storeId, `dynamic secret path "${path}" is a system or auth path, not a secrets engine`);
  return p;
}

/** When the data stops being valid where the store says so: a certificate's notAfter
 *  (PKI's `expiration`, or the certificate itself when the engine sends no field). */
export function dataExpiry(data: DataMap): Date | undefined {
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
    const path = checkPath(this.storeId, req.path);
    const method = req.method ?? (req.parameters && Object.keys(req.parameters).length > 0 ? 'POST' : 'GET');
    if (method === 'GET' && req.parameters && Object.keys(req.parameters).length > 0) {
      throw new ProviderError('InvalidSpec', this.storeId, `dynamic secret ${path}: parameters need method POST`);
    }
    const { body, token } = await this.call(method, path, { what: 'generate', ...(method === 'POST' ? { body: req.parameters ?? {} } : {}) });
    if (!body) throw new ProviderError('NotFound', this.storeId, `no secrets engine answers at ${path} (404)`);
    const data = isMap(body.data) ? body.data : undefined;
    if (!data) throw new ProviderError('Unknown', this.storeId, `${path} answered without data (not a dynamic secrets engine?)`);
    const out: { data: DataMap; lease?: Lease; expiresAt?: Date } = { data };
    if (typeof body.lease_id === 'string' && body.lease_id !== '') {
      out.lease = { id: body.lease_id, ttlSeconds: typeof body.lease_duration === 'number' ? body.lease_duration : 0, renewable: body.renewable === true };
      this.minters.set(body.lease_id, token);
      this.tokens.hold(token);
    }
    const expiresAt = dataExpiry(data);
    if (expiresAt) out.expiresAt = expiresAt;
    return out;
  }

  async renew(lease: Lease, incrementSeconds?: number): Promise<Lease> {
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
    await this.call('POST', 'sys/leases/revoke', { body: { lease_id: lease.id }, what: 'lease revocation', secrets: [lease.id] });
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
