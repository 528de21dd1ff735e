// ESO's jwkPublicKeyPem and jwkPrivateKeyPem (test/support/templating/go-oracle/jwk.go): a JSON Web
// Key as a PEM PKIX public key ("PUBLIC KEY") or PKCS#8 private key ("PRIVATE KEY"), the
// encodings Go's x509.MarshalPKIXPublicKey and MarshalPKCS8PrivateKey write. The key's
// fields are read as Go reads them (json.Unmarshal into strings, field names matched
// without case, base64url with or without padding); node:crypto builds and encodes the
// key. Where node:crypto would not take a key Go encodes, the template is refused, never
// rendered differently. Messages name a field, never its value.
import { createPrivateKey, createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { alloc } from './alloc.js';
import { ExecFailure, Unsupported } from './errors.js';
import type { GoFunc } from './exec.js';
import { derToPem } from './eso-pem.js';
import { isAscii, type Value } from './values.js';

const FIELDS = ['kty', 'crv', 'n', 'e', 'd', 'p', 'q', 'x', 'y'] as const;
type Jwk = Record<(typeof FIELDS)[number], string>;

/** A field size per curve (bytes), as JWK wants x, y and d. */
const CURVES: Record<string, number> = { 'P-256': 32, 'P-384': 48, 'P-521': 66 };

class JwkError extends ExecFailure {}

/** json.Unmarshal of the input into the oracle's struct of string fields. */
function parseJwk(fn: string, input: string): Jwk {
  const fail = () => new JwkError(`error calling ${fn}: jwk: not a JSON Web Key`);
  let doc: unknown;
  try {
    doc = JSON.parse(input);
  } catch {
    throw fail();
  }
  const k = Object.fromEntries(FIELDS.map((f) => [f, ''])) as Jwk;
  if (doc === null) return k;
  if (typeof doc !== 'object' || Array.isArray(doc)) throw fail();
  let typeError = false;
  for (const [name, v] of Object.entries(doc as Record<string, unknown>)) {
    // Go matches a name to a field ignoring case (with Unicode folds this port does not hold).
    if (!isAscii(name)) throw new Unsupported(`${fn} of a key with a member name that is not ASCII`);
    const field = FIELDS.find((f) => f === name.toLowerCase());
    if (field === undefined || v === null) continue;
    if (typeof v !== 'string') typeError = true;
    else k[field] = v;
  }
  if (typeError) throw fail();
  return k;
}

/** The oracle's b64url: padding trimmed, Go's RawURLEncoding (newlines skipped); empty fails. */
function bytesOf(fn: string, field: string, s: string): Buffer {
  const clean = s.replace(/=+$/, '').replace(/[\r\n]/g, '');
  if (clean === '' || !/^[A-Za-z0-9_-]*$/.test(clean) || clean.length % 4 === 1) {
    throw new JwkError(`error calling ${fn}: jwk: field ${field} is missing or not base64url`);
  }
  alloc(clean.length);
  return Buffer.from(clean, 'base64url');
}

const big = (b: Buffer): bigint => (b.length === 0 ? 0n : BigInt(`0x${b.toString('hex')}`));
function unbig(n: bigint, size = 0): string {
  let hex = n.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  return Buffer.from(hex.padStart(size * 2, '0'), 'hex').toString('base64url');
}

function modInverse(a: bigint, m: bigint): bigint {
  let [r0, r1, s0, s1] = [((a % m) + m) % m, m, 1n, 0n];
  while (r1 !== 0n) {
    const q = r0 / r1;
    [r0, r1, s0, s1] = [r1, r0 - q * r1, s1, s0 - q * s1];
  }
  return ((s0 % m) + m) % m;
}

/** The JWK node:crypto is given: Go's reading of the fields, re-encoded canonically. */
function normalized(fn: string, k: Jwk, priv: boolean): JsonWebKey {
  const field = (name: keyof Jwk) => bytesOf(fn, name, k[name]);
  switch (k.kty) {
    case 'RSA': {
      const n = big(field('n'));
      const e = BigInt.asIntN(64, big(field('e')));
      if (!priv) return { kty: 'RSA', n: unbig(n), e: unbig(e) };
      const [d, p, q] = [big(field('d')), big(field('p')), big(field('q'))];
      if (p < 2n || q < 2n || p * q !== n) throw new JwkError(`error calling ${fn}: jwk: inconsistent RSA key`);
      return { kty: 'RSA', n: unbig(n), e: unbig(e), d: unbig(d), p: unbig(p), q: unbig(q), dp: unbig(d % (p - 1n)), dq: unbig(d % (q - 1n)), qi: unbig(modInverse(q, p)) };
    }
    case 'EC': {
      const size = CURVES[k.crv];
      if (size === undefined) throw new JwkError(`error calling ${fn}: jwk: unsupported curve`);
      const [x, y] = [big(field('x')), big(field('y'))];
      const limit = 1n << BigInt(size * 8);
      if (x >= limit || y >= limit) throw new JwkError(`error calling ${fn}: jwk: unable to encode the key`);
      const pub = { kty: 'EC', crv: k.crv, x: unbig(x, size), y: unbig(y, size) };
      if (!priv) return pub;
      const d = big(field('d'));
      if (d >= limit) throw new Unsupported(`${fn} of an EC key whose d is wider than the curve`);
      return { ...pub, d: unbig(d, size) };
    }
    case 'OKP': {
      if (k.crv !== 'Ed25519') throw new JwkError(`error calling ${fn}: jwk: unsupported curve`);
      const x = k.x === '' ? Buffer.alloc(0) : safeBytes(fn, 'x', k.x);
      if (x.length !== 32) throw new JwkError(`error calling ${fn}: jwk: field x is not an Ed25519 public key`);
      if (!priv) return { kty: 'OKP', crv: 'Ed25519', x: x.toString('base64url') };
      const seed = k.d === '' ? Buffer.alloc(0) : safeBytes(fn, 'd', k.d);
      if (seed.length !== 32) throw new JwkError(`error calling ${fn}: jwk: field d is not an Ed25519 seed`);
      // Go derives the public key from the seed and ignores x past its length check.
      const pubFromSeed = createPublicKey(createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', d: seed.toString('base64url'), x: x.toString('base64url') }, format: 'jwk' }));
      return { kty: 'OKP', crv: 'Ed25519', d: seed.toString('base64url'), x: pubFromSeed.export({ format: 'jwk' }).x };
    }
    default:
      throw new JwkError(`error calling ${fn}: jwk: unsupported key type`);
  }
}

/** bytesOf whose failure is Go's message for a wrong-sized Ed25519 field (the oracle folds them). */
function safeBytes(fn: string, field: string, s: string): Buffer {
  try {
    return bytesOf(fn, field, s);
  } catch {
    return Buffer.alloc(0);
  }
}

function encode(fn: string, input: string, priv: boolean): string {
  const jwk = normalized(fn, parseJwk(fn, input), priv);
  let key: KeyObject;
  try {
    key = priv ? createPrivateKey({ key: jwk, format: 'jwk' }) : createPublicKey({ key: jwk, format: 'jwk' });
  } catch (err) {
    if (err instanceof ExecFailure) throw err;
    // An EC point off its curve: Go's marshalling fails too.
    if (jwk.kty === 'EC' && !onCurve(jwk)) throw new JwkError(`error calling ${fn}: jwk: unable to encode the ${priv ? 'private' : 'public'} key`);
    throw new Unsupported(`${fn} of a key node:crypto does not take`);
  }
  if (priv && jwk.kty === 'RSA' && !consistentRsa(key)) throw new JwkError(`error calling ${fn}: jwk: inconsistent RSA key`);
  const der = priv ? key.export({ type: 'pkcs8', format: 'der' }) : key.export({ type: 'spki', format: 'der' });
  return derToPem(priv ? 'PRIVATE KEY' : 'PUBLIC KEY', der);
}

function onCurve(jwk: JsonWebKey): boolean {
  try {
    createPublicKey({ key: { kty: 'EC', crv: jwk.crv, x: jwk.x, y: jwk.y }, format: 'jwk' });
    return true;
  } catch {
    return false;
  }
}

/** rsa.PrivateKey.Validate's arithmetic: d·e ≡ 1 modulo p−1 and q−1 (p·q = n is checked before). */
function consistentRsa(key: KeyObject): boolean {
  const j = key.export({ format: 'jwk' });
  const b = (s?: string) => big(Buffer.from(s ?? '', 'base64url'));
  const [e, d, p, q] = [b(j.e), b(j.d), b(j.p), b(j.q)];
  return (d * e) % (p - 1n) === 1n % (p - 1n) && (d * e) % (q - 1n) === 1n % (q - 1n);
}

const jwkFn = (fn: string, priv: boolean): GoFunc => ({ params: ['s'], fn: (s: Value) => encode(fn, s as string, priv) });

export const ESO_JWK: Record<string, GoFunc> = {
  jwkPublicKeyPem: jwkFn('jwkPublicKeyPem', false),
  jwkPrivateKeyPem: jwkFn('jwkPrivateKeyPem', true),
};
