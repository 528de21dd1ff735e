// ESI's stand-in of the Azure Key Vault *secrets* REST API (see lowkey-vault.ts): an
// HTTPS handler for secret bundles and ids, versions, tags, paging with nextLink, soft
// delete with the deleted-secret endpoints and purge, the 401 bearer challenge, 403 by
// access policy, 404/409 error bodies. A test double, not Microsoft's service: GAPS
// lists what it does not model.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { KEY_VAULT_RESOURCE, type Directory, type Permission } from './entra-standin.js';
import { nowS, readBody, send } from './standin-http.js';

/** What the stand-in vault does not model (tests name these where it matters). */
export const GAPS = {
  objects: 'secrets only: no keys, certificates, managed HSM, backup/restore or recover',
  policy: 'access policies only (get/list/set/delete/purge per principal), no Azure RBAC role assignments, no network rules',
  tokens: 'tokens are HMAC-signed by the local token endpoint; no Conditional Access / CAE claims challenges',
} as const;

interface Version {
  version: string;
  value: string;
  contentType?: string;
  tags: Record<string, string>;
  enabled: boolean;
  /** Expiry (`attributes.exp`, seconds since the epoch), when set. */
  exp?: number;
  created: number;
  updated: number;
}

interface DeletedSecret {
  versions: Version[];
  deletedDate: number;
  scheduledPurgeDate: number;
  /** Soft deletion is not visible at once, as in Azure (the SDK's poller waits for it). */
  visibleAt: number;
}

const NAME = /^[0-9A-Za-z-]{1,127}$/;
const RETENTION_DAYS = 7;

export class VaultStandIn {
  readonly secrets = new Map<string, Version[]>();
  readonly deleted = new Map<string, DeletedSecret>();
  readonly log: { method: string; path: string; status: number }[] = [];

  constructor(
    private readonly dir: Directory,
    private readonly base: () => string,
    private readonly authority: () => string,
    private readonly opts: { pageSize: number; purgeProtection: boolean },
  ) {}

  private bundle(name: string, v: Version, withValue: boolean) {
    return {
      ...(withValue ? { value: v.value } : {}),
      id: `${this.base()}/secrets/${name}${withValue ? `/${v.version}` : ''}`,
      ...(v.contentType ? { contentType: v.contentType } : {}),
      attributes: { enabled: v.enabled, ...(v.exp !== undefined ? { exp: v.exp } : {}), created: v.created, updated: v.updated, recoveryLevel: this.opts.purgeProtection ? 'Recoverable' : 'Recoverable+Purgeable', recoverableDays: RETENTION_DAYS },
      tags: v.tags,
    };
  }

  private versionItem(name: string, v: Version) {
    return { ...this.bundle(name, v, false), id: `${this.base()}/secrets/${name}/${v.version}` };
  }

  private deletedBundle(name: string, d: DeletedSecret) {
    return {
      ...this.bundle(name, d.versions[d.versions.length - 1]!, false),
      id: `${this.base()}/secrets/${name}/${d.versions[d.versions.length - 1]!.version}`,
      recoveryId: `${this.base()}/deletedsecrets/${name}`, deletedDate: d.deletedDate, scheduledPurgeDate: d.scheduledPurgeDate,
    };
  }

  private error(res: ServerResponse, status: number, code: string, message: string, inner?: string, headers?: Record<string, string>) {
    send(res, status, { error: { code, message, ...(inner ? { innererror: { code: inner } } : {}) } }, headers);
  }

  private challenge(res: ServerResponse, message: string) {
    this.error(res, 401, 'Unauthorized', message, undefined, {
      'www-authenticate': `Bearer authorization="${this.authority()}/${this.dir.tenantId}", resource="${KEY_VAULT_RESOURCE}"`,
    });
  }

  /** A page of a listing with Azure's nextLink/$skiptoken shape. */
  private page<T>(res: ServerResponse, url: URL, items: T[]) {
    const size = Math.min(Number(url.searchParams.get('maxresults') ?? this.opts.pageSize) || this.opts.pageSize, 25);
    const start = Number(url.searchParams.get('$skiptoken') ?? 0) || 0;
    const next = new URL(url.pathname, this.base());
    next.searchParams.set('api-version', url.searchParams.get('api-version')!);
    next.searchParams.set('maxresults', String(size));
    next.searchParams.set('$skiptoken', String(start + size));
    send(res, 200, { value: items.slice(start, start + size), nextLink: start + size < items.length ? next.toString() : null });
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.base());
    const status = () => res.statusCode;
    res.once('finish', () => this.log.push({ method: req.method ?? '', path: url.pathname, status: status() }));
    if (!url.searchParams.get('api-version')) return this.error(res, 400, 'BadParameter', 'The api-version query parameter is missing');
    const auth = req.headers.authorization ?? '';
    if (!auth.startsWith('Bearer ')) return this.challenge(res, 'AKV10000: Request is missing a Bearer or PoP token.');
    const who = this.dir.check(auth.slice('Bearer '.length));
    if (!who.clientId) return this.challenge(res, who.error!);
    const route = this.route(req.method ?? 'GET', url.pathname.replace(/(.)\/$/, '$1'));
    if (!route) return this.error(res, 404, 'NotFound', 'The requested resource was not found (stand-in: operation not modelled)');
    const perms = this.dir.identities.get(who.clientId)?.permissions;
    if (!perms?.has(route.permission)) {
      return this.error(res, 403, 'Forbidden', `The user, group or application 'appid=${who.clientId}' does not have secrets ${route.permission} permission on key vault;location=local`, 'AccessDenied');
    }
    const body = await readBody(req);
    return route.run(res, url, body);
  }

  /** The operations modelled: [method, path shape, permission, handler]. */
  private readonly routes: [string, RegExp, Permission, (res: ServerResponse, url: URL, m: RegExpExecArray, body: string) => void][] = [
    ['GET', /^\/secrets\/?$/, 'list', (res, url) => this.list(res, url)],
    ['PUT', /^\/secrets\/([^/]+)$/, 'set', (res, _u, m, body) => this.set(res, m[1]!, body)],
    ['DELETE', /^\/secrets\/([^/]+)$/, 'delete', (res, _u, m) => this.remove(res, m[1]!)],
    ['GET', /^\/secrets\/([^/]+)\/versions$/, 'list', (res, url, m) => this.versions(res, url, m[1]!)],
    ['GET', /^\/secrets\/([^/]+)(?:\/([^/]*))?$/, 'get', (res, _u, m) => this.get(res, m[1]!, m[2] ?? '')],
    ['GET', /^\/deletedsecrets\/([^/]+)$/, 'list', (res, _u, m) => this.getDeleted(res, m[1]!)],
    ['DELETE', /^\/deletedsecrets\/([^/]+)$/, 'purge', (res, _u, m) => this.purge(res, m[1]!)],
  ];

  private route(method: string, path: string) {
    for (const [verb, shape, permission, run] of this.routes) {
      const m = verb === method ? shape.exec(path) : null;
      if (m) return { permission, run: (res: ServerResponse, url: URL, body: string) => run(res, url, m, body) };
    }
    return undefined;
  }

  private notFound(res: ServerResponse, name: string, version?: string) {
    this.error(res, 404, 'SecretNotFound', `A secret with (name/id) ${name}${version ? `/${version}` : ''} was not found in this key vault. If you recently deleted this secret you may be able to recover it using the correct recovery command.`);
  }

  private get(res: ServerResponse, name: string, version: string) {
    const versions = this.secrets.get(name);
    const v = version ? versions?.find((x) => x.version === version) : versions?.[versions.length - 1];
    if (!v) return this.notFound(res, name, version);
    if (!v.enabled) return this.error(res, 403, 'Forbidden', 'Operation get is not allowed on a disabled secret.', 'SecretDisabled');
    send(res, 200, this.bundle(name, v, true));
  }

  private set(res: ServerResponse, name: string, body: string) {
    if (!NAME.test(name)) return this.error(res, 400, 'BadParameter', 'The request URI contains an invalid name');
    if (this.deleted.has(name)) {
      return this.error(res, 409, 'Conflict', `Secret ${name} is currently in a deleted but recoverable state, and its name cannot be reused; in this state, the secret can only be recovered or purged.`, 'ObjectIsDeletedButRecoverable');
    }
    let p: { value?: unknown; tags?: Record<string, string>; contentType?: string; attributes?: { enabled?: boolean; exp?: number } };
    try {
      p = JSON.parse(body) as typeof p;
    } catch {
      return this.error(res, 400, 'BadParameter', 'The request body is not valid JSON');
    }
    if (typeof p.value !== 'string') return this.error(res, 400, 'BadParameter', 'Property value is required');
    const now = nowS();
    const v: Version = { version: randomBytes(16).toString('hex'), value: p.value, tags: p.tags ?? {}, enabled: p.attributes?.enabled ?? true, ...(typeof p.attributes?.exp === 'number' ? { exp: p.attributes.exp } : {}), created: now, updated: now, ...(p.contentType ? { contentType: p.contentType } : {}) };
    this.secrets.set(name, [...(this.secrets.get(name) ?? []), v]);
    send(res, 200, this.bundle(name, v, true));
  }

  private list(res: ServerResponse, url: URL) {
    const items = [...this.secrets.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([n, vs]) => this.bundle(n, vs[vs.length - 1]!, false));
    this.page(res, url, items);
  }

  private versions(res: ServerResponse, url: URL, name: string) {
    const vs = this.secrets.get(name);
    if (!vs) return this.notFound(res, name);
    this.page(res, url, vs.map((v) => this.versionItem(name, v)));
  }

  private remove(res: ServerResponse, name: string) {
    const versions = this.secrets.get(name);
    if (!versions) return this.notFound(res, name);
    this.secrets.delete(name);
    const now = Date.now();
    const d: DeletedSecret = { versions, deletedDate: nowS(), scheduledPurgeDate: nowS() + RETENTION_DAYS * 86400, visibleAt: now + 300 };
    this.deleted.set(name, d);
    send(res, 200, this.deletedBundle(name, d));
  }

  private getDeleted(res: ServerResponse, name: string) {
    const d = this.deleted.get(name);
    if (!d || Date.now() < d.visibleAt) return this.error(res, 404, 'SecretNotFound', `Deleted Secret not found`);
    send(res, 200, this.deletedBundle(name, d));
  }

  private purge(res: ServerResponse, name: string) {
    const d = this.deleted.get(name);
    if (!d || Date.now() < d.visibleAt) return this.error(res, 404, 'SecretNotFound', `Deleted Secret not found`);
    if (this.opts.purgeProtection) {
      return this.error(res, 403, 'Forbidden', `Operation "purge" is not allowed because purge protection is enabled for this vault. Key Vault service will automatically purge it after the retention period has passed.`, 'ForbiddenByPolicy');
    }
    this.deleted.delete(name);
    send(res, 204);
  }
}
