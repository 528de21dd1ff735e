// ESO's pemTruststoreToPKCS12 and pemTruststoreToPKCS12Pass (test/support/templating/go-oracle/
// eso_helpers.go): PEM certificates as a base64 PKCS#12 trust store in the layout of go-pkcs12
// v0.5.0's Modern EncodeTrustStore: one PBES2-encrypted SafeContents of certificate bags,
// each marked trusted for any extended key usage (Java's trust store attribute) and named by
// its subject in Go's pkix.Name.String() form, and the same MAC as the key archives
// (eso-pkcs12-encode.ts builds both). A subject this port cannot word as Go does (attributes
// beyond C, ST, L, STREET, POSTALCODE, O, OU, CN, SERIALNUMBER, or values not held as
// Printable, UTF-8 or IA5 strings) is refused.
import { X509Certificate } from 'node:crypto';
import { loadForge } from '../lazy.js';
import { buf, bytesOf, certInfo, children, fromDer, oidOf } from './asn1.js';
import { ExecFailure, Unsupported } from './errors.js';
import type { GoFunc } from './exec.js';
import { byteString, pemDecode } from './eso-pem.js';
import { certBag, der, encryptedSafe, pfx } from './eso-pkcs12-encode.js';
import type { Value } from './values.js';

const JAVA_TRUST_STORE = '2.16.840.1.113894.746875.1.1';
const ANY_EKU = '2.5.29.37.0';
const FRIENDLY_NAME = '1.2.840.113549.1.9.20';
/** pkix.Name's fields, in ToRDNSequence's order (2.5.4.x). */
const ORDER: [number, string][] = [[6, 'C'], [8, 'ST'], [7, 'L'], [9, 'STREET'], [17, 'POSTALCODE'], [10, 'O'], [11, 'OU'], [3, 'CN'], [5, 'SERIALNUMBER']];

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
  const { Type } = loadForge().asn1;
  const values = new Map<number, string[]>();
  for (const rdn of children(fromDer(rawSubject))) {
    for (const atv of children(rdn)) {
      const [type, value] = children(atv);
      const n = /^2\.5\.4\.(\d+)$/.exec(oidOf(type))?.[1];
      const known = n !== undefined && ORDER.some(([k]) => k === Number(n));
      const text = value?.type === Type.PRINTABLESTRING || value?.type === Type.IA5STRING ? 'latin1' : value?.type === Type.UTF8 ? 'utf8' : undefined;
      if (!known || text === undefined) throw new Unsupported('pemTruststoreToPKCS12 of a certificate subject beyond the common attributes');
      values.set(Number(n), [...(values.get(Number(n)) ?? []), buf(bytesOf(value)).toString(text)]);
    }
  }
  const rdns = ORDER.filter(([n]) => values.has(n)).map(([n, name]) => values.get(n)!.map((v) => `${name}=${escape(v)}`).join('+'));
  return rdns.reverse().join(',');
}

/** A BMPString holds UTF-16 code units without surrogates (forge encodes them as UTF-16BE). */
function bmpName(s: string): string {
  for (const c of s) if (c.codePointAt(0)! > 0xffff) throw new ExecFailure('error calling pemTruststoreToPKCS12: a subject outside the Basic Multilingual Plane');
  return s;
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
  const d = der();
  const bags = certsOf(input).map((c) => {
    const trusted = d.seq(d.oid(JAVA_TRUST_STORE), d.set(d.oid(ANY_EKU)));
    const name = d.seq(d.oid(FRIENDLY_NAME), d.set(d.bmp(bmpName(goNameString(certInfo(c).rawSubject)))));
    return certBag(c, d.set(trusted, name));
  });
  return pfx([encryptedSafe(bags, pass)], pass);
}

export const ESO_TRUSTSTORE: Record<string, GoFunc> = {
  pemTruststoreToPKCS12: { params: ['B'], fn: (s) => trustStore(s, '') },
  pemTruststoreToPKCS12Pass: { params: ['B', 's'], fn: (s, p) => trustStore(s, p as string) },
};
