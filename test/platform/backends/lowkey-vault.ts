// The Azure Key Vault backend of the azurekv tests, on 127.0.0.1 and free ports.
//
// Which vault runs:
//  - lowkey-vault (nagyesta's Key Vault API test double, an executable Spring Boot jar)
//    when lowkey-vault-install.sh could fetch it, or ESI_LOWKEY_VAULT_JAR names one. The
//    Maven Central reachable from this machine does not carry lowkey-vault-app, so here
//    that path has never run: it is written from lowkey-vault's documentation (Spring
//    Boot `server.*` options, `--LOWKEY_VAULT_NAMES`, its PKCS#12 keystore options).
//    lowkey-vault accepts any bearer token, so `enforcesAuth` is false with it;
//  - otherwise ESI's stand-in below: an HTTPS server of the Key Vault *secrets* REST API
//    as Microsoft documents it (secret bundles and ids, versions, tags, paging with
//    nextLink, soft delete with the deleted-secret endpoints and purge, the 401 bearer
//    challenge, 403 by access policy, 404/409 error bodies). It is a test double written
//    here, not Microsoft's service: GAPS lists what it does not model.
//
// In both cases the tokens come from a local stand-in of the Entra ID token endpoint
// (`authorityHost`, HTTPS: OpenID configuration + `/oauth2/v2.0/token` with client
// secrets, certificate assertions (RS256/PS256 checked against the registered
// certificate) and federated credentials: a Kubernetes service-account token verified
// against the real apiserver's JWKS, issuer, subject and audience, as Entra ID verifies a
// federated identity credential) and of IMDS (`imdsHost`, HTTP, the managed-identity
// token endpoint). No real Entra ID exists locally: these exist so the SDK's real token
// flows run end to end, and record what they received for the tests to assert on.
//
// TLS: a CA made for each start (openssl) signs the servers' certificates for 127.0.0.1;
// clients trust it explicitly (the provider through ESI_AZUREKV_CA_FILE).
// The stand-in runs in the test process (it stops with it); lowkey-vault runs as a child
// process under coreutils `timeout`, so it stops by itself if the test process dies.
import { spawn, execFile } from 'node:child_process';
import {
  constants as cryptoConstants, createHash, createHmac, createPublicKey, randomBytes, randomUUID, timingSafeEqual,
  verify as verifySignature, X509Certificate, type JsonWebKey,
} from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../control-plane-process.js';

const run = promisify(execFile);
const HERE = import.meta.dirname;

/** What the stand-in vault does not model (tests name these where it matters). */
export const GAPS = {
  objects: 'secrets only: no keys, certificates, managed HSM, backup/restore or recover',
  policy: 'access policies only (get/list/set/delete/purge per principal), no Azure RBAC role assignments, no network rules',
  tokens: 'tokens are HMAC-signed by the local token endpoint; no Conditional Access / CAE claims challenges',
} as const;

export type Permission = 'get' | 'list' | 'set' | 'delete' | 'purge';
export const ALL_PERMISSIONS: Permission[] = ['get', 'list', 'set', 'delete', 'purge'];
export const KEY_VAULT_RESOURCE = 'https://vault.azure.net';

export interface ServicePrincipal {
  clientId: string;
  /** Client secret, or… */
  secret?: string;
  /** …the PEM of the certificate whose key signs the client assertion. */
  certificatePem?: string;
}

/** A federated identity credential of an app registration (workload identity). */
export interface FederatedCredential {
  clientId: string;
  issuer: string;
  subject: string;
  audience: string;
  /** Signing keys of the issuer (the apiserver's `/openid/v1/jwks`). */
  jwks: () => Promise<{ keys: Record<string, unknown>[] }>;
}

/** A token request the stand-in token endpoints answered (or refused), for assertions. */
export interface TokenRequestRecord {
  endpoint: 'entra' | 'imds';
  tenant?: string;
  clientId?: string;
  grant?: string;
  /** `secret`, `certificate`, `federated`, `managed-identity`. */
  method: string;
  scope?: string;
  granted: boolean;
  reason?: string;
}

export interface KeyVaultBackend {
  impl: 'lowkey-vault' | 'stand-in';
  /** For test names: e.g. "lowkey-vault 7.1.13" or "ESI Key Vault API stand-in". */
  label: string;
  /** `https://127.0.0.1:<port>` */
  vaultUrl: string;
  tenantId: string;
  /** Whether the vault checks tokens and access policies (lowkey-vault does not). */
  enforcesAuth: boolean;
  caPem: string;
  caFile: string;
  /** `https://127.0.0.1:<port>`: the token endpoint stand-in (AZURE_AUTHORITY_HOST). */
  authorityHost: string;
  /** `http://127.0.0.1:<port>`: the IMDS stand-in (AZURE_POD_IDENTITY_AUTHORITY_HOST). */
  imdsHost: string;
  /** A service principal allowed everything, for seeding. */
  admin: Required<Pick<ServicePrincipal, 'clientId' | 'secret'>>;
  addServicePrincipal(sp: ServicePrincipal, permissions: Permission[]): void;
  /** Registers a managed identity (the first one is the system-assigned one). */
  addManagedIdentity(clientId: string, permissions: Permission[]): void;
  addFederatedCredential(fc: FederatedCredential, permissions: Permission[]): void;
  /** Environment the provider needs to reach this backend (trust, allowed host, authority). */
  env(): Record<string, string>;
  tokenRequests: TokenRequestRecord[];
  /** Number of Key Vault data-plane requests served so far (for no-value-read checks). */
  requests(): { method: string; path: string; status: number }[];
  stop(): Promise<void>;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

// ---------------------------------------------------------------- TLS material

export interface TestTls {
  dir: string;
  caPem: string;
  caFile: string;
  certPem: string;
  keyPem: string;
}

async function openssl(dir: string, args: string[]): Promise<void> {
  try {
    await run('openssl', args, { cwd: dir });
  } catch (err) {
    throw new Error(`openssl ${args[0]} failed (is openssl installed?): ${(err as Error).message}`, { cause: err });
  }
}

/** A throwaway CA and a server certificate for 127.0.0.1/localhost signed by it. */
export async function makeTestTls(): Promise<TestTls> {
  const dir = await mkdtemp(join(tmpdir(), 'esi-azurekv-tls-'));
  await writeFile(join(dir, 'server.ext'), [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage=serverAuth',
    'subjectAltName=IP:127.0.0.1,DNS:localhost',
    '',
  ].join('\n'));
  await openssl(dir, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key',
    '-out', 'ca.crt', '-days', '2', '-subj', '/CN=ESI azurekv test CA',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  await openssl(dir, ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'server.key',
    '-out', 'server.csr', '-subj', '/CN=127.0.0.1']);
  await openssl(dir, ['x509', '-req', '-in', 'server.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', `0x${randomBytes(8).toString('hex')}`,
    '-out', 'server.crt', '-days', '2', '-extfile', 'server.ext']);
  return {
    dir,
    caPem: await readFile(join(dir, 'ca.crt'), 'utf8'),
    caFile: join(dir, 'ca.crt'),
    certPem: await readFile(join(dir, 'server.crt'), 'utf8'),
    keyPem: await readFile(join(dir, 'server.key'), 'utf8'),
  };
}

/** A self-signed RSA certificate + key (one PEM) for certificate client credentials. */
export async function makeClientCertificate(cn: string): Promise<{ pem: string; certPem: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'esi-azurekv-client-'));
  try {
    await openssl(dir, ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'c.key', '-out', 'c.crt', '-days', '2', '-subj', `/CN=${cn}`]);
    const certPem = await readFile(join(dir, 'c.crt'), 'utf8');
    return { pem: `${certPem}${await readFile(join(dir, 'c.key'), 'utf8')}`, certPem };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- small helpers

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');
const nowS = () => Math.floor(Date.now() / 1000);

function decodeJwt(token: string): { header: Record<string, unknown>; payload: Record<string, unknown>; signed: string; sig: Buffer } | undefined {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    return {
      header: JSON.parse(Buffer.from(parts[0]!, 'base64url').toString('utf8')) as Record<string, unknown>,
      payload: JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as Record<string, unknown>,
      signed: `${parts[0]}.${parts[1]}`,
      sig: Buffer.from(parts[2]!, 'base64url'),
    };
  } catch {
    return undefined;
  }
}

function send(res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}): void {
  const text = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { ...(text ? { 'content-type': 'application/json; charset=utf-8' } : {}), 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

// ---------------------------------------------------------------- identities and tokens

interface Identity {
  permissions: Set<Permission>;
}

/** The token side shared by both vault implementations: app registrations, managed
 *  identities, federated credentials; issues HMAC-signed JWT access tokens. */
class Directory {
  readonly key = randomBytes(32);
  readonly sps = new Map<string, ServicePrincipal>();
  readonly mis: string[] = [];
  readonly federated = new Map<string, FederatedCredential>();
  readonly identities = new Map<string, Identity>();
  readonly records: TokenRequestRecord[] = [];

  constructor(readonly tenantId: string) {}

  issue(clientId: string, resource: string): { token: string; expiresIn: number } {
    const iat = nowS();
    const expiresIn = 3600;
    const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
    const payload = b64url(JSON.stringify({
      aud: resource, iss: `https://sts.windows.net/${this.tenantId}/`, tid: this.tenantId, appid: clientId,
      oid: createHash('sha256').update(clientId).digest('hex').slice(0, 32), idtyp: 'app', iat, nbf: iat, exp: iat + expiresIn,
    }));
    const sig = b64url(createHmac('sha256', this.key).update(`${header}.${payload}`).digest());
    return { token: `${header}.${payload}.${sig}`, expiresIn };
  }

  /** The client id a vault access token belongs to, or why it is refused. */
  check(token: string): { clientId?: string; error?: string } {
    const jwt = decodeJwt(token);
    if (!jwt) return { error: 'AKV10022: Invalid token' };
    const expected = createHmac('sha256', this.key).update(jwt.signed).digest();
    if (jwt.sig.length !== expected.length || !timingSafeEqual(jwt.sig, expected)) return { error: 'AKV10032: Invalid issuer or signature' };
    const aud = String(jwt.payload.aud ?? '').replace(/\/$/, '');
    if (aud !== KEY_VAULT_RESOURCE) return { error: `AKV10022: Invalid audience` };
    if (jwt.payload.tid !== this.tenantId) return { error: 'AKV10032: Invalid issuer (tenant)' };
    if (typeof jwt.payload.exp !== 'number' || jwt.payload.exp < nowS()) return { error: 'AKV10000: Token expired' };
    return { clientId: String(jwt.payload.appid) };
  }
}

/** Scope `https://vault.azure.net/.default` → resource `https://vault.azure.net`. */
function resourceOfScope(scope: string | undefined): string | undefined {
  const first = (scope ?? '').split(' ').find((s) => s.endsWith('/.default'));
  return first?.slice(0, -'/.default'.length);
}

function verifyCertificateAssertion(assertion: string, sp: ServicePrincipal, audience: string): string | undefined {
  const jwt = decodeJwt(assertion);
  if (!jwt) return 'AADSTS50027: JWT token is invalid or malformed';
  const key = new X509Certificate(sp.certificatePem!).publicKey;
  const alg = jwt.header.alg;
  const ok = alg === 'PS256'
    ? verifySignature('sha256', Buffer.from(jwt.signed), { key, padding: cryptoConstants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }, jwt.sig)
    : alg === 'RS256' && verifySignature('sha256', Buffer.from(jwt.signed), key, jwt.sig);
  if (!ok) return 'AADSTS700027: Client assertion contains an invalid signature';
  const p = jwt.payload;
  if (p.iss !== sp.clientId || p.sub !== sp.clientId) return 'AADSTS700023: Client assertion issuer/subject mismatch';
  if (p.aud !== audience) return 'AADSTS700016: Client assertion audience is not the token endpoint';
  if (typeof p.exp !== 'number' || p.exp < nowS()) return 'AADSTS700024: Client assertion is not within its valid time range';
  return undefined;
}

async function verifyFederatedAssertion(assertion: string, fc: FederatedCredential): Promise<string | undefined> {
  const jwt = decodeJwt(assertion);
  if (!jwt) return 'AADSTS50027: JWT token is invalid or malformed';
  if (jwt.header.alg !== 'RS256') return 'AADSTS700211: unsupported assertion algorithm';
  const { keys } = await fc.jwks();
  const jwk = keys.find((k) => k.kid === jwt.header.kid) ?? (keys.length === 1 ? keys[0] : undefined);
  if (!jwk) return 'AADSTS700211: No matching signing key for the assertion';
  const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
  if (!verifySignature('sha256', Buffer.from(jwt.signed), key, jwt.sig)) return 'AADSTS700211: Assertion signature is invalid';
  const p = jwt.payload;
  if (p.iss !== fc.issuer) return `AADSTS700211: No matching federated identity record found for presented assertion issuer`;
  if (p.sub !== fc.subject) return `AADSTS70021: No matching federated identity record found for presented assertion subject`;
  const aud = Array.isArray(p.aud) ? p.aud : [p.aud];
  if (!aud.includes(fc.audience)) return 'AADSTS700212: No matching federated identity record found for presented assertion audience';
  if (typeof p.exp !== 'number' || p.exp < nowS()) return 'AADSTS700024: Client assertion is not within its valid time range';
  return undefined;
}

/** Client authentication of a token request: why it is refused, or undefined. */
async function authenticateClient(dir: Directory, form: URLSearchParams, record: TokenRequestRecord, tokenEndpoint: string): Promise<string | undefined> {
  const clientId = form.get('client_id') ?? '';
  const sp = dir.sps.get(clientId);
  const fc = dir.federated.get(clientId);
  const assertion = form.get('client_assertion');
  if (form.get('client_secret') !== null) {
    record.method = 'secret';
    if (!sp?.secret) return 'AADSTS700016: Application not found in the directory';
    const given = Buffer.from(form.get('client_secret')!);
    const want = Buffer.from(sp.secret);
    return given.length !== want.length || !timingSafeEqual(given, want) ? 'AADSTS7000215: Invalid client secret provided' : undefined;
  }
  if (!assertion || form.get('client_assertion_type') !== 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer') {
    return 'AADSTS7000216: client_assertion, client_secret or request is required';
  }
  record.method = fc ? 'federated' : 'certificate';
  if (fc) return verifyFederatedAssertion(assertion, fc);
  if (sp?.certificatePem) return verifyCertificateAssertion(assertion, sp, tokenEndpoint);
  return 'AADSTS700016: Application not found in the directory';
}

/** The Entra ID token endpoint stand-in (client credentials grant). */
async function entraRoute(dir: Directory, base: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', base);
  const m = /^\/([^/]+)\/(v2\.0\/\.well-known\/openid-configuration|oauth2\/v2\.0\/token)$/.exec(url.pathname);
  if (!m) return send(res, 404, { error: 'not_found' });
  const tenant = m[1]!;
  const tenantBase = `${base}/${tenant}`;
  if (m[2]!.startsWith('v2.0')) {
    return send(res, 200, {
      token_endpoint: `${tenantBase}/oauth2/v2.0/token`, authorization_endpoint: `${tenantBase}/oauth2/v2.0/authorize`,
      device_authorization_endpoint: `${tenantBase}/oauth2/v2.0/devicecode`, end_session_endpoint: `${tenantBase}/oauth2/v2.0/logout`,
      issuer: `${tenantBase}/v2.0`, jwks_uri: `${tenantBase}/discovery/v2.0/keys`,
      token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt'], response_types_supported: ['code', 'token'],
      subject_types_supported: ['pairwise'], id_token_signing_alg_values_supported: ['RS256'], scopes_supported: ['openid'],
      tenant_region_scope: 'EU', cloud_instance_name: 'esi.local', cloud_graph_host_name: 'graph.esi.local', msgraph_host: 'graph.esi.local',
    });
  }
  if (req.method !== 'POST') return send(res, 405, { error: 'invalid_request' });
  const form = new URLSearchParams(await readBody(req));
  const clientId = form.get('client_id') ?? '';
  const record: TokenRequestRecord = { endpoint: 'entra', tenant, clientId, grant: form.get('grant_type') ?? '', method: 'none', scope: form.get('scope') ?? '', granted: false };
  dir.records.push(record);
  const refuse = (status: number, error: string, reason: string) => {
    record.reason = reason;
    send(res, status, { error, error_description: `${reason}\r\nTrace ID: ${randomUUID()}`, error_codes: [Number(/AADSTS(\d+)/.exec(reason)?.[1] ?? 0)], timestamp: new Date().toISOString() });
  };
  if (tenant !== dir.tenantId) return refuse(400, 'invalid_tenant', `AADSTS90002: Tenant '${tenant}' not found`);
  if (record.grant !== 'client_credentials') return refuse(400, 'unsupported_grant_type', 'AADSTS70003: unsupported grant type');
  const resource = resourceOfScope(record.scope);
  if (!resource) return refuse(400, 'invalid_scope', 'AADSTS1002012: The provided value for scope is not valid (a /.default scope is required)');
  const problem = await authenticateClient(dir, form, record, `${tenantBase}/oauth2/v2.0/token`);
  if (problem) return refuse(401, 'invalid_client', problem);
  const { token, expiresIn } = dir.issue(clientId, resource);
  record.granted = true;
  send(res, 200, { token_type: 'Bearer', expires_in: expiresIn, ext_expires_in: expiresIn, access_token: token });
}

/** The IMDS managed-identity token endpoint stand-in. */
function imdsRoute(dir: Directory, req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  // The SDKs send the token path with and without a trailing slash; IMDS takes both.
  if (url.pathname.replace(/\/$/, '') !== '/metadata/identity/oauth2/token') return send(res, 404, { error: 'not_found' });
  const clientId = url.searchParams.get('client_id') ?? dir.mis[0];
  const record: TokenRequestRecord = { endpoint: 'imds', ...(clientId ? { clientId } : {}), method: 'managed-identity', scope: url.searchParams.get('resource') ?? '', granted: false };
  dir.records.push(record);
  const refuse = (status: number, error: string, reason: string) => {
    record.reason = reason;
    send(res, status, { error, error_description: reason });
  };
  if (req.headers.metadata !== 'true') return refuse(400, 'invalid_request', 'Required metadata header not specified');
  if (!url.searchParams.get('api-version')) return refuse(400, 'invalid_request', 'api-version is required');
  const resource = (url.searchParams.get('resource') ?? '').replace(/\/$/, '');
  if (!resource) return refuse(400, 'invalid_request', 'resource is required');
  if (!clientId || !dir.mis.includes(clientId)) return refuse(400, 'invalid_request', 'Identity not found');
  const { token, expiresIn } = dir.issue(clientId, resource);
  record.granted = true;
  const now = nowS();
  send(res, 200, {
    access_token: token, client_id: clientId, expires_in: String(expiresIn), expires_on: String(now + expiresIn),
    ext_expires_in: String(expiresIn), not_before: String(now), resource, token_type: 'Bearer',
  });
}

// ---------------------------------------------------------------- the vault stand-in

interface Version {
  version: string;
  value: string;
  contentType?: string;
  tags: Record<string, string>;
  enabled: boolean;
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

class VaultStandIn {
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
      attributes: { enabled: v.enabled, created: v.created, updated: v.updated, recoveryLevel: this.opts.purgeProtection ? 'Recoverable' : 'Recoverable+Purgeable', recoverableDays: RETENTION_DAYS },
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
    let p: { value?: unknown; tags?: Record<string, string>; contentType?: string; attributes?: { enabled?: boolean } };
    try {
      p = JSON.parse(body) as typeof p;
    } catch {
      return this.error(res, 400, 'BadParameter', 'The request body is not valid JSON');
    }
    if (typeof p.value !== 'string') return this.error(res, 400, 'BadParameter', 'Property value is required');
    const now = nowS();
    const v: Version = { version: randomBytes(16).toString('hex'), value: p.value, tags: p.tags ?? {}, enabled: p.attributes?.enabled ?? true, created: now, updated: now, ...(p.contentType ? { contentType: p.contentType } : {}) };
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

// ---------------------------------------------------------------- lowkey-vault (real, when available)

function pinnedLowkeyVersion(): string {
  const m = /^LOWKEY_VAULT_VERSION=(\S+)$/m.exec(readFileSync(join(HERE, 'lowkey-vault-install.sh'), 'utf8'));
  if (!m?.[1]) throw new Error('lowkey-vault-install.sh does not pin LOWKEY_VAULT_VERSION');
  return m[1];
}

/** The lowkey-vault jar to run, if there is one (ESI_LOWKEY_VAULT_JAR or the install cache). */
export function lowkeyVaultJar(): { path: string; version: string } | undefined {
  if (process.env.ESI_LOWKEY_VAULT_JAR) return { path: process.env.ESI_LOWKEY_VAULT_JAR, version: 'ESI_LOWKEY_VAULT_JAR' };
  const version = pinnedLowkeyVersion();
  const path = join(process.env.ESI_CACHE ?? join(homedir(), '.cache', 'esi'), 'lowkey-vault', `lowkey-vault-app-${version}.jar`);
  return existsSync(path) ? { path, version } : undefined;
}

/** The newest JDK under /usr/lib/jvm (lowkey-vault 7.x is built for Java 25), or `java`. */
function javaBinary(): string {
  if (process.env.ESI_LOWKEY_JAVA) return process.env.ESI_LOWKEY_JAVA;
  try {
    const jdks = readdirSync('/usr/lib/jvm')
      .map((d) => ({ d, major: Number(/(\d+)/.exec(d)?.[1] ?? 0) }))
      .filter(({ d }) => existsSync(join('/usr/lib/jvm', d, 'bin', 'java')))
      .sort((a, b) => b.major - a.major);
    if (jdks[0]) return join('/usr/lib/jvm', jdks[0].d, 'bin', 'java');
  } catch {
    // No /usr/lib/jvm: fall back to PATH.
  }
  return 'java';
}

function httpsAnswers(url: string, ca: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpsRequest(url, { ca, timeout: 2000 }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

async function startLowkeyVault(jar: { path: string; version: string }, tls: TestTls): Promise<{ url: string; stop: () => Promise<void> }> {
  // lowkey-vault serves TLS from a PKCS#12 keystore: ours, so the CA is known.
  await openssl(tls.dir, ['pkcs12', '-export', '-in', 'server.crt', '-inkey', 'server.key', '-out', 'server.p12', '-passout', 'pass:changeit', '-name', 'lowkey-vault']);
  const port = await freePort();
  const log = join(tls.dir, 'lowkey-vault.log');
  const { openSync } = await import('node:fs');
  const out = openSync(log, 'a');
  const child = spawn('timeout', ['1200', javaBinary(), '-Xmx256m', '-jar', jar.path,
    '--server.address=127.0.0.1', `--server.port=${port}`,
    `--server.ssl.key-store=${join(tls.dir, 'server.p12')}`, '--server.ssl.key-store-type=PKCS12', '--server.ssl.key-store-password=changeit',
    // The default vaults are auto-registered (https://127.0.0.1:<port> among them). The
    // challenge's resource is set to Key Vault's, as the token endpoint stand-in and the
    // provider expect. Untested here: lowkey-vault's challenge must also name a tenant
    // the credential accepts (its documentation does not say which it sends).
    '--LOWKEY_AUTH_RESOURCE=vault.azure.net',
  ], { stdio: ['ignore', out, out] });
  const url = `https://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  while (!(await httpsAnswers(`${url}/ping`, tls.caPem))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`lowkey-vault did not start (see ${log}): ${readFileSync(log, 'utf8').slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return {
    url,
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

// ---------------------------------------------------------------- start

export interface StartOptions {
  /** Listing page size of the stand-in (Azure's is 25; smaller exercises nextLink). */
  pageSize?: number;
  /** Purge protection on the stand-in vault (purge is then refused with 403). */
  purgeProtection?: boolean;
  /** Use the stand-in even when a lowkey-vault jar is available. */
  forceStandIn?: boolean;
}

/** Starts the vault (lowkey-vault when available, else the stand-in) with the token
 *  endpoint and IMDS stand-ins; stops everything on teardown. */
export async function startKeyVault(t: Teardown, opts: StartOptions = {}): Promise<KeyVaultBackend> {
  const tls = await makeTestTls();
  const tenantId = randomUUID();
  const dir = new Directory(tenantId);
  const stops: (() => Promise<void>)[] = [() => rm(tls.dir, { recursive: true, force: true })];
  const stopAll = async () => {
    for (const s of stops.splice(0).reverse()) await s().catch(() => undefined);
  };
  t.teardown(stopAll);

  let authorityHost = '';
  const sts = createHttpsServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    entraRoute(dir, authorityHost, req, res).catch(() => send(res, 500, { error: 'server_error' }));
  });
  authorityHost = `https://127.0.0.1:${await listen(sts)}`;
  stops.push(() => close(sts));
  const imds = createHttpServer((req, res) => imdsRoute(dir, req, res));
  const imdsHost = `http://127.0.0.1:${await listen(imds)}`;
  stops.push(() => close(imds));

  const jar = opts.forceStandIn ? undefined : lowkeyVaultJar();
  let vaultUrl: string;
  let label: string;
  let standIn: VaultStandIn | undefined;
  if (jar) {
    const lk = await startLowkeyVault(jar, tls);
    stops.push(lk.stop);
    vaultUrl = lk.url;
    label = `lowkey-vault ${jar.version}`;
  } else {
    let base = '';
    standIn = new VaultStandIn(dir, () => base, () => authorityHost, { pageSize: opts.pageSize ?? 25, purgeProtection: opts.purgeProtection ?? false });
    const vault = createHttpsServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
      standIn!.handle(req, res).catch(() => send(res, 500, { error: { code: 'InternalServerError', message: 'stand-in failure' } }));
    });
    base = `https://127.0.0.1:${await listen(vault)}`;
    stops.push(() => close(vault));
    vaultUrl = base;
    label = 'ESI Key Vault API stand-in';
  }

  const grant = (clientId: string, permissions: Permission[]) => dir.identities.set(clientId, { permissions: new Set(permissions) });
  const admin = { clientId: randomUUID(), secret: randomBytes(24).toString('base64url') };
  dir.sps.set(admin.clientId, admin);
  grant(admin.clientId, ALL_PERMISSIONS);
  return {
    impl: jar ? 'lowkey-vault' : 'stand-in',
    label,
    vaultUrl,
    tenantId,
    enforcesAuth: !jar,
    caPem: tls.caPem,
    caFile: tls.caFile,
    authorityHost,
    imdsHost,
    admin,
    addServicePrincipal: (sp, permissions) => {
      dir.sps.set(sp.clientId, sp);
      grant(sp.clientId, permissions);
    },
    addManagedIdentity: (clientId, permissions) => {
      dir.mis.push(clientId);
      grant(clientId, permissions);
    },
    addFederatedCredential: (fc, permissions) => {
      dir.federated.set(fc.clientId, fc);
      grant(fc.clientId, permissions);
    },
    env: () => ({
      ESI_AZUREKV_CA_FILE: tls.caFile,
      ESI_AZUREKV_ALLOWED_VAULT_HOSTS: '127.0.0.1',
      AZURE_AUTHORITY_HOST: authorityHost,
      AZURE_POD_IDENTITY_AUTHORITY_HOST: imdsHost,
    }),
    tokenRequests: dir.records,
    requests: () => standIn?.log ?? [],
    stop: stopAll,
  };
}
