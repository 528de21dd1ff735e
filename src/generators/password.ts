// ESO's Password generator rules (docs/generators.md): `length` characters of which
// `digits` are digits and `symbols` are drawn from `symbolCharacters`, the rest letters
// (lowercase only with `noUpper`); without `allowRepeat` no character appears twice.
// Digits and symbols land at random positions. Randomness is node:crypto's (randomInt is
// uniform, no modulo bias). Sizes are bounded; every error names the rule, never a value.
import { randomInt } from 'node:crypto';
import type { PasswordEncoding, PasswordSpec } from '../api/generators.js';
import { PASSWORD_ENCODINGS } from '../api/generators.js';
import { GeneratorError } from './errors.js';
import { base32 } from '../base32.js';

const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const DIGITS = '0123456789';
/** ESO's default symbol set. */
export const DEFAULT_SYMBOLS = '~!@#$%^&*()_+`-={}|[]\\:"<>?,./';
const DEFAULT_LENGTH = 24;
/** Bounds: a password of up to 1 KiB, up to 64 keys, a symbol set of up to 256 characters. */
export const MAX_LENGTH = 1024;
const MAX_KEYS = 64;
const MAX_SYMBOL_CHARACTERS = 256;

interface Rules {
  length: number;
  digits: number;
  symbols: number;
  symbolSet: string[];
  letters: string[];
  allowRepeat: boolean;
}

function count(v: unknown, what: string, fallback: number): number {
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > MAX_LENGTH) throw new GeneratorError(`spec.${what} must be an integer from 0 to ${MAX_LENGTH}`);
  return v;
}

/** The spec's rules with ESO's defaults, checked; throws GeneratorError. */
function passwordRules(spec: PasswordSpec = {}): Rules {
  const length = count(spec.length, 'length', DEFAULT_LENGTH);
  if (length === 0) throw new GeneratorError('spec.length must be at least 1');
  // ESO: digits and symbols default to a quarter of the length each.
  const digits = count(spec.digits, 'digits', Math.floor(length * 0.25));
  const symbols = count(spec.symbols, 'symbols', Math.floor(length * 0.25));
  const chars = spec.symbolCharacters ?? DEFAULT_SYMBOLS;
  if (typeof chars !== 'string' || [...chars].length > MAX_SYMBOL_CHARACTERS) throw new GeneratorError(`spec.symbolCharacters must be a string of at most ${MAX_SYMBOL_CHARACTERS} characters`);
  const symbolSet = [...new Set(chars)];
  if (symbols > 0 && symbolSet.length === 0) throw new GeneratorError('spec.symbols is above 0 but spec.symbolCharacters is empty');
  if (digits + symbols > length) throw new GeneratorError(`spec.digits (${digits}) + spec.symbols (${symbols}) exceed spec.length (${length})`);
  const letters = [...(spec.noUpper ? LOWER : LOWER + UPPER)];
  const allowRepeat = spec.allowRepeat === true;
  if (!allowRepeat) {
    const need = (n: number, have: number, what: string) => {
      if (n > have) throw new GeneratorError(`${n} ${what} without repeats, but only ${have} are available (set spec.allowRepeat: true)`);
    };
    need(length - digits - symbols, letters.length, 'letters');
    need(digits, DIGITS.length, 'digits');
    need(symbols, symbolSet.length, 'distinct symbols');
  }
  if (spec.encoding !== undefined && !PASSWORD_ENCODINGS.includes(spec.encoding)) throw new GeneratorError(`spec.encoding must be one of ${PASSWORD_ENCODINGS.join(', ')}`);
  return { length, digits, symbols, symbolSet, letters, allowRepeat };
}

/** A random member of `set` not yet in `used` (unless repeats are allowed). */
function pick(set: string[], used: Set<string>, allowRepeat: boolean): string {
  const pool = allowRepeat ? set : set.filter((c) => !used.has(c));
  // passwordRules bounded the counts by the set sizes; a symbol set overlapping the letters
  // or digits can still run dry, and that is the spec's error, not an endless loop.
  if (pool.length === 0) throw new GeneratorError('not enough distinct characters: spec.symbolCharacters overlaps letters or digits (set spec.allowRepeat: true)');
  const c = pool[randomInt(pool.length)]!;
  used.add(c);
  return c;
}

/** One password following `rules`. */
function generatePassword(rules: Rules): string {
  const used = new Set<string>();
  const out: string[] = [];
  for (let i = 0; i < rules.length - rules.digits - rules.symbols; i++) out.push(pick(rules.letters, used, rules.allowRepeat));
  const insert = (c: string) => out.splice(randomInt(out.length + 1), 0, c);
  for (let i = 0; i < rules.digits; i++) insert(pick([...DIGITS], used, rules.allowRepeat));
  for (let i = 0; i < rules.symbols; i++) insert(pick(rules.symbolSet, used, rules.allowRepeat));
  return out.join('');
}

/** The password as `encoding` writes it (RFC 4648 alphabets, padded). */
export function encodePassword(password: string, encoding: PasswordEncoding = 'raw'): string {
  const bytes = Buffer.from(password, 'utf8');
  switch (encoding) {
    case 'raw': return password;
    case 'base64': return bytes.toString('base64');
    case 'base64url': return bytes.toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
    case 'base32': return base32(bytes);
    case 'hex': return bytes.toString('hex');
  }
}

/** ESO's Password generator: one distinct password per key of `secretKeys` (`password`). */
export function passwords(spec: PasswordSpec = {}): Record<string, string> {
  const rules = passwordRules(spec);
  const keys = spec.secretKeys ?? ['password'];
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > MAX_KEYS) throw new GeneratorError(`spec.secretKeys must list 1 to ${MAX_KEYS} keys`);
  const out: Record<string, string> = {};
  for (const k of keys) out[k] = encodePassword(generatePassword(rules), spec.encoding);
  return out;
}
