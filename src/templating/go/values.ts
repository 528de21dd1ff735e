// Go values as this engine holds them, and Go's ways of printing them.
//   string → string        bool → boolean          int → bigint       int64 → Int64
//   float64 → number       nil → null              []T → array        map[string]T → Map
// The template's data (map[string]string) and Sprig's `split` result are Maps marked as
// string maps: Go's functions that take map[string]interface{} refuse them.
import { alloc } from './alloc.js';
import { Unsupported } from './errors.js';

export class Int64 {
  constructor(readonly v: bigint) {}
}

export type Value = string | boolean | bigint | Int64 | number | null | Value[] | Map<string, Value>;

const stringMaps = new WeakSet<Map<string, Value>>();

export function stringMap(entries: Iterable<[string, Value]>): Map<string, Value> {
  const m = new Map<string, Value>(entries);
  stringMaps.add(m);
  return m;
}

/** A data value that is not UTF-8 (a keystore, a DER certificate): Go's string holds the
 *  bytes, a JavaScript string cannot. It is held as its bytes, and only where the bytes
 *  cannot be misread: printed as they are (`{{ .p12 }}`, `{{ index . "k.p12" }}`), tested by
 *  `if`/`with`, and given to the functions that take them (b64enc, sha1sum, sha256sum:
 *  parameter kind 'B', exec.ts). Anything else refuses the template. */
export class Bytes {
  constructor(readonly bytes: Uint8Array) {}
}

export const isBytes = (v: unknown): v is Bytes => v instanceof Bytes;

export const NOT_UTF8_USE = 'a data value that is not UTF-8, other than printed as it is or given to b64enc, sha1sum or sha256sum';

/** m[k] (present), refusing a data value that is not UTF-8. */
export function entry(m: Map<string, Value>, k: string): Value {
  const v = m.get(k)!;
  if (isBytes(v)) throw new Unsupported(NOT_UTF8_USE);
  return v;
}

/** m[k] (present) as a field or `index` reads it: bytes stay bytes, for the checks of exec.ts. */
export function entryOrBytes(m: Map<string, Value>, k: string): Value {
  return m.get(k)!;
}

/** Only ASCII: where Go's byte offsets and case mappings agree with JavaScript's. */
export function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

export const isStringMap = (v: Value): boolean => v instanceof Map && stringMaps.has(v);

const nilLists = new WeakSet<Value[]>();

/** Go's nil slice (what FindAllString and Split return for no result): it prints and
 *  ranges as an empty list, but encoding/json writes it as `null`. */
export function nilList(): Value[] {
  const l: Value[] = [];
  nilLists.add(l);
  return l;
}

export const isNilList = (v: Value): boolean => Array.isArray(v) && nilLists.has(v);
export const isInt = (v: Value): v is bigint | Int64 => typeof v === 'bigint' || v instanceof Int64;
export const intOf = (v: bigint | Int64): bigint => (typeof v === 'bigint' ? v : v.v);

/** Go's type name, for the few places a message or a check needs it. */
export function typeName(v: Value): string {
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'bigint') return 'int';
  if (v instanceof Int64) return 'int64';
  if (typeof v === 'number') return 'float64';
  if (v === null) return 'nil';
  if (Array.isArray(v)) return 'slice';
  return isStringMap(v) ? 'map[string]string' : 'map[string]interface {}';
}

/** text/template's truth: zero values and empty collections are false. */
export function truth(v: Value | undefined): boolean {
  if (v === null || v === undefined) return false;
  if (isBytes(v)) return v.bytes.length > 0;
  if (typeof v === 'string') return v.length > 0;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'bigint') return v !== 0n;
  if (v instanceof Int64) return v.v !== 0n;
  if (typeof v === 'number') return v !== 0;
  if (Array.isArray(v)) return v.length > 0;
  return v.size > 0;
}

/** Sprig's empty: text/template's truth, negated (`default`, `empty`, `coalesce`, `compact`). */
export function empty(v: Value): boolean {
  return !truth(v);
}

/** Keys in Go's order (fmt and range sort string keys bytewise). */
export function sortedKeys(m: Map<string, Value>): string[] {
  return [...m.keys()].sort(compareStrings);
}

/** Bytewise (UTF-8) order, as Go compares strings. */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  // UTF-16 order differs from UTF-8 order only around surrogates; compare by code point.
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done || y.done) return x.done && y.done ? 0 : x.done ? -1 : 1;
    const d = x.value.codePointAt(0)! - y.value.codePointAt(0)!;
    if (d !== 0) return d;
  }
}

/** strconv.FormatFloat(f, 'g', -1, 64), which is fmt's %v for float64. */
export function formatFloat(f: number): string {
  if (Number.isNaN(f)) return 'NaN';
  if (f === Infinity) return '+Inf';
  if (f === -Infinity) return '-Inf';
  if (f === 0) return Object.is(f, -0) ? '-0' : '0';
  const [mant, expText] = f.toExponential().split('e') as [string, string];
  const exp = Number(expText);
  // Shortest precision: %e when the exponent is < -4 or >= 6 (strconv's rule for 'g', -1).
  if (exp < -4 || exp >= 6) {
    const e = Math.abs(exp);
    return `${mant}e${exp < 0 ? '-' : '+'}${e < 10 ? '0' : ''}${e}`;
  }
  // Plain decimal: JS prints these the same way for exponents in [-4, 6).
  return String(f);
}

/** fmt's %v (and Sprint of one operand). `top` is text/template's printing of a pipeline's
 *  result, where nil is "<no value>". */
export function formatValue(v: Value, top = false): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Int64) return v.v.toString();
  if (typeof v === 'number') return formatFloat(v);
  if (v === null) return top ? '<no value>' : '<nil>';
  // Charged as built (post-order): nested values sharing parts cannot grow unbounded.
  const out = Array.isArray(v) ? `[${v.map((x) => formatValue(x)).join(' ')}]` : `map[${sortedKeys(v).map((k) => `${k}:${formatValue(entry(v, k))}`).join(' ')}]`;
  alloc(out.length);
  return out;
}

/** fmt.Sprint(args...): a space between operands when neither is a string. */
export function sprint(args: Value[]): string {
  let out = '';
  args.forEach((a, i) => {
    if (i > 0 && typeof a !== 'string' && typeof args[i - 1] !== 'string') out += ' ';
    out += formatValue(a);
  });
  alloc(out.length);
  return out;
}

/** A JSON document (from fromJson) as Go's encoding/json decodes it into interface{}. */
export function fromJsonValue(x: unknown): Value {
  if (typeof x === 'number' && !Number.isFinite(x)) throw new Unsupported('a JSON number out of float64 range');
  if (x === null || typeof x === 'string' || typeof x === 'boolean' || typeof x === 'number') return x;
  if (Array.isArray(x)) return x.map(fromJsonValue);
  const m = new Map<string, Value>();
  for (const [k, v] of Object.entries(x as object)) m.set(k, fromJsonValue(v));
  return m;
}

const JSON_ESCAPES: Record<string, string> = { '"': '\\"', '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };

/** encoding/json's string encoding: HTML characters and U+2028/9 escaped as \u00XX. */
export function jsonString(s: string): string {
  // eslint-disable-next-line no-control-regex
  return `"${s.replace(/["\\\u0000-\u001f<>&\u2028\u2029]/g, (c) => JSON_ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}"`;
}

/** encoding/json's float64: 'f' format unless the exponent is < -6 or >= 21, which is
 *  exactly JavaScript's number printing (same thresholds, shortest digits, "1e-7"). */
function jsonFloat(f: number): string {
  if (!Number.isFinite(f)) throw new Unsupported('toJson of a non-finite float');
  return Object.is(f, -0) ? '-0' : String(f);
}

/** json.Marshal (indent: json.MarshalIndent with "" and `indent`). */
export function toJson(v: Value, indent = '', depth = 0): string {
  const out = json(v, indent, depth);
  alloc(out.length);
  return out;
}

function json(v: Value, indent: string, depth: number): string {
  if (typeof v === 'string') return jsonString(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (isInt(v)) return intOf(v).toString();
  if (typeof v === 'number') return jsonFloat(v);
  if (v === null) return 'null';
  const nl = indent ? `\n${indent.repeat(depth + 1)}` : '';
  const close = indent ? `\n${indent.repeat(depth)}` : '';
  if (Array.isArray(v)) return isNilList(v) ? 'null' : v.length === 0 ? '[]' : `[${nl}${v.map((x) => toJson(x, indent, depth + 1)).join(`,${nl}`)}${close}]`;
  if (v.size === 0) return '{}';
  const sep = indent ? ': ' : ':';
  return `{${nl}${sortedKeys(v).map((k) => `${jsonString(k)}${sep}${toJson(entry(v, k), indent, depth + 1)}`).join(`,${nl}`)}${close}}`;
}
