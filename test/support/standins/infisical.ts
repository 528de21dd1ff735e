// A stand-in for Infisical's API on 127.0.0.1 (a stand-in, not Infisical): the subset of the
// documented REST API (infisical.com/docs/api-reference; auth v1, secrets v3 "raw") that ESO's
// Infisical store calls and ESI follows. Under `/api`:
//  POST /v1/auth/universal-auth/login {clientId, clientSecret}, POST /v1/auth/jwt-auth/login
//  {identityId, jwt} → {accessToken, expiresIn, accessTokenMaxTTL, tokenType}; POST
//  /v1/auth/token/revoke {accessToken}; GET /v3/secrets/raw/{name} → {secret: {secretKey,
//  secretValue, …}}; GET /v3/secrets/raw → {secrets: […], imports: [{secretPath, secrets}]}.
// Both GETs take workspaceSlug, environment, secretPath, expandSecretReferences (`${NAME}` of
// the same folder), include_imports; the list takes recursive. The writes of ESO's PushSecret:
// GET /v1/projects/slug/{slug} → {id, slug, …}; POST / PATCH / DELETE /v3/secrets/raw/{name}
// with {workspaceId, environment, secretPath, type, secretValue} → {secret}; a write to a
// folder that does not exist is 404, a create of an existing secret 400. Errors as Infisical answers
// them ({statusCode, message, error}): 401 for an unknown or expired token, 404 for an
// unknown project, environment, folder or secret.
import type { ServerResponse } from 'node:http';
import { json, serve, type StandIn } from './http.js';

export interface InfisicalProject {
  slug: string;
  /** The project's id (the write routes' workspaceId); default `proj-<slug>`. */
  id?: string;
  environment: string;
  /** Folder path → secret name → value. */
  folders: Record<string, Record<string, string>>;
  /** Folder path → the folders whose secrets it imports. */
  imports?: Record<string, string[]>;
}

export interface InfisicalIdentities {
  universal?: { clientId: string; clientSecret: string };
  jwt?: { identityId: string; jwt: string };
  /** A static access token (token auth). */
  accessToken?: string;
  /** Lifetime of a login's access token, seconds. */
  expiresIn?: number;
}

export interface InfisicalStandIn extends StandIn {
  logins: number;
  revoked: string[];
}

export async function startInfisicalStandIn(t: { teardown(fn: () => unknown): void }, ids: InfisicalIdentities, project: InfisicalProject): Promise<InfisicalStandIn> {
  const tokens = new Map<string, number>();
  if (ids.accessToken) tokens.set(ids.accessToken, Infinity);
  let n = 0;
  const fail = (res: ServerResponse, status: number, message: string) => json(res, status, { statusCode: status, message, error: status === 401 ? 'UnauthorizedError' : 'NotFound' });
  const expand = (folder: Record<string, string>, v: string, on: boolean) => (on ? v.replace(/\$\{([A-Za-z0-9_-]+)\}/g, (m, k: string) => folder[k] ?? m) : v);
  const state = { logins: 0, revoked: [] as string[] };
  const issue = (res: ServerResponse) => {
    state.logins++;
    const token = `inf-access-${++n}`;
    const expiresIn = ids.expiresIn ?? 3600;
    tokens.set(token, Date.now() + expiresIn * 1000);
    json(res, 200, { accessToken: token, expiresIn, accessTokenMaxTTL: 2592000, tokenType: 'Bearer' });
  };
  const login = (p: string, b: Record<string, string>, res: ServerResponse): boolean => {
    if (p === '/v1/auth/universal-auth/login') {
      if (ids.universal && b.clientId === ids.universal.clientId && b.clientSecret === ids.universal.clientSecret) issue(res);
      else fail(res, 401, 'Invalid credentials');
      return true;
    }
    if (p === '/v1/auth/jwt-auth/login') {
      if (ids.jwt && b.identityId === ids.jwt.identityId && b.jwt === ids.jwt.jwt) issue(res);
      else fail(res, 401, 'Access denied: JWT verification failed');
      return true;
    }
    return false;
  };
  const secrets = (p: string, q: URLSearchParams, res: ServerResponse) => {
    if (q.get('workspaceSlug') !== project.slug) return fail(res, 404, `Project with slug '${q.get('workspaceSlug')}' not found`);
    if (q.get('environment') !== project.environment) return fail(res, 404, 'Environment not found');
    const path = q.get('secretPath') ?? '/';
    const folder = project.folders[path];
    if (!folder) return fail(res, 404, `Folder with path '${path}' not found`);
    const on = q.get('expandSecretReferences') !== 'false';
    const imported = q.get('include_imports') === 'true' ? (project.imports?.[path] ?? []) : [];
    const raw = (fp: string, k: string) => {
      const f = project.folders[fp]!;
      return { id: `${fp}:${k}`, secretKey: k, secretValue: expand(f, f[k]!, on), secretPath: fp, type: 'shared', version: 1, environment: project.environment, workspace: project.slug };
    };
    const named = /^\/v3\/secrets\/raw\/([^/]+)$/.exec(p);
    if (named) {
      const name = decodeURIComponent(named[1]!);
      const from = [path, ...imported].find((fp) => Object.hasOwn(project.folders[fp] ?? {}, name));
      return from ? json(res, 200, { secret: raw(from, name) }) : fail(res, 404, `Secret with name '${name}' not found`);
    }
    const paths = q.get('recursive') === 'true' ? Object.keys(project.folders).filter((f) => f === path || f.startsWith(path === '/' ? '/' : `${path}/`)) : [path];
    json(res, 200, {
      secrets: paths.flatMap((fp) => Object.keys(project.folders[fp]!).map((k) => raw(fp, k))),
      imports: imported.map((ip) => ({ secretPath: ip, environment: project.environment, secrets: Object.keys(project.folders[ip] ?? {}).map((k) => raw(ip, k)) })),
    });
  };
  const projectId = project.id ?? `proj-${project.slug}`;
  const write = (method: string, p: string, b: Record<string, string>, res: ServerResponse) => {
    const name = decodeURIComponent(p.slice('/v3/secrets/raw/'.length));
    if (b.workspaceId !== projectId) return fail(res, 404, `Project with id '${b.workspaceId}' not found`);
    if (b.environment !== project.environment) return fail(res, 404, 'Environment not found');
    const path = b.secretPath ?? '/';
    const folder = project.folders[path];
    if (!folder) return fail(res, 404, `Folder with path '${path}' not found`);
    const exists = Object.hasOwn(folder, name);
    if (method === 'POST' && exists) return fail(res, 400, 'Secret already exist');
    if (method !== 'POST' && !exists) return fail(res, 404, `Secret with name '${name}' not found`);
    if (method === 'DELETE') delete folder[name];
    else folder[name] = String(b.secretValue);
    json(res, 200, { secret: { secretKey: name, secretPath: path, environment: project.environment, workspace: projectId, type: 'shared' } });
  };
  const srv = await serve(t, (req, res, body) => {
    const u = new URL(req.url!, 'http://x');
    const p = u.pathname.replace(/^\/api/, '');
    let b: Record<string, string> = {};
    try {
      b = JSON.parse(body || '{}') as Record<string, string>;
    } catch { /* an empty body */ }
    if (req.method === 'POST' && login(p, b, res)) return;
    const auth = req.headers.authorization?.replace(/^Bearer /, '') ?? '';
    const until = tokens.get(auth);
    if (until === undefined || until < Date.now()) return fail(res, 401, 'Token missing or expired');
    if (req.method === 'POST' && p === '/v1/auth/token/revoke') {
      tokens.delete(b.accessToken ?? '');
      state.revoked.push(b.accessToken ?? '');
      return json(res, 200, { message: 'Successfully revoked access token' });
    }
    if (req.method === 'GET' && p === `/v1/projects/slug/${project.slug}`) return json(res, 200, { id: projectId, slug: project.slug, name: project.slug });
    if (req.method === 'GET' && p.startsWith('/v3/secrets/raw')) return secrets(p, u.searchParams, res);
    if (['POST', 'PATCH', 'DELETE'].includes(req.method!) && p.startsWith('/v3/secrets/raw/')) return write(req.method!, p, b, res);
    fail(res, 404, 'Route not found');
  });
  // A getter, so the count read after the calls is the current one.
  return Object.defineProperties(srv, { logins: { get: () => state.logins }, revoked: { value: state.revoked } }) as InfisicalStandIn;
}
