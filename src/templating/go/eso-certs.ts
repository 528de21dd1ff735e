// ESO's filterCertChain (test/support/templating/go-oracle/pem.go): the certificates of one role in
// a PEM chain, as Go's crypto/x509 sees them: leaf (no CA basic constraint), intermediate (a
// CA that is not self-signed) or root (a CA whose subject and issuer are the same bytes and
// whose signature verifies with its own key, under Go's CheckSignatureFrom rules: key usage
// allowing certificate signing when present, no SHA-1 or MD5 signature). node:crypto parses
// and verifies; asn1.ts reads the fields Go's decision rests on.
import { X509Certificate } from 'node:crypto';
import { ExecFailure } from './errors.js';
import type { GoFunc } from './exec.js';
import { certInfo, type CertInfo } from './asn1.js';
import { byteString, derToPem, pemDecode } from './eso-pem.js';
import { textOrBytes } from './sprig.js';
import type { Value } from './values.js';

/** The signature algorithms Go verifies (SHA-2 RSA PKCS#1 v1.5, RSA-PSS, SHA-2 ECDSA, Ed25519). */
const GO_SIGNATURES = new Set([
  '1.2.840.113549.1.1.11', '1.2.840.113549.1.1.12', '1.2.840.113549.1.1.13', '1.2.840.113549.1.1.10',
  '1.2.840.10045.4.3.2', '1.2.840.10045.4.3.3', '1.2.840.10045.4.3.4', '1.3.101.112',
]);
const KEY_USAGE_CERT_SIGN = 1 << 5;

interface Cert {
  der: Buffer;
  x509: X509Certificate;
  info: CertInfo;
}

/** The oracle's parseCerts: every block typed exactly CERTIFICATE, parsed; none is an error. */
export function parseCerts(fn: string, input: Value): Cert[] {
  const out: Cert[] = [];
  let rest = byteString(input);
  for (;;) {
    const [block, next] = pemDecode(rest);
    if (block === null) break;
    rest = next;
    if (block.type !== 'CERTIFICATE') continue;
    try {
      out.push({ der: block.bytes, x509: new X509Certificate(block.bytes), info: certInfo(block.bytes) });
    } catch {
      throw new ExecFailure(`error calling ${fn}: unable to parse a certificate`);
    }
  }
  if (out.length === 0) throw new ExecFailure(`error calling ${fn}: no PEM certificate found`);
  return out;
}

function selfSigned(c: Cert): boolean {
  if (!c.info.rawSubject.equals(c.info.rawIssuer)) return false;
  if (c.info.keyUsage !== 0 && (c.info.keyUsage & KEY_USAGE_CERT_SIGN) === 0) return false;
  if (!GO_SIGNATURES.has(c.info.signatureOid)) return false;
  try {
    return c.x509.verify(c.x509.publicKey);
  } catch {
    return false;
  }
}

const ROLES: Record<string, (c: Cert) => boolean> = {
  leaf: (c) => !c.info.isCA,
  intermediate: (c) => c.info.isCA && !selfSigned(c),
  root: (c) => c.info.isCA && selfSigned(c),
};

function filterCertChain(role: string, input: Value): Value {
  const certs = parseCerts('filterCertChain', input);
  const keep = ROLES[role];
  if (keep === undefined) throw new ExecFailure('error calling filterCertChain: certificate type must be leaf, intermediate or root');
  return textOrBytes(Buffer.from(certs.filter(keep).map((c) => derToPem('CERTIFICATE', c.der)).join(''), 'latin1'));
}

export const ESO_CERTS: Record<string, GoFunc> = {
  filterCertChain: { params: ['s', 'B'], fn: (r, s) => filterCertChain(r as string, s) },
};
