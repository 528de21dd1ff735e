// Sprig's regular-expression functions (regex.go, v3.3.0: regexMatch, regexFind,
// regexFindAll, regexReplaceAll, regexReplaceAllLiteral, regexSplit, regexQuoteMeta and
// their must* forms) and its `slice` (list.go). Go's regexp is RE2; so is re2js, the
// project's RE2 engine (src/providers/regexp.ts holds Go's match and replace loops on top
// of it, one implementation for ESO's API fields and for templates). Exact or Unsupported,
// as the rest of this engine (docs/decisions/0087-templating-engines.md):
//   - a pattern re2js does not compile is refused (regexMatch's `false` included: the two
//     parsers differ at the edges, duplicate group names);
//   - Unicode classes (\p) and case folding ((?i)) follow Unicode tables whose versions
//     may differ: only on ASCII text;
//   - cost: a pattern's program is bounded before and after compiling, and each search
//     scans at most MAX_SEARCH program-steps × characters (re2js cannot be interrupted
//     mid-search); between searches the render's deadline is checked.
import type { RE2JS } from 're2js';
import { compileRe2, expandGo, goAllMatches, goReplaceAll } from '../../providers/regexp.js';
import { alloc, tick } from './alloc.js';
import { ExecFailure, Unsupported } from './errors.js';
import type { GoFunc, Param } from './exec.js';
import { toInt64 } from './sprig.js';
import { isAscii, nilList, type Value } from './values.js';

/** Instructions of a compiled pattern (RE2's repeat limit of 1000 keeps ordinary ones far
 *  below; `[a-z]{1000}` is 1002). */
const MAX_PROGRAM = 20_000;
/** Program size × characters scanned by one search: tens of milliseconds in re2js. */
const MAX_SEARCH = 1 << 24;
const CACHE_SIZE = 128;
const cache = new Map<string, { re: RE2JS; size: number } | Unsupported>();

/** Where the character class opening at `i` closes (RE2's syntax: a leading `]` is a
 *  member, `[:name:]` and escapes are skipped whole). */
function classEnd(p: string, i: number): number {
  let j = i + 1;
  if (p[j] === '^') j++;
  if (p[j] === ']') j++;
  while (j < p.length) {
    if (p[j] === '\\') j = escapeEnd(p, j);
    else if (p.startsWith('[:', j) && p.indexOf(':]', j + 2) > 0) j = p.indexOf(':]', j + 2) + 2;
    else if (p[j] === ']') return j + 1;
    else j++;
  }
  return p.length;
}

/** Where the escape at `i` ends (`\x{…}`, `\p{…}`, `\Q…\E` whole). */
function escapeEnd(p: string, i: number): number {
  if (p[i + 1] === 'Q') {
    const e = p.indexOf('\\E', i + 2);
    return e < 0 ? p.length : e + 2;
  }
  if (/^[xpP]\{/.test(p.slice(i + 1, i + 3))) {
    const e = p.indexOf('}', i + 3);
    return e < 0 ? p.length : e + 1;
  }
  return Math.min(p.length, i + 2);
}

/** An upper bound of the instructions RE2 compiles `pattern` to, read from its text: at
 *  most 2 per character of an atom (a character, an escape, a class), 2 per group, and a
 *  counted repetition multiplies what it repeats. Bounds the compile before it runs. */
export function estimatedProgram(p: string): number {
  const groups = [0];
  let last = 0;
  for (let i = 0; i < p.length; ) {
    const start = i;
    const c = p[i]!;
    if (c === '(') {
      groups.push(0);
      last = 0;
      i++;
      continue;
    }
    if (c === ')') {
      last = (groups.length > 1 ? groups.pop()! : 0) + 2;
      groups[groups.length - 1]! += last;
      i++;
      continue;
    }
    const rep = c === '{' ? /^\{(\d+)(?:,(\d*))?\}/.exec(p.slice(i, i + 24)) : null;
    if (rep) {
      const times = Math.max(Number(rep[1]), rep[2] === undefined ? 0 : rep[2] === '' ? Number(rep[1]) + 1 : Number(rep[2]), 1);
      const grown = (last + 1) * Math.min(times, 1000);
      groups[groups.length - 1]! += grown - last;
      last = grown;
      i += rep[0].length;
      continue;
    }
    i = c === '\\' ? escapeEnd(p, i) : c === '[' ? classEnd(p, i) : i + 1;
    last = 2 * (i - start);
    groups[groups.length - 1]! += last;
  }
  return groups.reduce((a, b) => a + b, 8);
}

function compile(pattern: string): { re: RE2JS; size: number } {
  let hit = cache.get(pattern);
  if (hit) cache.delete(pattern);
  else {
    if (estimatedProgram(pattern) > MAX_PROGRAM) hit = new Unsupported(`a regular expression larger than ${MAX_PROGRAM} instructions`);
    else {
      try {
        const re = compileRe2(pattern);
        const size = re.matcher('').programSize();
        hit = size > MAX_PROGRAM ? new Unsupported(`a regular expression larger than ${MAX_PROGRAM} instructions`) : { re, size };
      } catch {
        hit = new Unsupported('a regular expression that does not compile');
      }
    }
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
  }
  cache.set(pattern, hit);
  if (hit instanceof Unsupported) throw hit;
  return hit;
}

/** `pattern` compiled for a search of `texts`, and the bound each search runs under. */
function prepare(pattern: string, ...texts: string[]): { re: RE2JS; beforeSearch: (pos: number) => void } {
  if (/\\[pP]|\(\?[A-Za-z-]*i/.test(pattern) && (!isAscii(pattern) || !texts.every(isAscii))) {
    throw new Unsupported('a Unicode class or case folding on non-ASCII text (Unicode versions may differ)');
  }
  const { re, size } = compile(pattern);
  const s = texts[0]!;
  return {
    re,
    beforeSearch: (pos) => {
      if (size * (s.length - pos + 1) > MAX_SEARCH) throw new Unsupported('a regular expression search longer than 2^24 steps');
      tick();
    },
  };
}

/** Go's n for FindAll and Split: negative means all. */
function count(n: Value): number {
  const v = n as bigint;
  return v < 0n ? -1 : v > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(v);
}

function matches(pattern: string, s: string, n: number): [number, number][] {
  // Sprig compiles first: a bad pattern fails whatever the text and count.
  const { re, beforeSearch } = prepare(pattern, s);
  if (n === 0) return [];
  const found = goAllMatches(re, s, n, beforeSearch);
  alloc(found.length);
  return found;
}

function findAll(pattern: string, s: string, n: number): Value[] {
  const found = matches(pattern, s, n);
  if (found.length === 0) return nilList();
  return found.map(([a, b]) => {
    alloc(b - a);
    return s.slice(a, b);
  });
}

/** regexp's Split. */
function split(pattern: string, s: string, n: number): Value[] {
  const found = matches(pattern, s, n);
  if (n === 0) return nilList();
  if (pattern !== '' && s === '') return [''];
  const out: string[] = [];
  let beg = 0;
  let end = 0;
  for (const [a, b] of found) {
    if (n > 0 && out.length >= n - 1) break;
    end = a;
    if (b !== 0) out.push(s.slice(beg, end));
    beg = b;
  }
  if (end !== s.length) out.push(s.slice(beg));
  alloc(s.length);
  return out;
}

function replaceAll(pattern: string, s: string, repl: string, literal: boolean): string {
  // Go reads a group name as Unicode letters and digits; which are letters depends on the
  // Unicode version: only ASCII names here.
  if (!literal && /\$\{?[^\p{ASCII}]/u.test(repl)) throw new Unsupported('a replacement naming a group in non-ASCII letters');
  const { re, beforeSearch } = prepare(pattern, s);
  const out = goReplaceAll(re, s, literal ? () => repl : (groups, named) => {
    const x = expandGo(repl, groups, named);
    alloc(x.length);
    return x;
  }, beforeSearch);
  alloc(out.length);
  return out;
}

function match(pattern: string, s: string): boolean {
  const { re, beforeSearch } = prepare(pattern, s);
  beforeSearch(0);
  return re.matcher(s).find();
}

const f = (params: Param[], fn: GoFunc['fn'], variadic?: Param): GoFunc => ({ params, fn, variadic });
const S = (v: Value): string => v as string;

const REGEX: Record<string, GoFunc> = {
  regexMatch: f(['s', 's'], (p, s) => match(S(p), S(s))),
  regexFind: f(['s', 's'], (p, s) => {
    const [m] = matches(S(p), S(s), 1);
    return m ? S(s).slice(m[0], m[1]) : '';
  }),
  regexFindAll: f(['s', 's', 'i'], (p, s, n) => findAll(S(p), S(s), count(n))),
  regexReplaceAll: f(['s', 's', 's'], (p, s, r) => replaceAll(S(p), S(s), S(r), false)),
  regexReplaceAllLiteral: f(['s', 's', 's'], (p, s, r) => replaceAll(S(p), S(s), S(r), true)),
  regexSplit: f(['s', 's', 'i'], (p, s, n) => split(S(p), S(s), count(n))),
};

/** regexp.QuoteMeta. */
const quoteMeta = (s: string): string => s.replace(/[\\.+*?()|[\]{}^$]/g, '\\$&');

/** Sprig's slice: reflect's Slice(start, end) of a list; an empty list is nil. */
function slice(list: Value, ...indices: Value[]): Value {
  if (!Array.isArray(list)) throw new ExecFailure('list should be type of slice or array');
  if (list.length === 0) return null;
  const start = indices.length > 0 ? toInt64(indices[0]!) : 0n;
  const end = indices.length > 1 ? toInt64(indices[1]!) : BigInt(list.length);
  if (start < 0n || end < start) throw new ExecFailure('reflect.Value.Slice: slice index out of bounds');
  // Go slices up to the list's capacity, which only Go knows.
  if (end > BigInt(list.length)) throw new Unsupported('slice past the length of a list (Go goes up to its capacity)');
  alloc(Number(end - start));
  return list.slice(Number(start), Number(end));
}

export const SPRIG_REGEX: Record<string, GoFunc> = {
  ...REGEX,
  // The must* forms return the compile error where the others panic: both are Go's to word.
  ...Object.fromEntries(Object.entries(REGEX).map(([name, fn]) => [`must${name[0]!.toUpperCase()}${name.slice(1)}`, fn])),
  regexQuoteMeta: f(['s'], (s) => {
    const out = quoteMeta(S(s));
    alloc(out.length);
    return out;
  }),
  slice: f(['a'], slice, 'a'),
};
