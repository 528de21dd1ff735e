// The apiserver as an OIDC issuer of service-account tokens, for stand-ins of cloud token
// services (GCP STS, the EKS Pod Identity agent) that verify a token as the real ones do:
// signature against the issuer's JWKS, issuer, audience, expiry.
import { createPublicKey, createVerify, type JsonWebKey } from 'node:crypto';
import { request as httpsRequest } from 'node:https';

export interface Jwks {
  keys: (JsonWebKey & { kid?: string })[];
}

/** GET a path of the apiserver (discovery document, JWKS) as the admin. */
export function apiserverGetJson(cp: { server: string; token: string; caPem: string }, path: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    httpsRequest(`${cp.server}${path}`, { headers: { authorization: `Bearer ${cp.token}` }, ca: cp.caPem }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d));
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body)) : reject(new Error(`${path}: ${res.statusCode}`))));
    }).on('error', reject).end();
  });
}

/** The issuer and its signing keys. */
export async function apiserverIssuer(cp: { server: string; token: string; caPem: string }): Promise<{ issuer: string; jwks: Jwks }> {
  const { issuer } = (await apiserverGetJson(cp, '/.well-known/openid-configuration')) as { issuer: string };
  return { issuer, jwks: (await apiserverGetJson(cp, '/openid/v1/jwks')) as Jwks };
}

/** The claims of a valid token, or why it is refused. */
export function verifyJwt(token: string, jwks: Jwks, issuer: string, audience: string): Record<string, unknown> | string {
  const [h, p, s] = token.split('.');
  if (!h || !p || !s) return 'not a JWT';
  const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as { alg?: string; kid?: string };
  const jwk = jwks.keys.find((k) => k.kid === header.kid);
  if (header.alg !== 'RS256' || !jwk) return 'unknown key';
  if (!createVerify('RSA-SHA256').update(`${h}.${p}`).verify(createPublicKey({ key: jwk, format: 'jwk' }), Buffer.from(s, 'base64url'))) return 'bad signature';
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
  if (claims.iss !== issuer) return 'wrong issuer';
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!aud.includes(audience)) return 'wrong audience';
  if (typeof claims.exp !== 'number' || claims.exp * 1000 < Date.now()) return 'expired';
  return claims;
}
