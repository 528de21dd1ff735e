// ESO's pemTruststoreToPKCS12 and pemTruststoreToPKCS12Pass (test/templating/go-oracle/
// eso_helpers.go): PEM certificates as a base64 PKCS#12 trust store, built as go-pkcs12
// v0.5.0's Modern EncodeTrustStore builds it: one PBES2-encrypted SafeContents of
// certificate bags, each marked trusted for any extended key usage (Java's trust store
// attribute) and named by its subject in Go's pkix.Name.String() form, and the same MAC as
// the key archives (eso-pkcs12-encode.ts). A subject this port cannot word as Go does
// (attributes beyond C, ST, L, STREET, POSTALCODE, O, OU, CN, SERIALNUMBER, or values not
// held as Printable, UTF-8 or IA5 strings) is refused.
import { X509Certificate } from 'node:crypto';
import { ExecFailure, Unsupported } from './errors.js';
import type { GoFunc } from './exec.js';
import { certInfo, derAt, derChildren } from './der.js';
import { byteString, pemDecode } from './eso-pem.js';
import { archive, explicit0, int, octets, oid, pbes2, seq, set, tlv } from './eso-pkcs12-encode.js';
import { OID, swap } from './eso-pkcs12.js';
import type { Value } from './values.js';

const OID_JAVA_TRUST_STORE = '6086480186f966adca7b0101';
const OID_ANY_EKU = '551d2500';
const OID_FRIENDLY_NAME = '2a864886f70d010914';
/** pkix.Name's fields, in ToRDNSequence's order (2.5.4.x). */
const ORDER: [number, string][] = [[6, 'C'], [8, 'ST'], [7, 'L'], [9, 'STREET'], [17, 'POSTALCODE'], [10, 'O'], [11, 'OU'], [3, 'CN'], [5, 'SERIALNUMBER']];
const STRING_TAGS = new Set([0x13, 0x0c, 0x16]);

/** RDNSequence.String's escaping of one value. */
function escape(v: string): string {
  const bytes = Buffer.byteLength(v);
  let out = '';
  let k = 0;
  for (const c of v) {
    const esc = ',+"\\<>;'.includes(c) || (c === ' ' && (k === 0 || k === bytes - 1)) || (c === '#' && k === 0);
    out += esc ? `\\${c}` : c;
    k += Buffer.byteLength(c);
  }
  return out;
}

/** pkix.Name.String() of a certificate's raw subject. */
export function goNameString(rawSubject: Buffer): string {
  const values = new Map<number, string[]>();
  for (const rdn of derChildren(derAt(rawSubject))) {
    for (const atv of derChildren(rdn)) {
      const [type, value] = derChildren(atv);
      const t = type!.content;
      if (t.length !== 3 || t[0] !== 0x55 || t[1] !== 0x04 || !ORDER.some(([n]) => n === t[2]) || !STRING_TAGS.has(value!.tag)) {
        throw new Unsupported('pemTruststoreToPKCS12 of a certificate subject beyond the common attributes');
      }
      values.set(t[2]!, [...(values.get(t[2]!) ?? []), value!.content.toString(value!.tag === 0x13 || value!.tag === 0x16 ? 'latin1' : 'utf8')]);
    }
  }
  const rdns = ORDER.filter(([n]) => values.has(n)).map(([n, name]) => values.get(n)!.map((v) => `${name}=${escape(v)}`).join('+'));
  return rdns.reverse().join(',');
}

function bmpName(s: string): Buffer {
  for (const c of s) if (c.codePointAt(0)! > 0xffff) throw new ExecFailure('error calling pemTruststoreToPKCS12: a subject outside the Basic Multilingual Plane');
  return swap(Buffer.from(s, 'utf16le'));
}

/** The oracle's loop: PEM blocks, every one a certificate, until only white space is left. */
function certsOf(input: Value): Buffer[] {
  const certs: Buffer[] = [];
  let rest = byteString(input);
  while (rest.replace(/^[\t\n\v\f\r ]+/, '').length > 0) {
    const [block, next] = pemDecode(rest);
    if (block === null) throw new ExecFailure('error calling pemTruststoreToPKCS12: the input holds something other than PEM certificates');
    rest = next;
    try {
      new X509Certificate(block.bytes);
      certInfo(block.bytes);
    } catch {
      throw new ExecFailure('error calling pemTruststoreToPKCS12: unable to parse a certificate');
    }
    certs.push(block.bytes);
  }
  return certs;
}

function trustStore(input: Value, pass: string): string {
  const trusted = seq(oid(OID_JAVA_TRUST_STORE), set(oid(OID_ANY_EKU)));
  const bags = certsOf(input).map((der) => {
    const name = seq(oid(OID_FRIENDLY_NAME), set(tlv(0x1e, bmpName(goNameString(certInfo(der).rawSubject)))));
    return seq(oid(OID.certBag), explicit0(seq(oid(OID.x509Cert), explicit0(octets(der)))), set(trusted, name));
  });
  const enc = pbes2(seq(...bags), pass);
  const info = seq(oid(OID.encryptedData), explicit0(seq(int(0), seq(oid(OID.data), enc.alg, tlv(0x80, enc.encrypted)))));
  return archive(seq(info), pass);
}

export const ESO_TRUSTSTORE: Record<string, GoFunc> = {
  pemTruststoreToPKCS12: { params: ['B'], fn: (s) => trustStore(s, '') },
  pemTruststoreToPKCS12Pass: { params: ['B', 's'], fn: (s, p) => trustStore(s, p as string) },
};
