// ESO's pemToPkcs12, pemToPkcs12Pass, fullPemToPkcs12 and fullPemToPkcs12Pass
// (test/support/templating/go-oracle/pkcs12.go): PEM certificates and a PEM private key as a base64
// PKCS#12 archive in the layout of go-pkcs12 v0.5.0's Modern encoder (Modern2023): the
// certificates in a PBES2 (PBKDF2-HMAC-SHA-256, 2048 iterations, AES-256-CBC) encrypted
// SafeContents, the key as a PBES2 shrouded key bag in a plain one, both bags of the leaf
// marked with the SHA-1 of its DER as localKeyId, an HMAC-SHA-256 MAC (2048 iterations),
// 16-byte random salts; no password means the empty one. node-forge (loaded on first use,
// src/templating/lazy.ts) encodes the DER, encrypts and derives the MAC key; node:crypto
// reads the key, whatever its type (forge's key objects are RSA only). Salts and IVs are
// random, so the archive differs from Go's byte for byte and is tested by round trip
// (test/src/templating/go/eso-pkcs12-encode.test.ts).
import { createHash, createPrivateKey, type KeyObject } from 'node:crypto';
import { loadForge } from '../lazy.js';
import { bin, buf, fromDer, type Asn1 } from './asn1.js';
import { ExecFailure } from './errors.js';
import type { GoFunc } from './exec.js';
import { parseCerts } from './eso-certs.js';
import { OID } from './eso-pkcs12.js';
import { byteString, pemDecode } from './eso-pem.js';
import type { Value } from './values.js';

const ITERATIONS = 2048;
const SALT = 16;
const DATA = '1.2.840.113549.1.7.1';
const ENCRYPTED_DATA = '1.2.840.113549.1.7.6';
const X509_CERT = '1.2.840.113549.1.9.22.1';
const LOCAL_KEY_ID = '1.2.840.113549.1.9.21';
const SHA256 = '2.16.840.1.101.3.4.2.1';

/** DER builders over forge's ASN.1 objects. */
export function der() {
  const { asn1 } = loadForge();
  const { Class, Type } = asn1;
  const u = (type: number, value: string | Asn1[]) => asn1.create(Class.UNIVERSAL, type, Array.isArray(value), value);
  return {
    seq: (...xs: Asn1[]) => u(Type.SEQUENCE, xs),
    set: (...xs: Asn1[]) => u(Type.SET, xs),
    oid: (dotted: string) => u(Type.OID, asn1.oidToDer(dotted).getBytes()),
    octets: (b: Buffer | string) => u(Type.OCTETSTRING, typeof b === 'string' ? b : bin(b)),
    int: (n: number) => u(Type.INTEGER, asn1.integerToDer(n).getBytes()),
    bmp: (s: string) => u(Type.BMPSTRING, s),
    explicit0: (x: Asn1) => asn1.create(Class.CONTEXT_SPECIFIC, 0, true, [x]),
    implicit0: (bytes: string) => asn1.create(Class.CONTEXT_SPECIFIC, 0, false, bytes),
  };
}

/** A certificate bag of `certDer`, with `attributes` (a SET) if any. */
export function certBag(certDer: Buffer, attributes?: Asn1): Asn1 {
  const d = der();
  return d.seq(d.oid(OID.certBag), d.explicit0(d.seq(d.oid(X509_CERT), d.explicit0(d.octets(certDer)))), ...(attributes ? [attributes] : []));
}

/** `content` PBES2-encrypted as go-pkcs12's Modern encoder does (the password as UTF-8):
 *  its AlgorithmIdentifier and the ciphertext, as forge's EncryptedPrivateKeyInfo holds them. */
function pbes2(content: Asn1, pass: string): [Asn1, string] {
  const forge = loadForge();
  const enc = forge.pki.encryptPrivateKeyInfo(content, forge.util.encodeUtf8(pass), { algorithm: 'aes256', count: ITERATIONS, saltSize: SALT, prfAlgorithm: 'sha256' });
  const [alg, data] = enc.value as Asn1[];
  return [alg!, data!.value as string];
}

/** An EncryptedData ContentInfo of these bags. */
export function encryptedSafe(bags: Asn1[], pass: string): Asn1 {
  const d = der();
  const [alg, data] = pbes2(d.seq(...bags), pass);
  return d.seq(d.oid(ENCRYPTED_DATA), d.explicit0(d.seq(d.int(0), d.seq(d.oid(DATA), alg, d.implicit0(data)))));
}

/** The PFX around these ContentInfos, with its HMAC-SHA-256 MAC, base64. */
export function pfx(contents: Asn1[], pass: string): string {
  const forge = loadForge();
  const d = der();
  const authSafe = forge.asn1.toDer(d.seq(...contents)).getBytes();
  const salt = forge.random.getBytesSync(SALT);
  const key = forge.pkcs12.generateKey(pass, forge.util.createBuffer(salt), 3, ITERATIONS, 32, forge.md.sha256.create());
  const hmac = forge.hmac.create();
  hmac.start('sha256', key.getBytes());
  hmac.update(authSafe);
  const macData = d.seq(d.seq(d.seq(d.oid(SHA256)), d.octets(hmac.digest().getBytes())), d.octets(salt), d.int(ITERATIONS));
  const out = d.seq(d.int(3), d.seq(d.oid(DATA), d.explicit0(d.octets(authSafe))), macData);
  return buf(forge.asn1.toDer(out).getBytes()).toString('base64');
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
  const d = der();
  const localKeyId = () => d.seq(d.oid(LOCAL_KEY_ID), d.set(d.octets(createHash('sha1').update(certs[0]!).digest())));
  const certs0 = encryptedSafe(certs.map((c, i) => certBag(c, i === 0 ? d.set(localKeyId()) : undefined)), pass);
  const [alg, data] = pbes2(fromDer(key.export({ type: 'pkcs8', format: 'der' })), pass);
  const keyBag = d.seq(d.oid(OID.shroudedKeyBag), d.explicit0(d.seq(alg, d.octets(data))), d.set(localKeyId()));
  const keys = d.seq(d.oid(DATA), d.explicit0(d.octets(buf(loadForge().asn1.toDer(d.seq(keyBag)).getBytes()))));
  return pfx([certs0, keys], pass);
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
