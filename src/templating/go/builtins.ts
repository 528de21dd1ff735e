// text/template's own functions (its funcs.go in Go's source): and, or, not, len, index, print,
// printf, println, eq, ne, lt, le, gt, ge, html, js, urlquery, call. `slice` is left to Go.
import { alloc } from './alloc.js';
import { ExecFailure, Unsupported } from './errors.js';
import type { GoFunc } from './exec.js';
import { compareStrings, entryOrBytes, formatValue, intOf, isInt, isStringMap, sprint, truth, type Value } from './values.js';

type Kind = 'bool' | 'int' | 'float' | 'string';

function basicKind(v: Value): Kind | undefined {
  if (typeof v === 'boolean') return 'bool';
  if (isInt(v)) return 'int';
  if (typeof v === 'number') return 'float';
  if (typeof v === 'string') return 'string';
  return undefined;
}

function eq(a: Value, ...rest: Value[]): boolean {
  if (rest.length === 0) throw new ExecFailure('missing argument for comparison');
  const k1 = basicKind(a);
  if (!k1) throw new Unsupported('eq of a value that is not a bool, number or string');
  for (const b of rest) {
    const k2 = basicKind(b);
    if (!k2) throw new Unsupported('eq of a value that is not a bool, number or string');
    if (k1 !== k2) throw new ExecFailure('incompatible types for comparison');
    if (k1 === 'int' ? intOf(a as bigint) === intOf(b as bigint) : a === b) return true;
  }
  return false;
}

function lt(a: Value, b: Value): boolean {
  const k1 = basicKind(a);
  const k2 = basicKind(b);
  if (!k1 || !k2 || k1 === 'bool' || k2 === 'bool') throw new ExecFailure('invalid type for comparison');
  if (k1 !== k2) throw new ExecFailure('incompatible types for comparison');
  if (k1 === 'int') return intOf(a as bigint) < intOf(b as bigint);
  if (k1 === 'string') return compareStrings(a as string, b as string) < 0;
  return (a as number) < (b as number);
}

function index(item: Value, ...indexes: Value[]): Value {
  if (item === null) throw new ExecFailure('index of untyped nil');
  for (const i of indexes) {
    if (Array.isArray(item)) {
      if (!isInt(i)) throw new ExecFailure('cannot index slice/array with this type');
      const x = intOf(i);
      if (x < 0n || x >= BigInt(item.length)) throw new ExecFailure('index out of range');
      item = item[Number(x)]!;
    } else if (item instanceof Map) {
      if (typeof i !== 'string') throw new ExecFailure('value has type; should be string');
      item = item.has(i) ? entryOrBytes(item, i) : isStringMap(item) ? '' : null;
    } else if (typeof item === 'string') {
      throw new Unsupported('index of a string (its bytes)');
    } else throw new ExecFailure("can't index item");
  }
  return item;
}

function length(v: Value): Value {
  if (typeof v === 'string') return BigInt(Buffer.byteLength(v));
  if (Array.isArray(v)) return BigInt(v.length);
  if (v instanceof Map) return BigInt(v.size);
  throw new ExecFailure('len of this type');
}

/** Go's unicode.IsPrint, close enough for strconv.Quote on text (letters, marks,
 *  numbers, punctuation, symbols and the ASCII space). */
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

/** strconv.Quote (fmt's %q of a string). */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (PRINTABLE.test(ch)) out += ch;
    else if (ch === '\x07') out += '\\a';
    else if (ch === '\b') out += '\\b';
    else if (ch === '\f') out += '\\f';
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\v') out += '\\v';
    else if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else if (cp < 0x10000) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += `\\U${cp.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}

/** fmt.Sprintf for the verbs templates use with the types they apply them to (%s %v %d %q
 *  and %%, no flags or widths); anything else is left to Go. */
export function sprintf(format: string, args: Value[]): string {
  let out = '';
  let next = 0;
  for (let i = 0; i < format.length; i++) {
    const c = format[i]!;
    if (c !== '%') {
      out += c;
      continue;
    }
    const verb = format[++i];
    if (verb === '%') {
      out += '%';
      continue;
    }
    if (next >= args.length) throw new Unsupported('printf with a missing argument');
    const a = args[next++]!;
    if (verb === 'v' && a !== null) out += formatValue(a);
    else if (verb === 's' && typeof a === 'string') out += a;
    else if (verb === 'd' && isInt(a)) out += intOf(a).toString();
    else if (verb === 'q' && typeof a === 'string') out += goQuote(a);
    else throw new Unsupported(`printf verb %${verb ?? ''} with this argument`);
  }
  if (next !== args.length) throw new Unsupported('printf with extra arguments');
  return out;
}

/** text/template's evalArgs: one string as is, otherwise Sprint (nil is "<no value>"). */
function evalArgs(args: Value[]): string {
  if (args.length === 1 && typeof args[0] === 'string') return args[0];
  return sprint(args.map((a) => (a === null ? '<no value>' : a)));
}

const HTML: Record<string, string> = { '\0': '\uFFFD', '"': '&#34;', "'": '&#39;', '&': '&amp;', '<': '&lt;', '>': '&gt;' };
const JS: Record<string, string> = { '\\': '\\\\', "'": "\\'", '"': '\\"', '<': '\\u003C', '>': '\\u003E', '&': '\\u0026', '=': '\\u003D' };

function jsEscape(s: string): string {
  let out = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (JS[ch]) out += JS[ch];
    else if (cp < 0x20) out += `\\u00${cp.toString(16).toUpperCase().padStart(2, '0')}`;
    else if (cp < 0x80 || PRINTABLE.test(ch)) out += ch;
    else out += `\\u${cp.toString(16).toUpperCase().padStart(4, '0')}`;
  }
  return out;
}

/** url.QueryEscape. */
function queryEscape(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const ch = String.fromCharCode(b);
    if (/[A-Za-z0-9\-_.~]/.test(ch)) out += ch;
    else if (ch === ' ') out += '+';
    else out += `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** `s`, its length charged to the render's allocation. */
export function charged(s: string): string {
  alloc(s.length);
  return s;
}

const f = (params: GoFunc['params'], fn: GoFunc['fn'], variadic?: GoFunc['params'][number]): GoFunc => ({ params, fn, variadic });

export const BUILTINS: Record<string, GoFunc> = {
  and: f(['r'], () => null, 'r'),
  or: f(['r'], () => null, 'r'),
  not: f(['r'], (v) => !truth(v)),
  len: f(['r'], length),
  index: f(['r'], index, 'r'),
  print: f([], (...a) => sprint(a), 'a'),
  println: f([], (...a) => charged(`${a.map((x) => formatValue(x)).join(' ')}\n`), 'a'),
  printf: f(['s'], (format, ...a) => charged(sprintf(format as string, a)), 'a'),
  eq: f(['r'], eq, 'r'),
  ne: f(['r', 'r'], (a, b) => !eq(a, b)),
  lt: f(['r', 'r'], lt),
  le: f(['r', 'r'], (a, b) => lt(a, b) || eq(a, b)),
  gt: f(['r', 'r'], (a, b) => !(lt(a, b) || eq(a, b))),
  ge: f(['r', 'r'], (a, b) => !lt(a, b)),
  html: f([], (...a) => charged(evalArgs(a)).replace(/[\0"'&<>]/g, (c) => HTML[c]!), 'a'),
  js: f([], (...a) => charged(jsEscape(evalArgs(a))), 'a'),
  urlquery: f([], (...a) => charged(queryEscape(evalArgs(a))), 'a'),
  // The data holds no functions: every call fails, as in Go.
  call: f(['r'], () => {
    throw new ExecFailure('call of a non-function');
  }, 'r'),
};
