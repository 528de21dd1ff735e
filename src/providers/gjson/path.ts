// gjson path syntax parsed once into components (SYNTAX.md of tidwall/gjson, the library
// ESO's providers resolve `remoteRef.property` with): `.`-separated components, `|` pipes,
// `\` escapes, `*`/`?` wildcard keys, `#` (array length, or every element when more path
// follows), `#(query)` first match and `#(query)#` every match, `@modifier[:arg]`.
// Multipaths (`{a,b}`, `[a,b]`) and literals (`!true`) are refused with a clear error.
// Bounded: a path is at most MAX_PATH characters and nests queries at most MAX_DEPTH deep.
import { RemoteRefError } from '../errors.js';
import { hasWildcard, unescapeKey } from './match.js';

const MAX_PATH = 4096;
const MAX_DEPTH = 16;

export type QueryOp = '==' | '!=' | '<' | '<=' | '>' | '>=' | '%' | '!%';

export interface Query {
  /** The path read on each element (empty: the element itself). */
  left: Path;
  /** Undefined: the query only asks whether `left` exists. */
  op?: QueryOp;
  /** The right-hand side: a JSON string's text (`quoted`), `~true`-style, or raw text. */
  right: string;
  quoted: boolean;
}

export type Component =
  | { kind: 'key'; key: string; pattern?: string }
  | { kind: 'count' }
  | { kind: 'query'; query: Query; all: boolean }
  | { kind: 'modifier'; name: string; arg?: string };

/** A chain of components; a path is chains joined by `|`. */
export type Path = Component[][];

const invalid = (path: string, why: string) => new RemoteRefError(`property "${path}": ${why}`, 'InvalidSpec');

/** Splits `s` at the top-level separators in `seps`: not escaped, not inside (), [], {}
 *  or (inside those) a quoted string. Returns the pieces and the separator before each. */
function splitTop(s: string, seps: string, whole: string): { part: string; sep: string }[] {
  const out: { part: string; sep: string }[] = [];
  let depth = 0;
  let inStr = false;
  let start = 0;
  let sep = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '\\') {
      i++;
    } else if (inStr) {
      if (c === '"') inStr = false;
    } else if (c === '"' && depth > 0) {
      inStr = true;
    } else if (c === '(' || c === '[' || c === '{') {
      depth++;
    } else if ((c === ')' || c === ']' || c === '}') && depth > 0) {
      depth--;
    } else if (depth === 0 && seps.includes(c)) {
      out.push({ part: s.slice(start, i), sep });
      sep = c;
      start = i + 1;
    }
  }
  if (inStr || depth > 0) throw invalid(whole, 'unbalanced brackets or quotes');
  out.push({ part: s.slice(start), sep });
  return out;
}

const OPS: QueryOp[] = ['==', '!=', '<=', '>=', '!%', '<', '>', '%'];

function parseQuery(body: string, whole: string, depth: number): Query {
  let depthP = 0;
  let inStr = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === '\\') i++;
    else if (inStr) inStr = c !== '"';
    else if (c === '"') inStr = true;
    else if (c === '(' || c === '[' || c === '{') depthP++;
    else if (c === ')' || c === ']' || c === '}') depthP--;
    else if (depthP === 0 && '=!<>%'.includes(c)) {
      const two = body.slice(i, i + 2);
      // gjson reads a lone `=` as `==`; a `!` not followed by `=` or `%` is part of a name.
      const op = OPS.find((o) => o === two) ?? (c === '=' ? '==' : OPS.find((o) => o === c));
      if (!op) continue;
      const width = OPS.includes(two as QueryOp) ? 2 : 1;
      const right = body.slice(i + width).trim();
      const quoted = right.startsWith('"');
      let text = right;
      if (quoted) {
        try {
          text = JSON.parse(right) as string;
        } catch {
          throw invalid(whole, 'a query compares with a malformed string');
        }
      }
      return { left: parsePath(body.slice(0, i).trim(), whole, depth + 1), op, right: text, quoted };
    }
  }
  return { left: parsePath(body.trim(), whole, depth + 1), right: '', quoted: false };
}

function parseComponent(raw: string, whole: string, depth: number): Component {
  if (raw === '#') return { kind: 'count' };
  if (raw.startsWith('#(') || raw.startsWith('#[')) {
    const close = raw.startsWith('#(') ? ')' : ']';
    const all = raw.endsWith(`${close}#`);
    const end = all ? raw.length - 2 : raw.length - 1;
    if (raw[end] !== close) throw invalid(whole, 'a query must end with ")" or ")#"');
    return { kind: 'query', query: parseQuery(raw.slice(2, end), whole, depth), all };
  }
  if (raw.startsWith('@')) {
    const colon = raw.indexOf(':');
    return colon < 0 ? { kind: 'modifier', name: raw.slice(1) } : { kind: 'modifier', name: raw.slice(1, colon), arg: raw.slice(colon + 1) };
  }
  if (raw.startsWith('{') || raw.startsWith('[') || raw.startsWith('!')) throw invalid(whole, 'gjson multipaths and literals are not supported');
  const key = unescapeKey(raw);
  return hasWildcard(raw) ? { kind: 'key', key, pattern: raw } : { kind: 'key', key };
}

/** Parses a gjson path. Throws InvalidSpec (naming the path, never a value) when it is
 *  malformed or beyond the bounds above. */
export function parsePath(path: string, whole = path, depth = 0): Path {
  if (path.length > MAX_PATH) throw invalid(whole.slice(0, 64) + '…', `longer than ${MAX_PATH} characters`);
  if (depth > MAX_DEPTH) throw invalid(whole, `queries nest deeper than ${MAX_DEPTH}`);
  if (path === '') return [];
  const chains: Path = [];
  for (const { part: chain } of splitTop(path, '|', whole)) {
    chains.push(splitTop(chain, '.', whole).map(({ part }) => parseComponent(part, whole, depth)));
  }
  return chains;
}
