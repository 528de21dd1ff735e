// The Sprig functions (github.com/Masterminds/sprig/v3, v3.3.0, the version the oracle pins
// in test/support/templating/go-oracle/go.mod) that this engine renders exactly. Each mirrors
// Sprig's source; where Go works on bytes and JavaScript on UTF-16 (offsets into non-ASCII
// text, decoded bytes that are not UTF-8) the function refuses with Unsupported. A function
// of Sprig's set missing here is refused at parse time (refused.ts).
import { createHash } from 'node:crypto';
import { ExecFailure, Unsupported } from './errors.js';
import type { GoFunc, Param } from './exec.js';
import { alloc } from './alloc.js';
import { charged, goQuote } from './builtins.js';
import { toYaml } from './yaml.js';
import { Bytes, empty, entry, formatValue, fromJsonValue, Int64, intOf, isAscii, isBytes, isInt, stringMap, toJson, type Value } from './values.js';

/** ESI's ceiling on `repeat`, as the oracle's (test/support/templating/go-oracle/funcs.go). */
const MAX_REPEAT_BYTES = 16 << 20;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

const f = (params: Param[], fn: GoFunc['fn'], variadic?: Param): GoFunc => ({ params, fn, variadic });
const str = (fn: (s: string) => Value): GoFunc => f(['s'], (s) => fn(s as string));
/** A 'B' parameter's bytes (text as UTF-8). */
const bytesOf = (s: Value): Buffer => (isBytes(s) ? Buffer.from(s.bytes) : Buffer.from(s as string, 'utf8'));


/** sprig's strval: strings as they are, anything else as fmt's %v. */
export function strval(v: Value): string {
  return typeof v === 'string' ? v : formatValue(v);
}

/** cast.ToInt64E (spf13/cast v1.7.0) for the values templates hold; its error is 0. */
export function toInt64(v: Value): bigint {
  if (v === null) return 0n;
  if (isInt(v)) return intOf(v);
  if (typeof v === 'boolean') return v ? 1n : 0n;
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || Math.abs(v) >= 2 ** 63) throw new Unsupported('float to int conversion out of range');
    return BigInt(Math.trunc(v));
  }
  if (typeof v === 'string') {
    const s = trimZeroDecimal(v);
    if (/^[+-]?(0|[1-9][0-9]*)$/.test(s)) {
      const n = BigInt(s);
      return n < INT64_MIN || n > INT64_MAX ? 0n : n;
    }
    // strconv.ParseInt(s, 0, 0) also reads 0x, 0o, 0b, leading-zero octal and underscores.
    if (/^[+-]?0|_/.test(s)) throw new Unsupported('int of text in a syntax beyond decimal');
    return 0n;
  }
  return 0n;
}

function trimZeroDecimal(s: string): string {
  let foundZero = false;
  for (let i = s.length; i > 0; i--) {
    const c = s[i - 1];
    if (c === '.') {
      if (foundZero) return s.slice(0, i - 1);
    } else if (c === '0') foundZero = true;
    else return s;
  }
  return s;
}

/** strings.Split (an empty separator splits into UTF-8 sequences, i.e. characters). */
function split(s: string, sep: string): string[] {
  alloc(sep === '' ? s.length : 1);
  const parts = sep === '' ? [...s] : s.split(sep);
  alloc(parts.length);
  return parts;
}

function strslice(v: Value): string[] {
  if (Array.isArray(v)) return v.filter((x) => x !== null).map(strval);
  if (v === null) return [];
  return [strval(v)];
}

/** Bytes as a Go string: text when they are UTF-8, else values.ts's Bytes (printed as they
 *  are, or given to b64enc, sha1sum, sha256sum; refused anywhere else). */
export function textOrBytes(bytes: Buffer): Value {
  const s = bytes.toString('utf8');
  return Buffer.from(s, 'utf8').equals(bytes) ? s : (new Bytes(new Uint8Array(bytes)) as unknown as Value);
}

/** `s` when it is ASCII (where byte offsets and case mappings agree with JavaScript's). */
function ascii(s: string, what: string): string {
  if (!isAscii(s)) throw new Unsupported(`${what} of non-ASCII text`);
  return s;
}

function indented(p: string, s: string): string {
  const lines = s.split('\n');
  alloc(s.length + lines.length * (p.length + 1));
  return p + lines.join(`\n${p}`);
}

function pad(n: Value): string {
  if (intOf(n as bigint) < 0n) throw new ExecFailure('strings: negative Repeat count');
  if (n as bigint > BigInt(MAX_REPEAT_BYTES)) throw new Unsupported(`indent wider than ${MAX_REPEAT_BYTES} bytes`);
  return ' '.repeat(Number(n));
}

function listOf(v: Value, fn: string): Value[] {
  if (Array.isArray(v)) return v;
  throw new ExecFailure(`Cannot find ${fn} on type`);
}

export const SPRIG: Record<string, GoFunc> = {
  // strings.ToUpper/ToLower follow Unicode's simple case mapping, JavaScript the full one
  // (ß → SS): the same for ASCII only.
  trim: str((s) => s.replace(/^[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+|[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+$/g, '')),
  trimPrefix: f(['s', 's'], (a, b) => ((b as string).startsWith(a as string) ? (b as string).slice((a as string).length) : b)),
  trimSuffix: f(['s', 's'], (a, b) => ((a as string) !== '' && (b as string).endsWith(a as string) ? (b as string).slice(0, -(a as string).length) : b)),
  replace: f(['s', 's', 's'], (o, n, s) => {
    if (o === '') throw new Unsupported('replace of the empty string');
    const parts = (s as string).split(o as string);
    alloc(parts.length + (parts.length - 1) * (n as string).length + (s as string).length);
    return parts.join(n as string);
  }),
  contains: f(['s', 's'], (sub, s) => (s as string).includes(sub as string)),
  hasPrefix: f(['s', 's'], (p, s) => (s as string).startsWith(p as string)),
  hasSuffix: f(['s', 's'], (p, s) => (s as string).endsWith(p as string)),
  quote: f([], (...a) => charged(a.filter((x) => x !== null).map((x) => goQuote(strval(x))).join(' ')), 'a'),
  squote: f([], (...a) => charged(a.filter((x) => x !== null).map((x) => `'${formatValue(x)}'`).join(' ')), 'a'),
  cat: f([], (...a) => charged(a.filter((x) => x !== null).map((x) => formatValue(x)).join(' ')), 'a'),
  indent: f(['i', 's'], (n, s) => {
    const p = pad(n);
    return indented(p, s as string);
  }),
  nindent: f(['i', 's'], (n, s) => {
    return `\n${indented(pad(n), s as string)}`;
  }),
  nospace: str((s) => ascii(s, 'nospace').replace(/[\t\n\v\f\r ]/g, '')),
  repeat: f(['i', 's'], (count, s) => {
    const n = Number(count);
    const len = Buffer.byteLength(s as string);
    if (n > 0 && len > 0 && n > Math.floor(MAX_REPEAT_BYTES / len)) throw new ExecFailure('repeat: the result would exceed the size limit');
    if (n < 0) throw new ExecFailure('strings: negative Repeat count');
    alloc(n * len);
    return (s as string).repeat(n);
  }),
  trunc: f(['i', 's'], (c, s) => {
    ascii(s as string, 'trunc');
    const n = Number(c);
    const t = s as string;
    if (n < 0 && t.length + n > 0) return t.slice(t.length + n);
    if (n >= 0 && t.length > n) return t.slice(0, n);
    return t;
  }),
  b64enc: f(['B'], (s) => charged(bytesOf(s).toString('base64'))),
  b64dec: str((s) => {
    const clean = s.replace(/[\r\n]/g, '');
    if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(clean)) {
      throw new Unsupported('b64dec of text that is not base64');
    }
    return textOrBytes(Buffer.from(clean, 'base64'));
  }),
  sha256sum: f(['B'], (s) => createHash('sha256').update(bytesOf(s)).digest('hex')),
  sha1sum: f(['B'], (s) => createHash('sha1').update(bytesOf(s)).digest('hex')),
  toString: f(['a'], (v) => strval(v)),
  upper: str((s) => charged(ascii(s, 'upper').toUpperCase())),
  lower: str((s) => charged(ascii(s, 'lower').toLowerCase())),
  int: f(['a'], (v) => toInt64(v)),
  int64: f(['a'], (v) => new Int64(toInt64(v))),
  add: f([], (...a) => new Int64(BigInt.asIntN(64, a.reduce<bigint>((s, x) => s + toInt64(x), 0n))), 'a'),
  add1: f(['a'], (v) => new Int64(BigInt.asIntN(64, toInt64(v) + 1n))),
  sub: f(['a', 'a'], (a, b) => new Int64(BigInt.asIntN(64, toInt64(a) - toInt64(b)))),
  mul: f(['a'], (a, ...v) => new Int64(v.reduce<bigint>((p, x) => BigInt.asIntN(64, p * toInt64(x)), toInt64(a))), 'a'),
  splitList: f(['s', 's'], (sep, s) => split(s as string, sep as string)),
  split: f(['s', 's'], (sep, s) => stringMap(split(s as string, sep as string).map((p, i) => [`_${i}`, p]))),
  join: f(['s', 'a'], (sep, v) => charged(strslice(v).join(sep as string))),
  toStrings: f(['a'], (v) => strslice(v)),
  default: f(['a'], (d, ...given) => (given.length === 0 || empty(given[0]!) ? d : given[0]!), 'a'),
  empty: f(['a'], (v) => empty(v)),
  coalesce: f([], (...a) => a.find((x) => !empty(x)) ?? null, 'a'),
  ternary: f(['a', 'a', 'b'], (t, e, c) => (c ? t : e)),
  list: f([], (...a) => a, 'a'),
  dict: f([], (...a) => {
    const m = new Map<string, Value>();
    for (let i = 0; i < a.length; i += 2) m.set(strval(a[i]!), i + 1 < a.length ? a[i + 1]! : '');
    return m;
  }, 'a'),
  get: f(['m', 's'], (d, k) => ((d as Map<string, Value> | null)?.has(k as string) ? entry(d as Map<string, Value>, k as string) : '')),
  hasKey: f(['m', 's'], (d, k) => (d as Map<string, Value> | null)?.has(k as string) ?? false),
  first: f(['a'], (l) => listOf(l, 'first')[0] ?? null),
  last: f(['a'], (l) => listOf(l, 'last').at(-1) ?? null),
  toJson: f(['a'], (v) => toJson(v)),
  toPrettyJson: f(['a'], (v) => toJson(v, '  ')),
  toYaml: f(['a'], (v) => toYaml(v)),
  fromJson: str((s) => {
    try {
      return fromJsonValue(JSON.parse(s));
    } catch (e) {
      if (e instanceof Unsupported) throw e;
      return null;
    }
  }),
};
