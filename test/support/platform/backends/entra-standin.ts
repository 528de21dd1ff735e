// The Entra ID side of the azurekv backend (see lowkey-vault.ts): app registrations,
// managed identities and federated credentials (Directory), the token endpoint stand-in
// (`authorityHost`: OpenID configuration + `/oauth2/v2.0/token` with client secrets,
// certificate assertions and federated credentials) and the IMDS managed-identity token
// endpoint stand-in (`imdsHost`). Both record what they received for the tests.
import {
  constants as cryptoConstants, createHash, createHmac, createPublicKey, randomBytes, randomUUID, timingSafeEqual,
  verify as verifySignature, X509Certificate, type JsonWebKey,
} from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { b64url, decodeJwt, nowS, readBody, send } from './standin-http.js';

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

// ---------------------------------------------------------------- identities and tokens

interface Identity {
  permissions: Set<Permission>;
}

/** The token side shared by both vault implementations: app registrations, managed
 *  identities, federated credentials; issues HMAC-signed JWT access tokens. */
export class Directory {
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
export async function entraRoute(dir: Directory, base: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
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
export function imdsRoute(dir: Directory, req: IncomingMessage, res: ServerResponse): void {
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
