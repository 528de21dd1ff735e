// Who may read /metrics (docs/metrics.md, "Authentication"): the caller's bearer token is checked with a
// TokenReview, then its right to `get` the non-resource path with a SubjectAccessReview, as
// controller-runtime's secure metrics and kube-rbac-proxy do. Answers are cached briefly in a
// bounded map keyed by the token's hash, so a scrape every 30 s costs two reviews a minute at
// most, and a flood of made-up tokens costs at most `maxInFlight` reviews at a time.
import { createHash } from 'node:crypto';
import { resourcePath, SUBJECT_ACCESS_REVIEWS, TOKEN_REVIEWS } from './paths.js';
import type { KubeRest } from './rest.js';

export interface AccessVerdict {
  /** 200 allowed; 401 no or bad token; 403 token good, right missing; 429 too many reviews
   *  in flight; 500 the apiserver could not be asked. */
  status: 200 | 401 | 403 | 429 | 500;
  /** One line for the caller (never the token). */
  message: string;
  /** The authenticated user, when there is one. */
  user?: string;
}

export interface AccessReviewOptions {
  /** How long an allowed answer is reused (default 60 s). */
  allowTtlMs?: number;
  /** How long a refusal (401, 403) is reused (default 10 s). */
  denyTtlMs?: number;
  /** Cached answers kept at most; the oldest go first (default 1024). */
  maxEntries?: number;
  /** Reviews sent to the apiserver at once at most; beyond, 429 (default 16). */
  maxInFlight?: number;
  now?: () => number;
}

/** Longer than any token the apiserver issues (bound tokens are about 1 KiB): bounded work. */
const MAX_TOKEN_LENGTH = 16 * 1024;

interface TokenReview {
  status?: { authenticated?: boolean; user?: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> } };
}
interface SubjectAccessReview {
  status?: { allowed?: boolean };
}

interface Entry {
  verdict: Promise<AccessVerdict>;
  expires: number;
}

export class MetricsAccessReview {
  private readonly cache = new Map<string, Entry>();
  private inFlight = 0;
  private readonly o: Required<Omit<AccessReviewOptions, 'now'>> & { now: () => number };
  /** The one path it guards; its messages spell it out (docs/troubleshooting.md quotes them). */
  private readonly path = '/metrics';

  constructor(private readonly rest: KubeRest, opts: AccessReviewOptions = {}) {
    this.o = {
      allowTtlMs: opts.allowTtlMs ?? 60_000, denyTtlMs: opts.denyTtlMs ?? 10_000,
      maxEntries: opts.maxEntries ?? 1024, maxInFlight: opts.maxInFlight ?? 16, now: opts.now ?? Date.now,
    };
  }

  /** The verdict on a request's Authorization header. Never throws. */
  async check(authorization: string | undefined): Promise<AccessVerdict> {
    const m = /^Bearer +(\S+)\s*$/i.exec(authorization ?? '');
    if (!m) return { status: 401, message: 'Unauthorized: /metrics needs a bearer token (Authorization: Bearer <ServiceAccount token>)' };
    const token = m[1]!;
    if (token.length > MAX_TOKEN_LENGTH) return { status: 401, message: 'Unauthorized: the bearer token is not valid' };
    const key = createHash('sha256').update(token).digest('hex');
    const now = this.o.now();
    const hit = this.cache.get(key);
    if (hit && hit.expires > now) return hit.verdict;
    if (hit) this.cache.delete(key);
    if (this.inFlight >= this.o.maxInFlight) return { status: 429, message: 'Too Many Requests: too many /metrics authentications in flight; retry' };
    this.inFlight++;
    const verdict = this.review(token).finally(() => this.inFlight--);
    // Concurrent requests with the same token share this review; the entry's lifetime is
    // set once the answer is known (errors are not kept: the next scrape asks again).
    const entry: Entry = { verdict, expires: Number.POSITIVE_INFINITY };
    this.remember(key, entry);
    const v = await verdict;
    if (v.status === 500) this.cache.delete(key);
    else entry.expires = this.o.now() + (v.status === 200 ? this.o.allowTtlMs : this.o.denyTtlMs);
    return v;
  }

  /** Cached answers now held (for tests of the bound). */
  size(): number {
    return this.cache.size;
  }

  private remember(key: string, entry: Entry): void {
    this.cache.set(key, entry);
    while (this.cache.size > this.o.maxEntries) this.cache.delete(this.cache.keys().next().value!);
  }

  private async review(token: string): Promise<AccessVerdict> {
    try {
      const tr = await this.rest.create<TokenReview>(resourcePath(TOKEN_REVIEWS), {
        apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token },
      });
      const u = tr.status?.user;
      if (!tr.status?.authenticated || !u?.username) return { status: 401, message: 'Unauthorized: the bearer token is not valid' };
      const sar = await this.rest.create<SubjectAccessReview>(resourcePath(SUBJECT_ACCESS_REVIEWS), {
        apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview',
        spec: {
          user: u.username, ...(u.uid ? { uid: u.uid } : {}), groups: u.groups ?? [], ...(u.extra ? { extra: u.extra } : {}),
          nonResourceAttributes: { path: this.path, verb: 'get' },
        },
      });
      if (!sar.status?.allowed) {
        return { status: 403, user: u.username, message: `Forbidden: user "${u.username}" may not get /metrics (bind it to a ClusterRole granting get on the nonResourceURL /metrics)` };
      }
      return { status: 200, user: u.username, message: 'ok' };
    } catch (err) {
      return { status: 500, message: `/metrics authentication failed: the apiserver did not answer the review (${(err as Error).message})` };
    }
  }
}
