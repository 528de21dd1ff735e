// ESO's key rules for the keys an ExternalSecret produces: `conversionStrategy` and
// what a valid Secret data key (and so an agent file name) is.
import type { ConversionStrategy } from '../api/types.js';
import { emptySecretMap, type SecretMap } from '../providers/types.js';

const KEY_CHAR = /[\p{L}\p{N}._-]/u;

/** ESO key conversion: characters other than letters, digits, `-`, `.`, `_` become `_`
 *  (`Default`) or `_U<hex4>_` (`Unicode`). */
export function convertKey(strategy: ConversionStrategy | undefined, key: string): string {
  let out = '';
  for (const ch of key) {
    if (KEY_CHAR.test(ch)) out += ch;
    else if (strategy === 'Unicode') out += `_U${ch.codePointAt(0)!.toString(16).padStart(4, '0')}_`;
    else out += '_';
  }
  return out;
}

export function convertKeys(strategy: ConversionStrategy | undefined, map: SecretMap): SecretMap {
  const out = emptySecretMap();
  for (const [k, v] of Object.entries(map)) out[convertKey(strategy, k)] = v;
  return out;
}

/** A valid Secret data key (and therefore a valid file name for the agent). */
export function isValidSecretKey(key: string): boolean {
  return key.length > 0 && key.length <= 253 && /^[-._a-zA-Z0-9]+$/.test(key) && key !== '.' && key !== '..';
}
