// Go (RE2) regular expressions as ESO's API carries them (`find.name.regexp`,
// `rewrite.regexp.source`, ClusterSecretStore `namespaceRegexes`), with RE2's syntax and
// linear-time matching (re2js, a port of RE2): a user's pattern can neither backtrack for
// seconds nor use JavaScript-only syntax. Compiled once per pattern (bounded cache).
//
// re2js is loaded on the first pattern (synchronously, its CommonJS build: every caller is
// synchronous): most agents never compile one, and loading it costs ~1.6 MiB of private
// memory and its parse time at start.
import { createRequire } from 'node:module';
import type { RE2JS } from 're2js';
import { RemoteRefError } from './errors.js';
import { ProviderError } from './types.js';

export interface GoRegexp {
  readonly source: string;
  /** Go's MatchString: does the pattern match anywhere in `s`? */
  test(s: string): boolean;
  /** Does the pattern match the whole of `s`? */
  matchesWhole(s: string): boolean;
  /** Go's ReplaceAllString: `expand` turns a match's groups into its replacement. */
  replaceAll(s: string, expand: (groups: (string | undefined)[], named: Record<string, string | undefined>) => string): string;
}

/** Longest pattern accepted (RE2 bounds the compiled program as well). */
const MAX_PATTERN = 4096;
const MAX_CACHED = 512;
const cache = new Map<string, GoRegexp>();
const require = createRequire(import.meta.url);
let re2: typeof RE2JS | undefined;

/** Compiles `source` with re2js (RE2's syntax; throws re2js's error, worded as Go's). */
export function compileRe2(source: string): RE2JS {
  return (re2 ??= (require('re2js') as { RE2JS: typeof RE2JS }).RE2JS).compile(source);
}

/** Width of the character at `pos` in UTF-16 units (Go steps one rune). */
const widthAt = (s: string, pos: number): number => ((s.codePointAt(pos) ?? 0) > 0xffff ? 2 : 1);

/** Go's allMatches loop (regexp.go): the [start, end) of at most `n` matches (all when
 *  n < 0); an empty match right after a previous match is skipped. Offsets are UTF-16;
 *  they cut the string where Go's byte offsets cut it. `beforeSearch` runs before each
 *  search (the template engine bounds work there). */
export function goAllMatches(re: RE2JS, s: string, n: number, beforeSearch?: (pos: number) => void): [number, number][] {
  const m = re.matcher(s);
  const out: [number, number][] = [];
  for (let pos = 0, prevMatchEnd = -1; (n < 0 || out.length < n) && pos <= s.length; ) {
    beforeSearch?.(pos);
    if (!m.find(pos)) break;
    const [start, end] = [m.start(), m.end()];
    let accept = true;
    if (end === pos) {
      if (start === prevMatchEnd) accept = false;
      pos += pos < s.length ? widthAt(s, pos) : 1;
    } else pos = end;
    prevMatchEnd = end;
    if (accept) out.push([start, end]);
  }
  return out;
}

/** Go's replaceAll loop (regexp.go): an empty match right after a previous match is not
 *  replaced, and the search always advances by at least one character. */
export function goReplaceAll(re: RE2JS, src: string, expand: Parameters<GoRegexp['replaceAll']>[1], beforeSearch?: (pos: number) => void): string {
  const m = re.matcher(src);
  const names = Object.entries(re.namedGroups() as Record<string, number>);
  let out = '';
  let lastMatchEnd = 0;
  let searchPos = 0;
  while (searchPos <= src.length) {
    beforeSearch?.(searchPos);
    if (!m.find(searchPos)) break;
    const [start, end] = [m.start(), m.end()];
    out += src.slice(lastMatchEnd, start);
    if (end > lastMatchEnd || start === 0) {
      const groups = Array.from({ length: re.groupCount() + 1 }, (_, i) => m.group(i) ?? undefined);
      out += expand(groups, Object.fromEntries(names.map(([n, i]) => [n, groups[i]])));
    }
    lastMatchEnd = end;
    const width = widthAt(src, searchPos);
    searchPos = searchPos + width > end ? searchPos + width : end;
  }
  return out + src.slice(lastMatchEnd);
}

/** Go's Regexp.Expand (its `expand` and `extract`): `$name` or `${name}`, a name being the
 *  longest run of letters, digits and `_`; a name of up to nine digits (no leading zero)
 *  is a group number; `$$` is a dollar; a malformed reference is a literal `$`; a group
 *  that is unknown or did not take part expands to nothing. */
export function expandGo(template: string, groups: (string | undefined)[], named: Record<string, string | undefined>): string {
  let out = '';
  let rest = template;
  for (;;) {
    const at = rest.indexOf('$');
    if (at < 0) break;
    out += rest.slice(0, at);
    rest = rest.slice(at + 1);
    if (rest.startsWith('$')) {
      out += '$';
      rest = rest.slice(1);
      continue;
    }
    const ref = /^(\{?)([\p{L}\p{Nd}_]+)/u.exec(rest);
    const braced = ref?.[1] === '{';
    if (!ref || (braced && rest[ref[0].length] !== '}')) {
      out += '$';
      continue;
    }
    const name = ref[2]!;
    rest = rest.slice(ref[0].length + (braced ? 1 : 0));
    const num = /^(0|[1-9][0-9]{0,8})$/.test(name) ? Number(name) : -1;
    out += (num >= 0 ? groups[num] : Object.hasOwn(named, name) ? named[name] : undefined) ?? '';
  }
  return out + rest;
}

function compile(source: string): GoRegexp {
  if (source.length > MAX_PATTERN) throw new Error(`longer than ${MAX_PATTERN} characters`);
  const re = compileRe2(source);
  return {
    source,
    test: (s) => re.matcher(s).find(),
    matchesWhole: (s) => re.matches(s),
    replaceAll: (s, expand) => goReplaceAll(re, s, expand),
  };
}

/** Compiles (or returns the cached) RE2 pattern; throws RemoteRefError (InvalidSpec). */
export function compileGoRegexp(source: string): GoRegexp {
  const hit = cache.get(source);
  if (hit) return hit;
  let re: GoRegexp;
  try {
    re = compile(source);
  } catch (err) {
    const shown = source.length > 128 ? `${source.slice(0, 128)}…` : source;
    throw new RemoteRefError(`invalid rewrite regexp "${shown}": ${(err as Error).message.slice(0, 200)}`, 'InvalidSpec');
  }
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
  cache.set(source, re);
  return re;
}

/** `find.name.regexp` as a test of remote names (unanchored, as Go's MatchString); every
 *  name passes when the find names none. A bad pattern is InvalidSpec naming the field. */
export function findNameTest(find: { name?: { regexp: string } }, storeId: string): (name: string) => boolean {
  if (!find.name) return () => true;
  let re: GoRegexp;
  try {
    re = compileGoRegexp(find.name.regexp);
  } catch {
    throw new ProviderError('InvalidSpec', storeId, `invalid find.name.regexp "${find.name.regexp.slice(0, 128)}"`);
  }
  return (name) => re.test(name);
}
