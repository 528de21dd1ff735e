// A small DER reader: the elements of a certificate ESO's helpers look at (the issuer and
// subject as raw bytes, the basic constraints, the key usage, the signature algorithm).
// Bounded: every read moves forward through the input.

export interface Der {
  tag: number;
  /** The whole element (tag, length and content). */
  raw: Buffer;
  content: Buffer;
}

/** The element at `at`; throws on anything that is not definite-length DER. */
export function derAt(b: Buffer, at = 0): Der {
  if (at + 2 > b.length) throw new Error('truncated DER');
  const tag = b[at]!;
  if ((tag & 0x1f) === 0x1f) throw new Error('high tag numbers are not read');
  let len = b[at + 1]!;
  let head = 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || at + 2 + n > b.length) throw new Error('unsupported DER length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + b[at + 2 + i]!;
    head += n;
  }
  if (at + head + len > b.length) throw new Error('truncated DER');
  return { tag, raw: b.subarray(at, at + head + len), content: b.subarray(at + head, at + head + len) };
}

/** The elements inside a constructed element. */
export function derChildren(d: Der): Der[] {
  const out: Der[] = [];
  for (let at = 0; at < d.content.length; ) {
    const child = derAt(d.content, at);
    out.push(child);
    at += child.raw.length;
  }
  return out;
}

/** The parts of an X.509 certificate read here. */
export interface CertInfo {
  rawIssuer: Buffer;
  rawSubject: Buffer;
  /** The OID of the signature algorithm, as DER content bytes in hex. */
  signatureOid: string;
  basicConstraintsValid: boolean;
  isCA: boolean;
  /** The key usage bits (bit 0 the first, digitalSignature), 0 when absent. */
  keyUsage: number;
}

const OID_BASIC_CONSTRAINTS = '551d13';
const OID_KEY_USAGE = '551d0f';

export function certInfo(der: Buffer): CertInfo {
  const [tbs, sigAlg] = derChildren(derAt(der));
  const fields = derChildren(tbs!);
  const i = fields[0]!.tag === 0xa0 ? 1 : 0; // the explicit [0] version is optional
  const info: CertInfo = {
    rawIssuer: fields[i + 2]!.raw,
    rawSubject: fields[i + 4]!.raw,
    signatureOid: derChildren(sigAlg!)[0]!.content.toString('hex'),
    basicConstraintsValid: false,
    isCA: false,
    keyUsage: 0,
  };
  const ext = fields.find((f) => f.tag === 0xa3);
  if (!ext) return info;
  for (const e of derChildren(derChildren(ext)[0]!)) {
    const parts = derChildren(e);
    const oid = parts[0]!.content.toString('hex');
    const value = parts.at(-1)!.content;
    if (oid === OID_BASIC_CONSTRAINTS) {
      info.basicConstraintsValid = true;
      const first = derChildren(derAt(value))[0];
      info.isCA = first !== undefined && first.tag === 0x01 && first.content[0] !== 0;
    } else if (oid === OID_KEY_USAGE) {
      const bits = derAt(value).content.subarray(1);
      for (let bit = 0; bit < bits.length * 8 && bit < 16; bit++) if (bits[bit >> 3]! & (0x80 >> (bit & 7))) info.keyUsage |= 1 << bit;
    }
  }
  return info;
}
