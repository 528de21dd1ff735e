// Certificate generation (selfsigned) and inspection (node:crypto X509Certificate).
// Keys are ECDSA P-256: fast to generate on every replica start and accepted by the
// apiserver's Go TLS stack.
import { X509Certificate, createPrivateKey, randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import type { generate as Generate } from 'selfsigned';

/** selfsigned (and the @peculiar/x509, asn1js and tsyringe it loads) is loaded on the first
 *  certificate issued: a webhook whose certificates are mounted files (cert-manager), or a
 *  replica that reads what another one issued, only inspects certificates, which node:crypto
 *  does (docs/performance/webhook-memory.md). */
async function generate(...args: Parameters<typeof Generate>): ReturnType<typeof Generate> {
  const m = (await import('selfsigned')) as { generate?: typeof Generate; default?: { generate: typeof Generate } };
  return (m.generate ?? m.default!.generate)(...args);
}

export interface KeyPair {
  certPem: string;
  keyPem: string;
}

export interface ServingIdentity {
  dnsNames: string[];
  ips: string[];
}

/** A parsed certificate with the few facts rotation decisions need. */
export interface CertInfo {
  x509: X509Certificate;
  notBefore: number;
  notAfter: number;
  serial: string;
  subject: string;
}

const SIGNING = { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' } as const;

/**
 * Backdate notBefore a little so a peer whose clock is slightly behind still accepts a fresh
 * certificate; capped at a tenth of the lifetime so second-scale test lifetimes still work.
 */
function validityWindow(nowMs: number, lifetimeMs: number, notAfterCapMs?: number): { notBefore: Date; notAfter: Date } {
  const backdate = Math.min(5 * 60_000, Math.floor(lifetimeMs / 10));
  const notAfter = Math.min(nowMs + lifetimeMs, notAfterCapMs ?? Number.POSITIVE_INFINITY);
  return { notBefore: new Date(nowMs - backdate), notAfter: new Date(notAfter) };
}

/**
 * A new self-signed CA. Its CN carries a timestamp and random suffix (like kube's own
 * self-signed CAs) so the old and new CA of a rotation never share a subject: TLS stacks
 * pick issuer candidates by name, and identical names would make them try the wrong key.
 */
export async function generateCa(nowMs: number, lifetimeMs: number): Promise<KeyPair> {
  const cn = `esi-webhook-ca@${Math.floor(nowMs / 1000)}-${randomBytes(4).toString('hex')}`;
  const res = await generate([{ name: 'commonName', value: cn }], {
    ...SIGNING,
    ...dates(validityWindow(nowMs, lifetimeMs)),
    extensions: [
      { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  return { certPem: pemLine(res.cert), keyPem: pemLine(res.private) };
}

/**
 * selfsigned's PEM has no final newline; OpenSSL reads only the first certificate of a
 * bundle whose END and BEGIN lines run together, so every PEM we store ends with one.
 */
export function pemLine(pem: string): string {
  return pem.endsWith('\n') ? pem : `${pem}\n`;
}

/** A serving certificate for the identity, signed by ca, never outliving the CA. */
export async function issueServingCert(
  ca: KeyPair,
  identity: ServingIdentity,
  nowMs: number,
  lifetimeMs: number,
): Promise<KeyPair> {
  const caInfo = parseCert(ca.certPem);
  if (!caInfo) throw new Error('cannot issue a serving certificate: CA certificate does not parse');
  const cn = identity.dnsNames[0] ?? identity.ips[0] ?? 'esi-webhook';
  const altNames = [
    ...identity.dnsNames.map((value) => ({ type: 2 as const, value })),
    ...identity.ips.map((ip) => ({ type: 7 as const, ip })),
  ];
  const res = await generate([{ name: 'commonName', value: cn }], {
    ...SIGNING,
    ...dates(validityWindow(nowMs, lifetimeMs, caInfo.notAfter)),
    ca: { key: ca.keyPem, cert: ca.certPem },
    extensions: [
      { name: 'basicConstraints', cA: false, critical: true },
      { name: 'keyUsage', digitalSignature: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames },
    ],
  });
  return { certPem: pemLine(res.cert), keyPem: pemLine(res.private) };
}

function dates(w: { notBefore: Date; notAfter: Date }): { notBeforeDate: Date; notAfterDate: Date } {
  return { notBeforeDate: w.notBefore, notAfterDate: w.notAfter };
}

/** Parses the first certificate of a PEM string; undefined if it is not a certificate. */
export function parseCert(pem: string | undefined): CertInfo | undefined {
  if (!pem) return undefined;
  try {
    const x509 = new X509Certificate(pem);
    return {
      x509,
      notBefore: Date.parse(x509.validFrom),
      notAfter: Date.parse(x509.validTo),
      serial: x509.serialNumber,
      subject: x509.subject,
    };
  } catch {
    return undefined;
  }
}

/** Splits a PEM bundle into its certificates (each with BEGIN/END lines). */
export function splitPemBundle(bundle: string): string[] {
  const re = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;
  return (bundle.match(re) ?? []).map((c) => `${c}\n`);
}

/** True if keyPem is the private key for certPem's public key. */
export function keyMatchesCert(certPem: string, keyPem: string): boolean {
  try {
    return new X509Certificate(certPem).checkPrivateKey(createPrivateKey(keyPem));
  } catch {
    return false;
  }
}

/** True if cert's issuer name is ca's subject and ca's key really signed it. */
export function isSignedBy(cert: CertInfo, ca: CertInfo): boolean {
  return cert.x509.checkIssued(ca.x509) && cert.x509.verify(ca.x509.publicKey);
}

/** Fraction-of-lifetime test: has `ratio` of the certificate's validity elapsed at nowMs? */
export function isDue(cert: CertInfo, nowMs: number, ratio: number): boolean {
  return nowMs >= cert.notBefore + (cert.notAfter - cert.notBefore) * ratio;
}

/** True if the certificate's SANs are exactly the identity's (order-insensitive). */
export function hasIdentity(cert: CertInfo, identity: ServingIdentity): boolean {
  const want = [...identity.dnsNames.map((d) => `DNS:${d}`), ...identity.ips.map((ip) => `IP:${canonicalIp(ip)}`)];
  const have = (cert.x509.subjectAltName ?? '').split(',').map((s) => s.trim()).filter(Boolean)
    .map((s) => (s.startsWith('IP Address:') ? `IP:${canonicalIp(s.slice('IP Address:'.length))}` : s));
  return want.length === have.length && want.every((w) => have.includes(w));
}

/** OpenSSL prints IPv6 SANs uncompressed ("0:0:…:1"); compare IPs in one canonical form. */
function canonicalIp(ip: string): string {
  return isIP(ip) === 6 ? new URL(`http://[${ip}]/`).hostname : ip;
}

/** The service DNS names the apiserver may dial, plus extras (e.g. localhost for tests). */
export function servingIdentity(
  serviceName: string,
  namespace: string,
  extraDNS: string[] = [],
  extraIPs: string[] = [],
): ServingIdentity {
  const base = [serviceName, `${serviceName}.${namespace}`, `${serviceName}.${namespace}.svc`,
    `${serviceName}.${namespace}.svc.cluster.local`];
  for (const ip of extraIPs) {
    if (!isIP(ip)) throw new Error(`extraIPs: "${ip}" is not an IP address`);
  }
  return { dnsNames: [...new Set([...base, ...extraDNS])], ips: [...new Set(extraIPs)] };
}
