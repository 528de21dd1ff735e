// ESO's `conversionStrategy` for the keys a `dataFrom` entry produces. Here, below both
// the providers and src/externalsecret/, because ESO applies it in two places: the
// fake, gcpsm and kubernetes providers convert the keys `find` returns themselves (so a
// `rewrite` sees converted keys), and the ExternalSecret logic converts when no rewrite
// is given (src/externalsecret/fetch.ts). Converting twice changes nothing.
import type { ConversionStrategy } from '../api/types.js';
import { emptySecretMap, type SecretMap } from './types.js';

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

/** What a provider's `find` returns (ESO's fake, gcpsm, kubernetes): keys converted with
 *  the strategy the ExternalSecret asked for; none asked (a direct call) = unchanged. */
export function convertFoundKeys(strategy: ConversionStrategy | undefined, map: SecretMap): SecretMap {
  return strategy ? convertKeys(strategy, map) : map;
}

export function convertKeys(strategy: ConversionStrategy | undefined, map: SecretMap): SecretMap {
  const out = emptySecretMap();
  for (const [k, v] of Object.entries(map)) out[convertKey(strategy, k)] = v;
  return out;
}
