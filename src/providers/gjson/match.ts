// gjson's wildcard patterns: `*` any run of characters, `?` one character, `\` makes the
// next character literal. Used for wildcard keys (`child*`) and the `%` / `!%` query
// operators. Greedy matching with one backtrack point: O(pattern x subject) at worst,
// whatever the pattern (no exponential backtracking on `*a*a*a*b`).

/** The pattern as tokens: a literal character, or a wildcard. */
type Token = { lit: string } | { any: '*' | '?' };

function tokens(pattern: string): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\' && i + 1 < pattern.length) out.push({ lit: pattern[++i]! });
    else if (c === '*' || c === '?') out.push({ any: c });
    else out.push({ lit: c });
  }
  return out;
}

/** Whether `subject` matches the whole of `pattern`. */
export function wildcardMatch(subject: string, pattern: string): boolean {
  const p = tokens(pattern);
  const s = [...subject];
  let si = 0;
  let pi = 0;
  let starP = -1;
  let starS = 0;
  while (si < s.length) {
    const tok = p[pi];
    if (tok && 'any' in tok && tok.any === '*') {
      starP = pi++;
      starS = si;
    } else if (tok && ('any' in tok ? true : tok.lit === s[si])) {
      pi++;
      si++;
    } else if (starP >= 0) {
      pi = starP + 1;
      si = ++starS;
    } else {
      return false;
    }
  }
  while (pi < p.length && 'any' in p[pi]! && (p[pi] as { any: string }).any === '*') pi++;
  return pi === p.length;
}

/** Whether a raw path component holds an unescaped wildcard. */
export function hasWildcard(raw: string): boolean {
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === '\\') i++;
    else if (raw[i] === '*' || raw[i] === '?') return true;
  }
  return false;
}

/** A raw path component with its escapes removed. */
export function unescapeKey(raw: string): string {
  let out = '';
  for (let i = 0; i < raw.length; i++) out += raw[i] === '\\' && i + 1 < raw.length ? raw[++i] : raw[i];
  return out;
}
