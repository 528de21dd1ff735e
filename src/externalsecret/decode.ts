// ESO's `decodingStrategy` of a fetched value. Value-free errors.
import type { DecodingStrategy } from '../api/types.js';
import { RemoteRefError } from '../providers/errors.js';
import { emptySecretMap, type SecretMap } from '../providers/types.js';

const B64_STD = /^[A-Za-z0-9+/]*={0,2}$/;
const B64_URL = /^[A-Za-z0-9_-]*={0,2}$/;

/** Go's base64 decoders (which ESO uses) require padding and one alphabet; Node's
 *  decoder accepts anything, so validate first to keep `Auto` deterministic. */
function strictBase64(value: Uint8Array, alphabet: RegExp, what: string): Uint8Array {
  const text = Buffer.from(value).toString('latin1').replace(/[\r\n]/g, '');
  if (text.length % 4 !== 0 || !alphabet.test(text)) {
    throw new RemoteRefError(`value is not valid ${what} (decodingStrategy)`);
  }
  return new Uint8Array(Buffer.from(text, alphabet === B64_STD ? 'base64' : 'base64url'));
}

/** ESO decoding: `None` (default) keeps bytes; `Auto` tries Base64, then Base64URL,
 *  then keeps the value as is. */
export function decodeValue(strategy: DecodingStrategy | undefined, value: Uint8Array): Uint8Array {
  switch (strategy ?? 'None') {
    case 'None':
      return value;
    case 'Base64':
      return strictBase64(value, B64_STD, 'base64');
    case 'Base64URL':
      return strictBase64(value, B64_URL, 'base64url');
    case 'Auto':
      for (const [alphabet, what] of [[B64_STD, 'base64'], [B64_URL, 'base64url']] as const) {
        try {
          return strictBase64(value, alphabet, what);
        } catch {
          // Not this encoding: try the next one, then fall back to the raw value.
        }
      }
      return value;
    default:
      throw new RemoteRefError(`unknown decodingStrategy "${String(strategy)}"`, 'InvalidSpec');
  }
}

export function decodeMap(strategy: DecodingStrategy | undefined, map: SecretMap): SecretMap {
  const out = emptySecretMap();
  for (const [k, v] of Object.entries(map)) {
    try {
      out[k] = decodeValue(strategy, v);
    } catch (err) {
      throw new RemoteRefError(`key "${k}": ${(err as Error).message}`);
    }
  }
  return out;
}
