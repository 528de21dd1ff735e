// The parts of an X.509 certificate ESO's helpers decide on (the raw issuer and subject, the
// basic constraints, the key usage, the signature algorithm), read with node-forge's DER
// decoder (loaded on first use, src/templating/lazy.ts). node:crypto's X509Certificate
// parses and verifies certificates but exposes none of these as Go's crypto/x509 sees them.
import type { asn1 as Asn1Module } from 'node-forge';
import { loadForge } from '../lazy.js';

export type Asn1 = Asn1Module.Asn1;

/** Buffer → forge's binary string, and back. */
export const bin = (b: Buffer): string => b.toString('latin1');
export const buf = (s: string): Buffer => Buffer.from(s, 'latin1');

/** Strict DER, BIT STRINGs left as bytes (forge otherwise tries to decode their content). */
export function fromDer(b: Buffer): Asn1 {
  const { asn1 } = loadForge();
  return (asn1.fromDer as unknown as (b: string, o: object) => Asn1)(bin(b), { strict: true, decodeBitStrings: false, parseAllBytes: true });
}

export const toDer = (a: Asn1): Buffer => buf(loadForge().asn1.toDer(a).getBytes());
export const children = (a: Asn1 | undefined): Asn1[] => (a !== undefined && Array.isArray(a.value) ? a.value : []);
export const bytesOf = (a: Asn1 | undefined): string => (a !== undefined && typeof a.value === 'string' ? a.value : '');
export const oidOf = (a: Asn1 | undefined): string => (a?.type === loadForge().asn1.Type.OID ? loadForge().asn1.derToOid(bytesOf(a)) : '');

export interface CertInfo {
  rawIssuer: Buffer;
  rawSubject: Buffer;
  /** The signature algorithm's OID, dotted. */
  signatureOid: string;
  isCA: boolean;
  /** The key usage bits (bit 0 the first, digitalSignature), 0 when absent. */
  keyUsage: number;
}

const BASIC_CONSTRAINTS = '2.5.29.19';
const KEY_USAGE = '2.5.29.15';

/** Throws on anything that is not a DER certificate. */
export function certInfo(der: Buffer): CertInfo {
  const { asn1 } = loadForge();
  const [tbs, sigAlg] = children(fromDer(der));
  const fields = children(tbs);
  const i = fields[0]?.tagClass === asn1.Class.CONTEXT_SPECIFIC ? 1 : 0; // the explicit [0] version is optional
  if (fields.length < i + 6) throw new Error('not a certificate');
  const info: CertInfo = {
    rawIssuer: toDer(fields[i + 2]!), rawSubject: toDer(fields[i + 4]!),
    signatureOid: oidOf(children(sigAlg)[0]), isCA: false, keyUsage: 0,
  };
  const ext = fields.find((f) => f.tagClass === asn1.Class.CONTEXT_SPECIFIC && f.type === 3);
  for (const e of children(children(ext)[0])) {
    const parts = children(e);
    const value = () => fromDer(buf(bytesOf(parts.at(-1))));
    const oid = oidOf(parts[0]);
    if (oid === BASIC_CONSTRAINTS) {
      const first = children(value())[0];
      info.isCA = first?.type === asn1.Type.BOOLEAN && bytesOf(first) !== '\x00';
    } else if (oid === KEY_USAGE) {
      const bits = buf(bytesOf(value())).subarray(1); // the first byte counts the unused bits
      for (let bit = 0; bit < bits.length * 8 && bit < 16; bit++) if (bits[bit >> 3]! & (0x80 >> (bit & 7))) info.keyUsage |= 1 << bit;
    }
  }
  return info;
}
