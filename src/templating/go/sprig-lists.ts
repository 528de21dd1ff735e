// More Sprig functions (v3.3.0; see sprig.ts): lists, encodings, numbers, the ASCII forms
// of byte-offset and case functions, `fail`, and ESO's `hexdec`. Same rule: exact or
// Unsupported.
import { base32 } from '../../base32.js';
import { alloc, tick } from './alloc.js';
import { ExecFailure, Unsupported } from './errors.js';
import type { GoFunc, Param } from './exec.js';
import { textOrBytes } from './sprig.js';
import { compareStrings, empty, formatValue, intOf, isAscii, isInt, isNilList, isStringMap, stringMap, type Value } from './values.js';

/** ESI's ceiling on until/untilStep, as the oracle's (test/support/templating/go-oracle/funcs.go). */
const MAX_LIST_ITEMS = 1_000_000;
/** uniq compares every pair (reflect.DeepEqual): longer lists are Go's, bounded there. */
const MAX_UNIQ = 2000;

const f = (params: Param[], fn: GoFunc['fn'], variadic?: Param): GoFunc => ({ params, fn, variadic });

function ascii(s: string, what: string): string {
  if (!isAscii(s)) throw new Unsupported(`${what} of non-ASCII text`);
  return s;
}

const strval = (v: Value): string => (typeof v === 'string' ? v : formatValue(v));

function list(v: Value, fn: string): Value[] {
  if (Array.isArray(v)) return v;
  throw new ExecFailure(`Cannot find ${fn} on type`);
}

/** reflect.DeepEqual over the values templates hold (types included: 1 ≠ 1.0). */
function deepEqual(a: Value, b: Value): boolean {
  if (isInt(a) || isInt(b)) return isInt(a) && isInt(b) && typeof a === typeof b && intOf(a) === intOf(b);
  if (Array.isArray(a)) return Array.isArray(b) && isNilList(a) === isNilList(b) && a.length === b.length && a.every((x, i) => deepEqual(x, b[i]!));
  if (a instanceof Map) {
    if (!(b instanceof Map) || isStringMap(a) !== isStringMap(b) || a.size !== b.size) return false;
    for (const [k, v] of a) if (!b.has(k) || !deepEqual(v, b.get(k)!)) return false;
    return true;
  }
  return a === b;
}

function untilStep(start: bigint, stop: bigint, step: bigint, fn: string): Value {
  const count = step === 0n ? 0n : (stop - start) / step;
  if ((count < 0n ? -count : count) > BigInt(MAX_LIST_ITEMS)) throw new ExecFailure(`${fn}: at most ${MAX_LIST_ITEMS} items`);
  alloc(Number(count < 0n ? -count : count));
  const out: Value[] = [];
  if (stop < start) {
    if (step >= 0n) return out;
    for (let i = start; i > stop; i += step) if (out.push(i) % 65536 === 0) tick();
    return out;
  }
  if (step <= 0n) return out;
  for (let i = start; i < stop; i += step) if (out.push(i) % 65536 === 0) tick();
  return out;
}

function alloc8(s: string): string {
  alloc(s.length);
  return s;
}

function adler32(bytes: Buffer): number {
  let a = 1;
  let b = 0;
  for (const x of bytes) {
    a = (a + x) % 65521;
    b = (b + a) % 65521;
  }
  return ((b << 16) | a) >>> 0;
}

/** strings.Trim(s, cutset). */
function trimSet(s: string, cutset: string): string {
  const set = new Set(cutset);
  const chars = [...s];
  let i = 0;
  let j = chars.length;
  while (i < j && set.has(chars[i]!)) i++;
  while (j > i && set.has(chars[j - 1]!)) j--;
  return chars.slice(i, j).join('');
}

/** strings.SplitN. */
function splitN(s: string, sep: string, n: number): string[] {
  if (n === 0) return [];
  const parts = sep === '' ? [...s] : s.split(sep);
  if (n < 0 || parts.length <= n) return parts;
  if (sep === '') return [...parts.slice(0, n - 1), parts.slice(n - 1).join('')];
  return [...parts.slice(0, n - 1), parts.slice(n - 1).join(sep)];
}

const goSlice = (s: string, from: number, to: number): string => {
  if (from < 0 || to > s.length || from > to) throw new ExecFailure('slice bounds out of range');
  return s.slice(from, to);
};

export const SPRIG_MORE: Record<string, GoFunc> = {
  trimAll: f(['s', 's'], (a, b) => trimSet(b as string, a as string)),
  substr: f(['i', 'i', 's'], (start, end, s) => {
    const t = ascii(s as string, 'substr');
    const [a, b] = [Number(start), Number(end)];
    if (a < 0) return goSlice(t, 0, b);
    if (b < 0 || b > t.length) return goSlice(t, a, t.length);
    return goSlice(t, a, b);
  }),
  abbrev: f(['i', 's'], (w, s) => {
    const width = Number(w);
    const t = s as string;
    if (width < 4 || t === '') return t;
    ascii(t, 'abbrev');
    return t.length <= width ? t : `${t.slice(0, width - 3)}...`;
  }),
  title: f(['s'], (s) => ascii(s as string, 'title').replace(/(^|[^0-9A-Za-z_])([a-z])/g, (_m, p: string, c: string) => p + c.toUpperCase())),
  untitle: f(['s'], (s) => ascii(s as string, 'untitle').replace(/(^|[\t\n\v\f\r ])([A-Z])/g, (_m, p: string, c: string) => p + c.toLowerCase())),
  b32enc: f(['s'], (s) => alloc8(base32(Buffer.from(s as string, 'utf8')))),
  adler32sum: f(['s'], (s) => String(adler32(Buffer.from(s as string, 'utf8')))),
  float64: f(['a'], (v) => {
    if (typeof v === 'number') return v;
    if (isInt(v)) return Number(intOf(v));
    if (v === null) return 0;
    if (typeof v === 'boolean') return v ? 1 : 0;
    if (typeof v === 'string') {
      if (/^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$/.test(v) && !/^[+-]?0[0-9]/.test(v)) {
        const n = Number(v);
        if (Number.isFinite(n)) return n;
      }
      if (/^[+-]?[A-Za-z ]*$/.test(v) && !/^[+-]?(inf|infinity|nan)$/i.test(v)) return 0;
      throw new Unsupported('float64 of text in this number syntax');
    }
    return 0;
  }),
  sortAlpha: f(['a'], (v) => {
    if (!Array.isArray(v)) return [strval(v)];
    return v.filter((x) => x !== null).map(strval).sort(compareStrings);
  }),
  uniq: f(['a'], (v) => {
    const l = list(v, 'uniq');
    if (l.length > MAX_UNIQ) throw new Unsupported('uniq of a long list');
    const out: Value[] = [];
    for (const x of l) if (!out.some((y) => deepEqual(x, y))) out.push(x);
    return out;
  }),
  compact: f(['a'], (v) => list(v, 'compact').filter((x) => !empty(x))),
  kindOf: f(['a'], (v) => {
    if (v === null) return 'invalid';
    if (typeof v === 'string') return 'string';
    if (typeof v === 'boolean') return 'bool';
    if (typeof v === 'bigint') return 'int';
    if (isInt(v)) return 'int64';
    if (typeof v === 'number') return 'float64';
    return Array.isArray(v) ? 'slice' : 'map';
  }),
  until: f(['i'], (n) => untilStep(0n, n as bigint, (n as bigint) < 0n ? -1n : 1n, 'until')),
  untilStep: f(['i', 'i', 'i'], (a, b, c) => untilStep(a as bigint, b as bigint, c as bigint, 'untilStep')),
  // Go fails the template with the text (text/template's "error calling fail: …"); worded
  // by ESI, redacted by the entry point as every failure is.
  fail: f(['s'], (s) => {
    throw new ExecFailure(`error calling fail: ${s as string}`);
  }),
  // ESO's hexdec (test/support/templating/go-oracle/eso_helpers.go): Go's hex.DecodeString.
  hexdec: f(['s'], (s) => {
    if (!/^(?:[0-9A-Fa-f]{2})*$/.test(s as string)) throw new ExecFailure('error calling hexdec: hexdec: the input is not hexadecimal');
    return textOrBytes(Buffer.from(alloc8(s as string), 'hex'));
  }),
  splitn: f(['s', 'i', 's'], (sep, n, s) => stringMap(splitN(alloc8(s as string), sep as string, Number(n)).map((p, i) => [`_${i}`, p]))),
};
