// ESO's rsaDecrypt (test/support/templating/go-oracle/eso_helpers.go): RSA-OAEP decryption of raw
// ciphertext bytes with a PEM private key (PKCS#8, else PKCS#1), the OAEP and MGF1 hash
// SHA1, SHA512 or (any other name) SHA256, no label; scheme "None" returns the input. Keys
// under 1024 bits fail, as Go's crypto/rsa refuses them. Messages never carry the key, the
// ciphertext or the plaintext.
import { constants, createPrivateKey, privateDecrypt, type KeyObject } from 'node:crypto';
import { ExecFailure } from './errors.js';
import type { GoFunc } from './exec.js';
import { byteString, pemDecode } from './eso-pem.js';
import { textOrBytes } from './sprig.js';
import { isBytes, type Value } from './values.js';

const fail = (what: string) => new ExecFailure(`error calling rsaDecrypt: rsaDecrypt: ${what}`);

function rsaKey(pem: Value): KeyObject {
  const [block] = pemDecode(byteString(pem));
  if (block === null) throw fail('failed to decode PEM block');
  for (const type of ['pkcs8', 'pkcs1'] as const) {
    let key: KeyObject;
    try {
      key = createPrivateKey({ key: block.bytes, format: 'der', type });
    } catch {
      continue;
    }
    if (key.asymmetricKeyType !== 'rsa') throw fail('could not parse RSA private key');
    return key;
  }
  throw fail('could not parse private key');
}

function rsaDecrypt(scheme: string, hashName: string, input: Value, pem: Value): Value {
  if (scheme === 'None') return input;
  if (scheme !== 'RSA-OAEP') throw fail('decryption scheme is not supported');
  const key = rsaKey(pem);
  if ((key.asymmetricKeyDetails?.modulusLength ?? 0) < 1024) throw fail('error decrypting data with RSA');
  const data = isBytes(input) ? Buffer.from(input.bytes) : Buffer.from(input as string, 'utf8');
  const oaepHash = hashName === 'SHA1' ? 'sha1' : hashName === 'SHA512' ? 'sha512' : 'sha256';
  try {
    return textOrBytes(privateDecrypt({ key, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash }, data));
  } catch {
    throw fail('error decrypting data with RSA');
  }
}

export const ESO_RSA: Record<string, GoFunc> = {
  rsaDecrypt: { params: ['s', 's', 'B', 'B'], fn: (s, h, i, k) => rsaDecrypt(s as string, h as string, i, k) },
};
