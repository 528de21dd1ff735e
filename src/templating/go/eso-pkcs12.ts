// ESO's pkcs12key, pkcs12keyPass, pkcs12cert and pkcs12certPass (test/templating/go-oracle/
// pkcs12.go: software.sslmate.com/src/go-pkcs12 v0.5.0's DecodeChain): the private key of a
// PKCS#12 archive as PEM PKCS#8, or its certificates as PEM (the first certificate bag, then
// the others in order). The archive is read as go-pkcs12 reads it: a v3 PFX, password
// integrity (an HMAC over SHA-1, SHA-256 or SHA-512 keyed by RFC 7292's KDF; the empty
// password also tried as no bytes at all), data and encrypted-data contents (PBES2 with
// PBKDF2 and AES-CBC, or SHA-1 with 3DES), certificate bags, one key bag, plain or shrouded.
// RC2-encrypted contents need OpenSSL's legacy provider, which node:crypto does not load:
// refused, not guessed. Messages never carry the archive's or the password's bytes.
import { createDecipheriv, createHash, createHmac, createPrivateKey, pbkdf2Sync, timingSafeEqual, X509Certificate } from 'node:crypto';
import { alloc } from './alloc.js';
import { ExecFailure, Unsupported } from './errors.js';
import type { GoFunc } from './exec.js';
import { derAt, derChildren, type Der } from './der.js';
import { derToPem } from './eso-pem.js';
import { isBytes, type Value } from './values.js';

export const OID = {
  data: '2a864886f70d010701', encryptedData: '2a864886f70d010706',
  keyBag: '2a864886f70d010c0a0101', shroudedKeyBag: '2a864886f70d010c0a0102', certBag: '2a864886f70d010c0a0103',
  x509Cert: '2a864886f70d01091601', pbes2: '2a864886f70d01050d', pbkdf2: '2a864886f70d01050c',
  sha1Des3: '2a864886f70d010c0103', sha1Rc2128: '2a864886f70d010c0105', sha1Rc240: '2a864886f70d010c0106',
};
const MAC_HASHES: Record<string, string> = { '2b0e03021a': 'sha1', '608648016503040201': 'sha256', '608648016503040203': 'sha512' };
const PRFS: Record<string, string> = { '2a864886f70d0207': 'sha1', '2a864886f70d0209': 'sha256', '2a864886f70d020b': 'sha512' };
const AES: Record<string, string> = { '608648016503040102': 'aes-128-cbc', '608648016503040116': 'aes-192-cbc', '60864801650304012a': 'aes-256-cbc' };
/** go-pkcs12's iteration ceiling is none; ESI bounds the work a template can ask for. */
const MAX_ITERATIONS = 1 << 20;

class P12Error extends ExecFailure {}
const fail = (fn: string, what: string) => new P12Error(`error calling ${fn}: pkcs12: ${what}`);

const oidOf = (d: Der) => (d.tag === 0x06 ? d.content.toString('hex') : '');
const seq = (d: Der | undefined): Der[] => {
  if (d === undefined || d.tag !== 0x30) throw new Error('not a SEQUENCE');
  return derChildren(d);
};
function int(d: Der | undefined): number {
  if (d === undefined || d.tag !== 0x02 || d.content.length > 4) throw new Error('not a small INTEGER');
  return d.content.readUIntBE(0, d.content.length || 1);
}
/** The content of an explicit [0]. */
const explicit0 = (d: Der | undefined): Der => {
  if (d === undefined || d.tag !== 0xa0) throw new Error('not [0]');
  return derAt(d.content);
};
const octets = (d: Der | undefined): Buffer => {
  if (d === undefined || d.tag !== 0x04) throw new Error('not an OCTET STRING');
  return d.content;
};

/** RFC 7292 appendix B.2: the PKCS#12 key derivation. */
export function kdf(hash: string, password: Buffer, salt: Buffer, { id, iterations, size }: { id: number; iterations: number; size: number }): Buffer {
  const u = createHash(hash).digest().length;
  const v = hash === 'sha512' ? 128 : 64;
  const fill = (b: Buffer) => (b.length === 0 ? Buffer.alloc(0) : Buffer.alloc(v * Math.ceil(b.length / v), b));
  const d = Buffer.alloc(v, id);
  let i = Buffer.concat([fill(salt), fill(password)]);
  const out: Buffer[] = [];
  for (let got = 0; got < size; got += u) {
    let a = createHash(hash).update(d).update(i).digest();
    for (let n = 1; n < iterations; n++) a = createHash(hash).update(a).digest();
    out.push(a);
    const b = Buffer.alloc(v, a);
    const next = Buffer.alloc(i.length);
    for (let j = 0; j < i.length; j += v) {
      let carry = 1;
      for (let k = v - 1; k >= 0; k--) {
        const s = i[j + k]! + b[k]! + carry;
        next[j + k] = s & 0xff;
        carry = s >> 8;
      }
    }
    i = next;
  }
  return Buffer.concat(out).subarray(0, size);
}

/** bmpStringZeroTerminated: UTF-16BE and two zero bytes. */
export function bmp(password: string): Buffer {
  const le = Buffer.from(`${password}\0`, 'utf16le');
  for (let j = 0; j < le.length; j += 2) [le[j], le[j + 1]] = [le[j + 1]!, le[j]!];
  return le;
}

function iterations(fn: string, d: Der | undefined): number {
  const n = d === undefined ? 1 : int(d);
  if (n > MAX_ITERATIONS) throw new Unsupported(`${fn} of an archive asking for more than ${MAX_ITERATIONS} iterations`);
  return n;
}

/** pbDecrypt: AlgorithmIdentifier and ciphertext to plaintext (PKCS#7 padding checked as go-pkcs12 does). */
function decrypt(fn: string, alg: Der, data: Buffer, password: Buffer): Buffer {
  const [oid, params] = seq(alg);
  let cipher: string;
  let key: Buffer;
  let iv: Buffer;
  const algo = oidOf(oid!);
  if (algo === OID.pbes2) {
    const [kdfAlg, enc] = seq(params);
    const [kdfOid, kdfParams] = seq(kdfAlg);
    if (oidOf(kdfOid!) !== OID.pbkdf2) throw fail(fn, 'the key derivation is not supported');
    const p = seq(kdfParams);
    const salt = octets(p[0]);
    const count = iterations(fn, p[1]);
    const prfAlg = p.find((x, k) => k >= 2 && x.tag === 0x30);
    const prf = prfAlg === undefined ? 'sha1' : PRFS[oidOf(seq(prfAlg)[0]!)];
    const [encOid, ivDer] = seq(enc);
    cipher = AES[oidOf(encOid!)] ?? '';
    if (prf === undefined || cipher === '') throw fail(fn, 'the encryption is not supported');
    iv = octets(ivDer);
    // go-pkcs12 gives PBKDF2 the password as UTF-8 (the BMP form decoded), without the terminator.
    const utf8 = password.length === 0 ? Buffer.alloc(0) : Buffer.from(swap(password.subarray(0, -2)).toString('utf16le'), 'utf8');
    key = pbkdf2Sync(utf8, salt, count, Number(/-(\d+)-/.exec(cipher)![1]) / 8, prf);
  } else if (algo === OID.sha1Des3) {
    const p = seq(params);
    const salt = octets(p[0]);
    const count = iterations(fn, p[1]);
    cipher = 'des-ede3-cbc';
    key = kdf('sha1', password, salt, { id: 1, iterations: count, size: 24 });
    iv = kdf('sha1', password, salt, { id: 2, iterations: count, size: 8 });
  } else if (algo === OID.sha1Rc240 || algo === OID.sha1Rc2128) {
    throw new Unsupported(`${fn} of an archive encrypted with RC2`);
  } else {
    throw fail(fn, 'the encryption algorithm is not supported');
  }
  const block = cipher === 'des-ede3-cbc' ? 8 : 16;
  if (data.length === 0 || data.length % block !== 0) throw fail(fn, 'the encrypted data is empty or not whole blocks');
  const d = createDecipheriv(cipher, key, iv).setAutoPadding(false);
  const plain = Buffer.concat([d.update(data), d.final()]);
  const pad = plain[plain.length - 1]!;
  if (pad === 0 || pad > block || !plain.subarray(plain.length - pad).every((x) => x === pad)) throw fail(fn, 'decryption error, incorrect padding');
  return plain.subarray(0, plain.length - pad);
}

/** UTF-16LE bytes as UTF-16BE (BMPString) and back. */
export function swap(b: Buffer): Buffer {
  const c = Buffer.from(b);
  for (let j = 0; j + 1 < c.length; j += 2) [c[j], c[j + 1]] = [c[j + 1]!, c[j]!];
  return c;
}

function verifyMac(fn: string, macData: Der, message: Buffer, password: Buffer): boolean {
  const [digestInfo, salt, iter] = seq(macData);
  const [alg, digest] = seq(digestInfo);
  const hash = MAC_HASHES[oidOf(seq(alg)[0]!)];
  if (hash === undefined) throw fail(fn, 'unknown digest algorithm');
  const size = createHash(hash).digest().length;
  const key = kdf(hash, password, octets(salt), { id: 3, iterations: iterations(fn, iter), size });
  const mac = createHmac(hash, key).update(message).digest();
  const want = octets(digest);
  return want.length === mac.length && timingSafeEqual(want, mac);
}

interface Chain {
  key: Buffer;
  certs: Buffer[];
}

/** getSafeContents up to the authenticated safe: the PFX checked, its MAC verified; the
 *  password the contents decrypt with (the empty one may turn out to be no bytes). */
function authenticatedSafe(fn: string, archive: Buffer, pass: string): { infos: Der[]; password: Buffer } {
  const whole = derAt(archive);
  if (whole.raw.length !== archive.length) throw new Error('trailing data');
  const pfx = seq(whole);
  if (int(pfx[0]) !== 3) throw fail(fn, 'can only decode v3 PFX');
  const [ctype, content] = seq(pfx[1]);
  if (oidOf(ctype!) !== OID.data) throw fail(fn, 'only password-protected PFX is implemented');
  const authSafe = octets(explicit0(content));
  let password = bmp(pass);
  if (pfx[2] === undefined) {
    if (pass !== '') throw fail(fn, 'no MAC in data');
  } else if (!verifyMac(fn, pfx[2], authSafe, password)) {
    if (pass !== '' || !verifyMac(fn, pfx[2], authSafe, Buffer.alloc(0))) throw fail(fn, 'decryption password incorrect');
    password = Buffer.alloc(0);
  }
  const infos = seq(derAt(authSafe));
  if (infos.length < 1 || infos.length > 2) throw fail(fn, 'expected between 1 and 2 items in the authenticated safe');
  return { infos, password };
}

/** The SafeContents of one ContentInfo: data as it is, encryptedData decrypted. */
function safeContents(fn: string, ci: Der, password: Buffer): Der[] {
  const [t, c] = seq(ci);
  let data: Buffer;
  if (oidOf(t!) === OID.data) data = octets(explicit0(c));
  else if (oidOf(t!) === OID.encryptedData) {
    const [version, eci] = seq(explicit0(c));
    if (int(version) !== 0) throw fail(fn, 'only version 0 of EncryptedData is supported');
    const [, alg, enc] = seq(eci);
    if (enc === undefined || (enc.tag !== 0x80 && enc.tag !== 0xa0)) throw new Error('no encrypted content');
    data = decrypt(fn, alg!, enc.tag === 0x80 ? enc.content : Buffer.concat(derChildren(enc).map(octets)), password);
  } else throw fail(fn, 'only data and encryptedData content types are supported in authenticated safe');
  alloc(data.length);
  return seq(derAt(data));
}

/** DecodeChain. */
function decodeChain(fn: string, archive: Buffer, pass: string): Chain {
  const { infos, password } = authenticatedSafe(fn, archive, pass);
  let key: Buffer | undefined;
  const certs: Buffer[] = [];
  for (const bag of infos.flatMap((ci) => safeContents(fn, ci, password))) {
    const [id, value] = seq(bag);
    const v = explicit0(value);
    const kind = oidOf(id!);
    if (kind === OID.certBag) {
      const [certType, der] = seq(v);
      if (oidOf(certType!) !== OID.x509Cert) throw fail(fn, 'only X.509 certificates are supported');
      certs.push(octets(explicit0(der)));
    } else if (kind === OID.keyBag || kind === OID.shroudedKeyBag) {
      if (key !== undefined) throw fail(fn, 'expected exactly one key bag');
      if (kind === OID.keyBag) key = v.raw;
      else {
        const [alg, enc] = seq(v);
        key = decrypt(fn, alg!, octets(enc), password);
      }
    }
  }
  if (certs.length === 0) throw fail(fn, 'certificate missing');
  if (key === undefined) throw fail(fn, 'private key missing');
  return { key, certs };
}

function read(fn: string, input: Value, pass: string): Chain {
  const archive = isBytes(input) ? Buffer.from(input.bytes) : Buffer.from(input as string, 'utf8');
  alloc(archive.length);
  let chain: Chain;
  try {
    chain = decodeChain(fn, archive, pass);
  } catch (err) {
    if (err instanceof ExecFailure || err instanceof Unsupported) throw err;
    throw fail(fn, 'error reading P12 data');
  }
  for (const c of chain.certs) {
    try {
      new X509Certificate(c);
    } catch {
      throw fail(fn, 'unable to parse a certificate');
    }
  }
  return chain;
}

function keyPem(fn: string, input: Value, pass: string): string {
  const { key } = read(fn, input, pass);
  try {
    return derToPem('PRIVATE KEY', createPrivateKey({ key, format: 'der', type: 'pkcs8' }).export({ type: 'pkcs8', format: 'der' }));
  } catch {
    throw fail(fn, 'unable to parse the private key');
  }
}

const certPem = (fn: string, input: Value, pass: string): string => read(fn, input, pass).certs.map((c) => derToPem('CERTIFICATE', c)).join('');

export const ESO_PKCS12: Record<string, GoFunc> = {
  pkcs12key: { params: ['B'], fn: (s) => keyPem('pkcs12key', s, '') },
  pkcs12keyPass: { params: ['s', 'B'], fn: (p, s) => keyPem('pkcs12keyPass', s, p as string) },
  pkcs12cert: { params: ['B'], fn: (s) => certPem('pkcs12cert', s, '') },
  pkcs12certPass: { params: ['s', 'B'], fn: (p, s) => certPem('pkcs12certPass', s, p as string) },
};
