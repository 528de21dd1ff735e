// The lexer of the handlebars syntax check (src/templating/handlebars/syntax.ts): handlebars' own
// lexer rules, linear in the text, and the error both halves throw. Positions, never text.

export class TemplateSyntaxError extends Error {
  constructor(
    readonly reason: string,
    readonly line?: number,
    readonly column?: number,
  ) {
    super(`${line ? `line ${line}${column ? `, column ${column}` : ''}: ` : ''}${reason}`);
    this.name = 'TemplateSyntaxError';
  }
}

export type Kind =
  | 'CONTENT' | 'COMMENT' | 'OPEN' | 'OPEN_UNESCAPED' | 'OPEN_BLOCK' | 'OPEN_INVERSE' | 'OPEN_INVERSE_CHAIN'
  | 'OPEN_ENDBLOCK' | 'INVERSE' | 'UNSUPPORTED' | 'CLOSE' | 'CLOSE_UNESCAPED' | 'CLOSE_RAW_BLOCK'
  | 'OPEN_SEXPR' | 'CLOSE_SEXPR' | 'EQUALS' | 'ID' | 'SEP' | 'STRING' | 'DATA' | 'LITERAL'
  | 'OPEN_BLOCK_PARAMS' | 'CLOSE_BLOCK_PARAMS' | 'INVALID' | 'EOF';

export interface Token {
  kind: Kind;
  at: number;
  /** ID: the segment (brackets stripped); UNSUPPORTED: what it is. */
  text?: string;
  /** ID written as `[…]`. */
  literal?: boolean;
}

// handlebars' lexer rules (src/handlebars.l of handlebars 4.7), dispatched on the first
// character instead of tried in order: the rules that can match at one character are
// listed in handlebars' order, so the first match is the same.
type Opener = Kind | 'LONG_COMMENT' | 'RAW' | 'PARTIAL' | 'DECORATOR';

const INVERSE_RE = /\^\s*~?\}\}/y;
const ELSE_INVERSE_RE = /\s*else\s*~?\}\}/y;
const ELSE_CHAIN_RE = /\s*else\b/y;
const SHORT_COMMENT_RE = /![\s\S]*?\}\}/y;
const LONG_COMMENT_RE = /[\s\S]*?--~?\}\}/y;
const NUMBER_RE = /-?[0-9]+(?:\.[0-9]+)?(?=[~}\s)])/y;
const BLOCK_PARAMS_RE = /as\s+\|/y;
const SPACE_RE = /\s/;
/** Characters that end an ID (handlebars: `[^\s!"#%-,\.\/;->@\[-\^`\{-~]`). */
const NOT_ID = new Set('!"#%&\'()*+,./;<=>@[\\]^`{|}~');
/** What may follow an ID (lookahead `[=~}\s/.)|]`), and a literal (`[~}\s)]`). */
const AFTER_ID = new Set('=~}/.)|');
const AFTER_LITERAL = new Set('~})');
const KEYWORDS = new Set(['true', 'false', 'undefined', 'null']);

function sticky(re: RegExp, text: string, at: number): string | undefined {
  re.lastIndex = at;
  return re.exec(text)?.[0];
}

const isSpace = (c: string | undefined): boolean => c !== undefined && (c === ' ' || c === '\n' || c === '\t' || c === '\r' || (c > '~' || c < ' ') && SPACE_RE.test(c));
const isIdChar = (c: string): boolean => !isSpace(c) && !NOT_ID.has(c);

/** `"…"` / `'…'` / `[…]` the way handlebars' rules read them: a backslash escapes the
 *  closing character; unterminated is an error here (handlebars would backtrack). */
function delimited(text: string, at: number, close: string): number | undefined {
  for (let i = at + 1; i < text.length; i++) {
    if (text[i] === '\\' && text[i + 1] === close) i++;
    else if (text[i] === close) return i + 1;
  }
  return undefined;
}

/** Tokens of `text`, handlebars' INITIAL/emu/mu lexer states included. */
export function tokenize(text: string, onToken: (t: Token) => void): void {
  let p = 0;
  const n = text.length;
  while (p < n) {
    // INITIAL: content up to the next "{{"; "\{{" escapes a mustache, "\\{{" a backslash.
    const open = text.indexOf('{{', p);
    if (open < 0) return onToken({ kind: 'CONTENT', at: p });
    if (open > p) onToken({ kind: 'CONTENT', at: p });
    const escaped = open - 1 >= p && text[open - 1] === '\\';
    if (escaped && !(open - 2 >= p && text[open - 2] === '\\')) {
      // emu: at least two characters, up to the next "{{", "\{{" or "\\{{".
      const next = text.indexOf('{{', open + 2);
      if (next < 0) return onToken({ kind: 'CONTENT', at: open });
      let stop = next;
      while (stop - 1 >= open + 2 && text[stop - 1] === '\\' && next - stop < 2) stop--;
      onToken({ kind: 'CONTENT', at: open });
      p = stop;
      continue;
    }
    p = mustache(text, open, onToken);
  }
}

/** The opening token at `at` (which starts with "{{") and its length. */
function opener(text: string, at: number): [Opener, number] {
  if (text[at + 2] === '{' && text[at + 3] === '{') return ['RAW', 4];
  const q = text[at + 2] === '~' ? at + 3 : at + 2;
  const len = q - at;
  switch (text[q]) {
    case '>':
      return ['PARTIAL', len + 1];
    case '#':
      if (text[q + 1] === '>') return ['PARTIAL', len + 2];
      if (text[q + 1] === '*') return ['DECORATOR', len + 2];
      return ['OPEN_BLOCK', len + 1];
    case '/':
      return ['OPEN_ENDBLOCK', len + 1];
    case '^': {
      const inv = sticky(INVERSE_RE, text, q);
      return inv !== undefined ? ['INVERSE', len + inv.length] : ['OPEN_INVERSE', len + 1];
    }
    case '{':
      return ['OPEN_UNESCAPED', len + 1];
    case '&':
      return ['OPEN', len + 1];
    case '!': {
      if (text.startsWith('!--', q)) return ['LONG_COMMENT', len + 3];
      const c = sticky(SHORT_COMMENT_RE, text, q);
      if (c !== undefined) return ['COMMENT', len + c.length];
      return ['OPEN', len];
    }
    case '*':
      return ['DECORATOR', len + 1];
    default: {
      const inv = sticky(ELSE_INVERSE_RE, text, q);
      if (inv !== undefined) return ['INVERSE', len + inv.length];
      const chain = sticky(ELSE_CHAIN_RE, text, q);
      if (chain !== undefined) return ['OPEN_INVERSE_CHAIN', len + chain.length];
      return ['OPEN', len];
    }
  }
}

type Lexed = [Kind | 'SKIP', number, string?, boolean?];

const SINGLE: Partial<Record<string, Kind>> = { '(': 'OPEN_SEXPR', ')': 'CLOSE_SEXPR', '=': 'EQUALS', '@': 'DATA', '|': 'CLOSE_BLOCK_PARAMS', '/': 'SEP' };

/** One token inside a mustache, at `p` (which is not "{{"). */
function inner(text: string, p: number): Lexed {
  const c = text[p]!;
  const single = SINGLE[c];
  if (single) return [single, 1, c];
  if (c === '}') return closing(text, p);
  if (c === '~') return text.startsWith('~}}', p) ? ['CLOSE', 3] : ['INVALID', 1];
  if (c === '.') {
    if (text[p + 1] === '.') return ['ID', 2, '..'];
    return isSpace(text[p + 1]) || AFTER_ID.has(text[p + 1] ?? '') ? ['ID', 1, '.'] : ['SEP', 1, '.'];
  }
  if (isSpace(c)) return ['SKIP', 1];
  if (c === '"' || c === "'" || c === '[') {
    const end = delimited(text, p, c === '[' ? ']' : c);
    if (end === undefined) return ['INVALID', 1];
    return c === '[' ? ['ID', end - p, text.slice(p + 1, end - 1), true] : ['STRING', end - p];
  }
  if (!isIdChar(c)) return ['INVALID', 1];
  return word(text, p);
}

function closing(text: string, p: number): Lexed {
  if (text.startsWith('}}}}', p)) return ['CLOSE_RAW_BLOCK', 4];
  if (text.startsWith('}}}', p)) return ['CLOSE_UNESCAPED', 3];
  if (text.startsWith('}~}}', p)) return ['CLOSE_UNESCAPED', 4];
  return text[p + 1] === '}' ? ['CLOSE', 2] : ['INVALID', 1];
}

/** Numbers, keywords, `as |`, and IDs (with handlebars' lookaheads). */
function word(text: string, p: number): Lexed {
  const c = text[p]!;
  const num = c === '-' || (c >= '0' && c <= '9') ? sticky(NUMBER_RE, text, p) : undefined;
  if (num !== undefined) return ['LITERAL', num.length];
  let e = p + 1;
  while (e < text.length && isIdChar(text[e]!)) e++;
  const w = text.slice(p, e);
  const after = text[e];
  if (KEYWORDS.has(w) && (isSpace(after) || AFTER_LITERAL.has(after ?? ''))) return ['LITERAL', e - p];
  const params = w === 'as' ? sticky(BLOCK_PARAMS_RE, text, p) : undefined;
  if (params !== undefined) return ['OPEN_BLOCK_PARAMS', params.length];
  return isSpace(after) || AFTER_ID.has(after ?? '') ? ['ID', e - p, w] : ['INVALID', 1];
}

/** mu state from an opening "{{" to its close; returns the position after it. */
function mustache(text: string, at: number, onToken: (t: Token) => void): number {
  const [kind, len] = opener(text, at);
  if (kind === 'LONG_COMMENT') {
    // handlebars puts "{{!--" back and matches from it: "{{!--}}" is a whole comment.
    const body = sticky(LONG_COMMENT_RE, text, at);
    if (body === undefined) throw new TemplateSyntaxError('comment "{{!--" is never closed with "--}}"', ...position(text, at));
    onToken({ kind: 'COMMENT', at });
    return at + body.length;
  }
  if (kind === 'COMMENT' || kind === 'INVERSE') {
    onToken({ kind, at });
    return at + len;
  }
  if (kind === 'RAW' || kind === 'PARTIAL' || kind === 'DECORATOR') {
    const what = kind === 'RAW' ? 'raw blocks ({{{{…}}}})' : kind === 'PARTIAL' ? 'partials ({{> …}})' : 'decorators and inline partials ({{* …}}, {{#* …}})';
    onToken({ kind: 'UNSUPPORTED', at, text: what });
    return text.length;
  }
  onToken({ kind, at });
  let p = at + len;
  const n = text.length;
  while (p < n) {
    if (text[p] === '{' && text[p + 1] === '{') {
      // Another opener inside a mustache: handlebars lexes it as one; the grammar fails.
      onToken({ kind: 'OPEN', at: p });
      return n;
    }
    const [k, length, word, literal] = inner(text, p);
    // One object shape for every token keeps this loop monomorphic (it is the hot path).
    if (k !== 'SKIP') onToken({ kind: k, at: p, text: word, literal });
    p += length;
    if (k === 'INVALID') return n;
    if (k === 'CLOSE' || k === 'CLOSE_UNESCAPED') return p;
  }
  onToken({ kind: 'EOF', at: p });
  return p;
}

export function position(text: string, at: number): [number, number] {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < at; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return [line, at - lineStart + 1];
}
