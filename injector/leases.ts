// Dynamic secrets in the agent (docs/dynamic-secrets.md): one credential per entry, minted
// once for the pod and kept for its life — refreshes reuse it, they never mint again. The
// lease is renewed at about 2/3 of its TTL (±10 % jitter); when the store grants less than
// asked (its max TTL is near), the lease is not renewable, or a certificate's validity runs
// out, a new credential is minted ahead of the end, published atomically (with the app
// notified) by the agent's own cycle, and the old lease is revoked after `overlapSeconds`.
// At exit every lease is revoked unless its entry says `revokeOnExit: false`.
// Lease ids never reach a log line: entries are named by their configured name.
import type { Logger } from 'pino';
import type { AgentConfig, AgentDynamicSecret } from '../src/agent-config/types.js';
import { emptySecretMap, ProviderError, type Generated, type Lease, type LeaseOperations, type SecretMap, type SecretsClient } from '../src/providers/types.js';
import { jittered, MAX_TIMER_MS } from './loop.js';
import type { AgentMetrics } from './metrics.js';

const RENEW_AT = 2 / 3;
const DEFAULT_OVERLAP_SECONDS = 60;

interface Credential {
  generated: Generated;
  lease?: Lease;
  /** When the credential ends (ms since epoch): lease TTL or certificate notAfter. */
  endsAt: number;
  /** Seconds the store granted at mint: what each renewal asks for. */
  asked: number;
}

interface Entry {
  cfg: AgentDynamicSecret;
  current?: Credential;
  /** Replaced credentials still valid, revoked after the overlap once the new one is out. */
  retiring: { cred: Credential; published: boolean }[];
  timer?: NodeJS.Timeout;
}

export interface LeaseKeeperOptions {
  config: AgentConfig;
  /** A client of its own per store (not the refresh cycle's, which may be dropped on errors). */
  openClient(store: string): Promise<SecretsClient>;
  logger: Logger;
  metrics: AgentMetrics;
  /** Runs a publish cycle after a rotation; resolves true once the files are out. */
  publish(): Promise<boolean>;
  random?: () => number;
}

const text = (v: unknown): Uint8Array => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v), 'utf8');

export class LeaseKeeper {
  private readonly entries: Entry[];
  private readonly clients = new Map<string, Promise<SecretsClient>>();
  private closed = false;

  constructor(private readonly opts: LeaseKeeperOptions) {
    this.entries = (opts.config.dynamicSecrets ?? []).map((cfg) => ({ cfg, retiring: [] }));
    opts.metrics.leaseTtls = () => new Map(this.entries.filter((e) => e.current).map((e) => [e.cfg.name, Math.max(0, Math.round((e.current!.endsAt - Date.now()) / 1000))]));
  }

  get size(): number {
    return this.entries.length;
  }

  private ops(store: string): Promise<LeaseOperations> {
    let p = this.clients.get(store);
    if (!p) {
      p = this.opts.openClient(store);
      p.catch(() => this.clients.delete(store));
      this.clients.set(store, p);
    }
    return p.then((c) => {
      if (!c.leases) throw new ProviderError('Unsupported', store, 'this store mints no leases');
      return c.leases;
    });
  }

  private log(e: Entry): Logger {
    return this.opts.logger.child({ dynamicSecret: e.cfg.name, store: e.cfg.store });
  }

  /** The data of every entry, minting those that have no credential yet (the first cycle,
   *  or a mint that failed before). Throws when one cannot be minted. */
  async values(): Promise<Map<string, SecretMap>> {
    const out = new Map<string, SecretMap>();
    for (const e of this.entries) {
      if (!e.current) {
        e.current = await this.mint(e);
        this.schedule(e);
      }
      const m = emptySecretMap();
      for (const [k, v] of Object.entries(e.current.generated.data)) m[k] = text(v);
      out.set(e.cfg.name, m);
    }
    return out;
  }

  private async mint(e: Entry): Promise<Credential> {
    const { path, method, parameters } = e.cfg;
    let generated: Generated;
    try {
      generated = await (await this.ops(e.cfg.store)).generate({ path, ...(method ? { method } : {}), ...(parameters ? { parameters } : {}) });
    } catch (err) {
      throw new Error(`dynamic secret "${e.cfg.name}" store ${e.cfg.store}: ${(err as Error).message}`, { cause: err });
    }
    const now = Date.now();
    const ends = [generated.lease && generated.lease.ttlSeconds > 0 ? now + generated.lease.ttlSeconds * 1000 : undefined, generated.expiresAt?.getTime()]
      .filter((x): x is number => x !== undefined);
    const cred: Credential = { generated, endsAt: ends.length ? Math.min(...ends) : Infinity, asked: generated.lease?.ttlSeconds ?? 0 };
    if (generated.lease) cred.lease = generated.lease;
    this.log(e).info({ ttlSeconds: generated.lease?.ttlSeconds, renewable: generated.lease?.renewable, expiresAt: generated.expiresAt?.toISOString() }, 'dynamic secret minted');
    return cred;
  }

  /** Next step for the current credential: renew it, or mint its successor ahead of the end. */
  private schedule(e: Entry, capped = false): void {
    clearTimeout(e.timer);
    const c = e.current;
    if (!c || this.closed || c.endsAt === Infinity) return;
    const left = c.endsAt - Date.now();
    const renewable = c.lease?.renewable === true && !capped && c.generated.expiresAt === undefined;
    const delay = Math.min(MAX_TIMER_MS, Math.max(200, jittered(left * RENEW_AT, 0.1, this.opts.random)));
    e.timer = setTimeout(() => void (renewable ? this.renew(e) : this.rotate(e)), delay);
    e.timer.unref();
  }

  private async renew(e: Entry): Promise<void> {
    const c = e.current;
    if (!c?.lease || this.closed) return;
    try {
      const lease = await (await this.ops(e.cfg.store)).renew(c.lease, c.asked);
      if (this.closed || e.current !== c) return;
      this.opts.metrics.leaseRenewals.inc({ secret: e.cfg.name, result: 'success' });
      c.lease = lease;
      c.endsAt = Date.now() + lease.ttlSeconds * 1000;
      // The store granted less than asked: its max TTL is near; mint the successor next.
      const capped = lease.ttlSeconds < c.asked || !lease.renewable;
      this.log(e).debug({ ttlSeconds: lease.ttlSeconds, capped }, 'lease renewed');
      this.schedule(e, capped);
    } catch (err) {
      if (this.closed) return;
      this.opts.metrics.leaseRenewals.inc({ secret: e.cfg.name, result: 'failure' });
      const left = c.endsAt - Date.now();
      // A lease the store no longer knows (revoked, expired) is replaced at once.
      const gone = err instanceof ProviderError && err.code === 'NotFound';
      this.log(e).warn({ err: (err as Error).message, leftSeconds: Math.round(left / 1000) }, gone ? 'lease gone; minting a new credential' : 'lease renewal failed; retrying while it lasts');
      clearTimeout(e.timer);
      if (gone) {
        c.endsAt = Date.now();
        await this.rotate(e);
        return;
      }
      // Retry while a quarter of the TTL (at most 10 s) is left; past that, mint a successor.
      const floor = Math.min(10_000, c.asked * 250);
      e.timer = setTimeout(() => void (left > floor ? this.renew(e) : this.rotate(e)), Math.max(200, Math.min(30_000, left / 3)));
      e.timer.unref();
    }
  }

  /** Mints the successor, publishes it, and retires the old credential after the overlap. */
  private async rotate(e: Entry): Promise<void> {
    const old = e.current;
    if (!old || this.closed) return;
    let next: Credential;
    try {
      next = await this.mint(e);
    } catch (err) {
      this.log(e).warn({ err: (err as Error).message }, 'could not mint the successor credential; retrying');
      clearTimeout(e.timer);
      e.timer = setTimeout(() => void this.rotate(e), Math.max(1000, Math.min(30_000, (old.endsAt - Date.now()) / 3)));
      e.timer.unref();
      return;
    }
    if (this.closed) {
      await this.revokeOne(e, next);
      return;
    }
    e.current = next;
    const retiring = { cred: old, published: false };
    e.retiring.push(retiring);
    this.schedule(e);
    if (await this.opts.publish()) this.published();
  }

  /** The files now hold every current credential: retire the replaced ones after the overlap. */
  published(): void {
    for (const e of this.entries) {
      for (const r of e.retiring) {
        if (r.published) continue;
        r.published = true;
        const overlap = (e.cfg.overlapSeconds ?? DEFAULT_OVERLAP_SECONDS) * 1000;
        const at = Math.min(overlap, Math.max(0, r.cred.endsAt - Date.now() - 1000));
        setTimeout(() => {
          if (this.closed) return; // close() revoked it
          e.retiring = e.retiring.filter((x) => x !== r);
          void this.revokeOne(e, r.cred);
        }, Math.min(MAX_TIMER_MS, at)).unref();
      }
    }
  }

  private async revokeOne(e: Entry, c: Credential): Promise<void> {
    if (!c.lease) return;
    try {
      await (await this.ops(e.cfg.store)).revoke(c.lease);
      this.log(e).info('lease revoked');
    } catch (err) {
      this.log(e).warn({ err: (err as Error).message }, 'could not revoke a lease (it ends with its TTL)');
    }
  }

  /** Stops renewing; revokes every lease whose entry does not opt out; closes the clients
   *  (a client keeps the token of a lease left alive: src/providers/vault/auth.ts). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const revokes: Promise<void>[] = [];
    for (const e of this.entries) {
      clearTimeout(e.timer);
      if (e.cfg.revokeOnExit === false) continue;
      for (const c of [e.current, ...e.retiring.map((r) => r.cred)]) if (c) revokes.push(this.revokeOne(e, c));
    }
    await Promise.all(revokes);
    const clients = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(clients.map((p) => p.then((c) => c.close()).catch(() => undefined)));
  }
}
