// ESO's pkcs12key, pkcs12keyPass, pkcs12cert and pkcs12certPass (test/support/templating/go-oracle/
// pkcs12.go: software.sslmate.com/src/go-pkcs12 v0.5.0's DecodeChain): the private key of a
// PKCS#12 archive as PEM PKCS#8, or its certificates as PEM (in the archive's order). The
// archive is read by node-forge's PKCS#12 reader (loaded on first use, src/templating/lazy.ts:
// password integrity, data and encrypted-data contents, PBES2 with AES, SHA-1 with 3DES or
// 40-bit RC2, plain and shrouded key bags). Around it, what go-pkcs12 does differently:
// only SHA-1, SHA-256 and SHA-512 MACs; no MAC only without a password; the empty password
// also tried as no bytes at all; PBES2 given the password as UTF-8; one or two contents, one
// key. ESI bounds the iterations an archive may ask for (go-pkcs12 has no ceiling).
// Messages never carry the archive's or the password's bytes.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { pkcs12 as Pkcs12Module } from 'node-forge';
import { loadForge } from '../lazy.js';
import { alloc } from './alloc.js';
import { buf, bytesOf, children, fromDer, oidOf, toDer, type Asn1 } from './asn1.js';
import { ExecFailure, Unsupported } from './errors.js';
import type { GoFunc } from './exec.js';
import { derToPem } from './eso-pem.js';
import { isBytes, type Value } from './values.js';

export const OID = {
  pbes2: '1.2.840.113549.1.5.13', certBag: '1.2.840.113549.1.12.10.1.3',
  keyBag: '1.2.840.113549.1.12.10.1.1', shroudedKeyBag: '1.2.840.113549.1.12.10.1.2',
};
const MAC_HASHES = new Set(['1.3.14.3.2.26', '2.16.840.1.101.3.4.2.1', '2.16.840.1.101.3.4.2.3']);
/** The most iterations an archive's MAC or ciphers may ask for: bounded work for any input. */
export const MAX_ITERATIONS = 1 << 20;

class P12Error extends ExecFailure {}
const fail = (fn: string, what: string) => new P12Error(`error calling ${fn}: pkcs12: ${what}`);

/** A small INTEGER's value; one of more than 4 bytes counts as more than any bound. */
function intOf(a: Asn1 | undefined): number {
  const b = buf(bytesOf(a));
  return b.length > 4 ? Number.POSITIVE_INFINITY : b.length === 0 ? 1 : b.readUIntBE(0, b.length);
}

function bounded(fn: string, iterations: number): void {
  if (iterations > MAX_ITERATIONS) throw new Unsupported(`${fn} of an archive asking for more than ${MAX_ITERATIONS} iterations`);
}

type GetCipher = (oid: string, params: Asn1, password: string | null) => unknown;

/** Runs forge's reader with its password-based ciphers bounded and given go-pkcs12's password
 *  forms: PBES2's parameters hold the iterations in their key derivation, PKCS#12's PBE in
 *  their second element. The reader is synchronous, so the wrapper is in place for this call
 *  only. */
function withGoCiphers<T>(fn: string, run: () => T): T {
  const forge = loadForge();
  const pbe = (forge.pki as unknown as { pbe: { getCipher: GetCipher } }).pbe;
  const original = pbe.getCipher;
  pbe.getCipher = (oid, params, password) => {
    const pbes2 = oid === OID.pbes2;
    bounded(fn, intOf(pbes2 ? children(children(children(params)[0])[1])[1] : children(params)[1]));
    return original.call(pbe, oid, params, pbes2 ? forge.util.encodeUtf8(password ?? '') : password);
  };
  try {
    return run();
  } finally {
    pbe.getCipher = original;
  }
}

interface Chain {
  key: Buffer;
  certs: Buffer[];
}

/** DecodeChain. */
function decodeChain(fn: string, archive: Buffer, pass: string): Chain {
  const forge = loadForge();
  const pfx = fromDer(archive);
  const macData = children(pfx)[2];
  if (macData === undefined) {
    if (pass !== '') throw fail(fn, 'no MAC in data');
  } else {
    const [digestInfo, , iterations] = children(macData);
    if (!MAC_HASHES.has(oidOf(children(children(digestInfo)[0])[0]))) throw fail(fn, 'unknown digest algorithm');
    bounded(fn, intOf(iterations));
  }
  const read = (password: string | null) => withGoCiphers(fn, () => forge.pkcs12.pkcs12FromAsn1(pfx, true, password as string));
  let p12: Pkcs12Module.Pkcs12Pfx;
  try {
    p12 = read(pass);
  } catch (err) {
    if (!/MAC could not be verified/.test((err as Error).message)) throw err;
    if (pass !== '') throw fail(fn, 'decryption password incorrect');
    try {
      p12 = read(null); // go-pkcs12's second try: the empty password as no bytes at all
    } catch (again) {
      if (/MAC could not be verified/.test((again as Error).message)) throw fail(fn, 'decryption password incorrect');
      throw again;
    }
  }
  if (p12.safeContents.length < 1 || p12.safeContents.length > 2) throw fail(fn, 'expected between 1 and 2 items in the authenticated safe');
  const { pki } = forge;
  let key: Buffer | undefined;
  const certs: Buffer[] = [];
  for (const bag of p12.safeContents.flatMap((c) => c.safeBags)) {
    const parsed = (bag as { asn1?: Asn1 }).asn1;
    if (bag.type === OID.certBag) {
      certs.push(toDer(parsed ?? pki.certificateToAsn1(bag.cert!)));
    } else if (bag.type === OID.keyBag || bag.type === OID.shroudedKeyBag) {
      if (key !== undefined) throw fail(fn, 'expected exactly one key bag');
      key = toDer(parsed ?? pki.wrapRsaPrivateKey(pki.privateKeyToAsn1(bag.key!)));
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
    throw fail(fn, 'error reading P12 data'); // forge's own message may name the archive's parts; this one names nothing
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
