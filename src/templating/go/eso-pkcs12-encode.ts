// ESO's pemToPkcs12, pemToPkcs12Pass, fullPemToPkcs12 and fullPemToPkcs12Pass
// (test/templating/go-oracle/pkcs12.go): PEM certificates and a PEM private key as a base64
// PKCS#12 archive, built as go-pkcs12 v0.5.0's Modern encoder builds it (Modern2023): the
// certificates in a PBES2 (PBKDF2-HMAC-SHA-256, 2048 iterations, AES-256-CBC) encrypted
// SafeContents, the key as a PBES2 shrouded key bag in a plain one, both bags of the leaf
// marked with the SHA-1 of its DER as localKeyId, an HMAC-SHA-256 MAC (2048 iterations),
// 16-byte random salts; no password means the empty one. Salts and IVs are random, so the
// archive differs from Go's byte for byte and is tested by round trip
// (test/templating/go-eso-pkcs12-encode.test.ts).
import { createCipheriv, createHash, createHmac, createPrivateKey, pbkdf2Sync, randomBytes, type KeyObject } from 'node:crypto';
import { ExecFailure } from './errors.js';
import type { GoFunc } from './exec.js';
import { parseCerts } from './eso-certs.js';
import { bmp, kdf, OID } from './eso-pkcs12.js';
import { byteString, pemDecode } from './eso-pem.js';
import type { Value } from './values.js';

const ITERATIONS = 2048;
const SALT = 16;
const OID_LOCAL_KEY_ID = '2a864886f70d010915';
const OID_HMAC_SHA256 = '2a864886f70d0209';
const OID_AES256_CBC = '60864801650304012a';
const OID_SHA256 = '608648016503040201';

export function tlv(tag: number, content: Buffer): Buffer {
  const n = content.length;
  const len = n < 0x80 ? Buffer.from([n]) : (() => {
    const bytes: number[] = [];
    for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
    return Buffer.from([0x80 | bytes.length, ...bytes]);
  })();
  return Buffer.concat([Buffer.from([tag]), len, content]);
}
export const seq = (...xs: Buffer[]) => tlv(0x30, Buffer.concat(xs));
export const set = (...xs: Buffer[]) => tlv(0x31, Buffer.concat(xs));
export const oid = (hex: string) => tlv(0x06, Buffer.from(hex, 'hex'));
export const octets = (b: Buffer) => tlv(0x04, b);
export const explicit0 = (b: Buffer) => tlv(0xa0, b);
export function int(n: number): Buffer {
  let hex = n.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  if (parseInt(hex.slice(0, 2), 16) & 0x80) hex = `00${hex}`;
  return tlv(0x02, Buffer.from(hex, 'hex'));
}

/** PBES2 parameters and the ciphertext of `data` (PKCS#7 padding, as go-pkcs12's pbEncrypt). */
export function pbes2(data: Buffer, pass: string): { alg: Buffer; encrypted: Buffer } {
  const salt = randomBytes(SALT);
  const iv = randomBytes(16);
  const key = pbkdf2Sync(Buffer.from(pass, 'utf8'), salt, ITERATIONS, 32, 'sha256');
  const c = createCipheriv('aes-256-cbc', key, iv);
  const encrypted = Buffer.concat([c.update(data), c.final()]);
  const kdfParams = seq(octets(salt), int(ITERATIONS), seq(oid(OID_HMAC_SHA256)));
  const alg = seq(oid(OID.pbes2), seq(seq(oid(OID.pbkdf2), kdfParams), seq(oid(OID_AES256_CBC), octets(iv))));
  return { alg, encrypted };
}

/** The oracle's parseKey: the first PEM block that parses as PKCS#8, PKCS#1 or SEC1. */
function parseKey(fn: string, input: Value): KeyObject {
  let rest = byteString(input);
  for (;;) {
    const [block, next] = pemDecode(rest);
    if (block === null) throw new ExecFailure(`error calling ${fn}: no PEM private key found`);
    rest = next;
    for (const type of ['pkcs8', 'pkcs1', 'sec1'] as const) {
      try {
        return createPrivateKey({ key: block.bytes, format: 'der', type });
      } catch {
        // the next encoding
      }
    }
  }
}

function encode(certs: Buffer[], key: KeyObject, pass: string): string {
  const localKeyId = seq(oid(OID_LOCAL_KEY_ID), set(octets(createHash('sha1').update(certs[0]!).digest())));
  const certBags = certs.map((der, i) =>
    seq(oid(OID.certBag), explicit0(seq(oid(OID.x509Cert), explicit0(octets(der)))), ...(i === 0 ? [set(localKeyId)] : [])));
  const certData = pbes2(seq(...certBags), pass);
  const certInfo = seq(oid(OID.encryptedData), explicit0(seq(int(0), seq(oid(OID.data), certData.alg, tlv(0x80, certData.encrypted)))));
  const shrouded = pbes2(key.export({ type: 'pkcs8', format: 'der' }), pass);
  const keyBag = seq(oid(OID.shroudedKeyBag), explicit0(seq(shrouded.alg, octets(shrouded.encrypted))), set(localKeyId));
  const keyInfo = seq(oid(OID.data), explicit0(octets(seq(keyBag))));
  return archive(seq(certInfo, keyInfo), pass);
}

/** The PFX around an authenticated safe: its HMAC-SHA-256 MAC, base64. */
export function archive(authSafe: Buffer, pass: string): string {
  const macSalt = randomBytes(SALT);
  const macKey = kdf('sha256', bmp(pass), macSalt, { id: 3, iterations: ITERATIONS, size: 32 });
  const mac = createHmac('sha256', macKey).update(authSafe).digest();
  const macData = seq(seq(seq(oid(OID_SHA256)), octets(mac)), octets(macSalt), int(ITERATIONS));
  const pfx = seq(int(3), seq(oid(OID.data), explicit0(octets(authSafe))), macData);
  return pfx.toString('base64');
}

/** The oracle's pemToPkcs12Pass (`full`: fullPemToPkcs12Pass): certificates first, then the key. */
const toPkcs12 = (fn: string, full: boolean) => (cert: Value, key: Value, pass: Value = ''): string => {
  const certs = parseCerts(fn, cert).map((c) => c.der);
  return encode(full ? certs : certs.slice(0, 1), parseKey(fn, key), pass as string);
};

export const ESO_PKCS12_ENCODE: Record<string, GoFunc> = {
  pemToPkcs12: { params: ['B', 'B'], fn: toPkcs12('pemToPkcs12', false) },
  pemToPkcs12Pass: { params: ['B', 'B', 's'], fn: toPkcs12('pemToPkcs12Pass', false) },
  fullPemToPkcs12: { params: ['B', 'B'], fn: toPkcs12('fullPemToPkcs12', true) },
  fullPemToPkcs12Pass: { params: ['B', 'B', 's'], fn: toPkcs12('fullPemToPkcs12Pass', true) },
};
