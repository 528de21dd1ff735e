// Vault tokens for one client: a static token (tokenSecretRef), or one obtained by a login
// (appRole, kubernetes, jwt) that the client owns for its whole life. An owned token is
// renewed before its TTL ends (renew-self at two thirds of the lease), replaced by a new
// login when it cannot be renewed any more (not renewable, capped by its max TTL, or the
// renewal failed) — the replaced token is revoked at once — and revoked on close(). So a
// long-running agent holds exactly one token per store, however many refreshes it does.
// Except one case: Vault revokes every lease a token created when the token is revoked, so
// a token that minted live leases (dynamic secrets, src/providers/vault/leases.ts) is held:
// a re-login keeps it (it is revoked when its last lease is), close() leaves it alone, and
// a failed renewal of it is retried instead of replacing it (docs/dynamic-secrets.md, "The minting token").
import type { Logger } from 'pino';
import type { SecretKeySelector as ApiSelector, VaultAuth } from '../../api/types.js';
import { toProviderError, type Classified } from '../errors.js';
import { ProviderError, type ProviderContext, type SecretKeySelector } from '../types.js';
import { VaultCallError, type VaultHttp } from './http.js';
import { authMethodOf } from './spec.js';

/** What a login yields. `leaseSeconds` 0 = the token does not expire. */
export interface Grant {
  token: string;
  leaseSeconds: number;
  renewable: boolean;
}

interface Current extends Grant {
  obtainedAt: number;
  expiresAt: number;
  /** The last renewal granted less than asked: the max TTL is near, log in again next. */
  capped: boolean;
}

const text = (b: Uint8Array) => Buffer.from(b).toString('utf8').trim();

/** Reads a credential and names it in the error when it is missing or empty. */
export async function credential(ctx: ProviderContext, ref: ApiSelector, what: string): Promise<string> {
  const sel: SecretKeySelector = { name: ref.name, key: ref.key ?? '', ...(ref.namespace ? { namespace: ref.namespace } : {}) };
  const value = text(await ctx.readCredential(sel));
  if (!value) throw new ProviderError('AuthFailed', ctx.storeId, `${what} (${ref.name}/${ref.key}) is empty`);
  return value;
}

function grantOf(body: Record<string, unknown> | undefined): Grant | undefined {
  const auth = body?.auth as { client_token?: unknown; lease_duration?: unknown; renewable?: unknown } | undefined;
  if (!auth || typeof auth.client_token !== 'string' || auth.client_token === '') return undefined;
  return {
    token: auth.client_token,
    leaseSeconds: typeof auth.lease_duration === 'number' ? auth.lease_duration : 0,
    renewable: auth.renewable === true,
  };
}

/** A login function for the spec's auth method, or undefined for a static token. */
export function loginFor(ctx: ProviderContext, http: VaultHttp, auth: VaultAuth): (() => Promise<Grant>) | undefined {
  const post = async (mount: string, body: Record<string, string>, secrets: string[], method: string): Promise<Grant> => {
    let res: Record<string, unknown> | undefined;
    try {
      res = await http.call('POST', `auth/${mount.replace(/^\/+|\/+$/g, '')}/login`, { body, secrets });
    } catch (err) {
      if (err instanceof VaultCallError && err.status !== undefined && err.status >= 400 && err.status < 500) {
        throw new ProviderError('AuthFailed', ctx.storeId, `${method} login at auth/${mount} refused: ${err.message}`);
      }
      throw toProviderError(err, { storeId: ctx.storeId, op: `${method} login` }, classifyVault);
    }
    const grant = grantOf(res);
    if (!grant) throw new ProviderError('AuthFailed', ctx.storeId, `${method} login at auth/${mount} returned no token`);
    return grant;
  };
  switch (authMethodOf(auth)) {
    case 'appRole': {
      const a = auth.appRole!;
      return async () => {
        const roleId = a.roleId ?? (await credential(ctx, a.roleRef!, 'appRole roleRef'));
        const secretId = await credential(ctx, a.secretRef, 'appRole secretRef');
        return post(a.path ?? 'approle', { role_id: roleId, secret_id: secretId }, [roleId, secretId], 'appRole');
      };
    }
    case 'kubernetes': {
      const k = auth.kubernetes!;
      return async () => {
        const jwt = k.secretRef
          ? await credential(ctx, k.secretRef, 'kubernetes secretRef')
          : await ctx.serviceAccountToken(k.serviceAccountRef?.audiences?.[0]);
        return post(k.mountPath ?? 'kubernetes', { role: k.role, jwt }, [jwt], 'kubernetes');
      };
    }
    case 'jwt': {
      const j = auth.jwt!;
      return async () => {
        const sa = j.kubernetesServiceAccountToken;
        const jwt = j.secretRef
          ? await credential(ctx, j.secretRef, 'jwt secretRef')
          : await ctx.serviceAccountToken(sa?.audiences?.[0] ?? sa?.serviceAccountRef.audiences?.[0]);
        const body: Record<string, string> = { jwt };
        if (j.role) body.role = j.role;
        return post(j.path ?? 'jwt', body, [jwt], 'jwt');
      };
    }
    default:
      return undefined;
  }
}

/** What a failed Vault call means: its VaultCallError already carries the code. */
export function classifyVault(err: unknown): Classified | undefined {
  return err instanceof VaultCallError ? { code: err.code, message: err.message } : undefined;
}

export interface TokenSourceOptions {
  storeId: string;
  http: VaultHttp;
  logger: Logger;
  /** Re-reads the static token (tokenSecretRef). */
  staticToken?: () => Promise<string>;
  login?: () => Promise<Grant>;
  /** Renew at this fraction of the lease (default 2/3). */
  renewAt?: number;
}

export class TokenSource {
  private current: Current | undefined;
  private pending: Promise<Current> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Live leases per token that minted them (held tokens are not revoked). */
  private readonly holds = new Map<string, number>();
  /** Logins performed (tests and metrics read it). */
  logins = 0;
  renewals = 0;

  constructor(private readonly opts: TokenSourceOptions) {}

  /** Whether the token is owned (obtained by login) and therefore renewed and revoked. */
  get owned(): boolean {
    return this.opts.login !== undefined;
  }

  /** A valid token, logging in first when there is none or it has run out. */
  async token(): Promise<string> {
    if (this.closed) throw new ProviderError('Unknown', this.opts.storeId, 'client is closed');
    const c = this.current;
    if (c && (c.leaseSeconds === 0 || Date.now() < c.expiresAt - 1000)) return c.token;
    return (await this.obtain()).token;
  }

  /** Marks `token` as the minter of one more live lease: it is not revoked while held. */
  hold(token: string): void {
    this.holds.set(token, (this.holds.get(token) ?? 0) + 1);
  }

  /** One lease of `token` ended; a held token that is no longer the current one (replaced
   *  by a re-login, or the client closed) is revoked with its last lease. */
  release(token: string): void {
    const n = (this.holds.get(token) ?? 0) - 1;
    if (n > 0) {
      this.holds.set(token, n);
      return;
    }
    this.holds.delete(token);
    if (this.owned && (this.closed || this.current?.token !== token)) void this.revoke(token);
  }

  /** Tokens held for live leases (tests read it). */
  get heldTokens(): number {
    return this.holds.size;
  }

  /** Forgets a token Vault no longer accepts (revoked, expired early); the next call logs in. */
  invalidate(token: string): void {
    if (this.current?.token === token) {
      this.current = undefined;
      this.clearTimer();
    }
  }

  private obtain(): Promise<Current> {
    this.pending ??= this.fetch().finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async fetch(): Promise<Current> {
    const grant: Grant = this.opts.login
      ? await this.opts.login()
      : { token: await this.opts.staticToken!(), leaseSeconds: 0, renewable: false };
    if (this.opts.login) this.logins++;
    if (this.closed) {
      // close() ran while this login was in flight: do not leak the new token.
      if (this.owned) await this.revoke(grant.token);
      throw new ProviderError('Unknown', this.opts.storeId, 'client is closed');
    }
    const previous = this.current;
    const now = Date.now();
    this.current = { ...grant, obtainedAt: now, expiresAt: now + grant.leaseSeconds * 1000, capped: false };
    if (previous && this.owned && previous.token !== grant.token) {
      if (this.holds.has(previous.token)) this.opts.logger.info('vault: keeping the replaced token until the leases it minted are revoked (revoking it would revoke them)');
      else void this.revoke(previous.token);
    }
    this.schedule();
    return this.current;
  }

  private schedule(): void {
    this.clearTimer();
    const c = this.current;
    if (!c || !this.owned || c.leaseSeconds === 0) return;
    const delay = Math.max(200, (c.expiresAt - c.obtainedAt) * (this.opts.renewAt ?? 2 / 3) - (Date.now() - c.obtainedAt));
    this.timer = setTimeout(() => void this.maintain(), delay);
    this.timer.unref();
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Renews the token, or replaces it by a new login when renewal is impossible. */
  private async maintain(): Promise<void> {
    const c = this.current;
    if (!c || this.closed) return;
    if (c.renewable && !c.capped && (await this.renew(c))) return;
    if (this.closed || this.current !== c) return;
    const left = c.expiresAt - Date.now();
    if (c.renewable && !c.capped && this.holds.has(c.token) && left > 5000) {
      // Its leases end with it: retry the renewal while it lasts rather than replace it.
      this.timer = setTimeout(() => void this.maintain(), Math.min(30_000, left / 3));
      this.timer.unref();
      return;
    }
    try {
      await this.obtain();
    } catch (err) {
      if (this.closed) return;
      // Keep the old token while it lasts; try again soon.
      this.opts.logger.warn({ err: (err as Error).message }, 'vault: could not log in again; retrying');
      this.timer = setTimeout(() => void this.maintain(), Math.max(1000, Math.min(30_000, left / 2)));
      this.timer.unref();
    }
  }

  private async renew(c: Current): Promise<boolean> {
    const asked = c.leaseSeconds;
    try {
      const res = await this.opts.http.call('POST', 'auth/token/renew-self', { token: c.token, body: { increment: `${asked}s` } });
      const grant = grantOf(res);
      if (!grant || this.current !== c || this.closed) return false;
      const now = Date.now();
      this.renewals++;
      // Vault caps a renewal at the token's max TTL: when it grants less than asked, the
      // end is near, and the next maintenance logs in again instead of renewing.
      this.current = { ...c, obtainedAt: now, expiresAt: now + grant.leaseSeconds * 1000, capped: grant.leaseSeconds < asked };
      this.schedule();
      return true;
    } catch (err) {
      this.opts.logger.debug({ err: (err as Error).message }, 'vault: token renewal failed; logging in again');
      return false;
    }
  }

  private async revoke(token: string): Promise<void> {
    try {
      await this.opts.http.call('POST', 'auth/token/revoke-self', { token });
    } catch (err) {
      this.opts.logger.debug({ err: (err as Error).message }, 'vault: could not revoke a token (it expires by itself)');
    }
  }

  /** Stops renewing and revokes the owned token, unless it minted leases still live (their
   *  owner revokes them first, or hands them on). A static token is left alone. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.clearTimer();
    await this.pending?.catch(() => undefined);
    const c = this.current;
    this.current = undefined;
    if (c && this.owned && !this.holds.has(c.token)) await this.revoke(c.token);
  }
}
