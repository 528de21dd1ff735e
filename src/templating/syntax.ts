// A linear-time syntax check of handlebars templates, run BEFORE handlebars' own parser
// sees the text. Handlebars' generated (jison) parser is super-linear on deep nesting,
// long parameter lists and unbalanced blocks or sub-expressions (a 55 KB annotation cost
// ~10 s of CPU), so neither the webhook nor the agent may hand it unchecked input.
// This module tokenizes with handlebars' own lexer rules (same order, same lookaheads),
// checks the grammar with an explicit stack, and enforces the limits below. It accepts
// a subset of handlebars: partials, decorators and raw blocks are refused (ESI does not
// support them, and inline partials are the classic template bomb). The adversarial
// suite checks that whatever this accepts, handlebars parses (test/adversarial/).
// Messages carry positions and token kinds, never template text.

export const TEMPLATE_LIMITS = {
  /** Bytes (UTF-16 code units) of one template. */
  maxLength: 32 * 1024,
  /** `{{…}}` expressions of one template. */
  maxMustaches: 2000,
  /** Nesting of blocks plus sub-expressions. */
  maxDepth: 16,
  /** Tokens inside one `{{…}}` (helper, params, hash pairs, sub-expressions). */
  maxTokensPerMustache: 64,
} as const;

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

type Kind =
  | 'CONTENT' | 'COMMENT' | 'OPEN' | 'OPEN_UNESCAPED' | 'OPEN_BLOCK' | 'OPEN_INVERSE' | 'OPEN_INVERSE_CHAIN'
  | 'OPEN_ENDBLOCK' | 'INVERSE' | 'UNSUPPORTED' | 'CLOSE' | 'CLOSE_UNESCAPED' | 'CLOSE_RAW_BLOCK'
  | 'OPEN_SEXPR' | 'CLOSE_SEXPR' | 'EQUALS' | 'ID' | 'SEP' | 'STRING' | 'DATA' | 'LITERAL'
  | 'OPEN_BLOCK_PARAMS' | 'CLOSE_BLOCK_PARAMS' | 'INVALID' | 'EOF';

interface Token {
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
function tokenize(text: string, onToken: (t: Token) => void): void {
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

function position(text: string, at: number): [number, number] {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf('\n'); i >= 0 && i < at; i = text.indexOf('\n', i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return [line, at - lineStart + 1];
}

const DESCRIBE: Partial<Record<Kind, string>> = {
  EOF: 'the end of the template', CLOSE: '"}}"', CLOSE_UNESCAPED: '"}}}"', INVERSE: '"{{else}}"',
  OPEN_ENDBLOCK: 'a block close "{{/…}}"', OPEN_INVERSE_CHAIN: '"{{else …}}"', EQUALS: '"="',
  OPEN_SEXPR: '"("', CLOSE_SEXPR: '")"', INVALID: 'an unexpected character', CLOSE_RAW_BLOCK: '"}}}}"',
};

/** Recursive descent over the token list; depth is bounded by maxDepth (no stack risk). */
class Checker {
  private i = 0;
  private depth = 0;
  constructor(
    private readonly text: string,
    private readonly tokens: Token[],
  ) {}

  private get tok(): Token {
    return this.tokens[this.i] ?? { kind: 'EOF', at: this.text.length };
  }

  /** A method, not a getter: TypeScript must not narrow it across `this.i++`. */
  private kind(): Kind {
    return this.tok.kind;
  }

  private fail(reason: string, t: Token = this.tok): never {
    throw new TemplateSyntaxError(reason, ...position(this.text, t.at));
  }

  private unexpected(want: string): never {
    const t = this.tok;
    if (t.kind === 'UNSUPPORTED') this.fail(`${t.text} are not supported`);
    this.fail(`syntax error: expected ${want}, got ${DESCRIBE[t.kind] ?? `"${t.kind.toLowerCase()}"`}`);
  }

  private enter(): void {
    if (++this.depth > TEMPLATE_LIMITS.maxDepth) this.fail(`nesting deeper than ${TEMPLATE_LIMITS.maxDepth} blocks and sub-expressions`);
  }

  run(): void {
    this.program(new Set(['EOF']));
    if (this.kind() !== 'EOF') this.unexpected('text or a mustache');
  }

  private program(until: Set<Kind>): void {
    for (;;) {
      const t = this.tok;
      if (until.has(t.kind)) return;
      switch (t.kind) {
        case 'CONTENT':
        case 'COMMENT':
          this.i++;
          break;
        case 'OPEN':
          this.i++;
          this.call('CLOSE');
          break;
        case 'OPEN_UNESCAPED':
          this.i++;
          this.call('CLOSE_UNESCAPED');
          break;
        case 'OPEN_BLOCK':
        case 'OPEN_INVERSE':
          this.block(t.kind);
          break;
        default:
          this.unexpected('text or a mustache');
      }
    }
  }

  /** helperName param* hash? [blockParams] CLOSE; returns the helper's path text. */
  private call(close: Kind, blockParams = false): string | undefined {
    const name = this.helperName();
    let hash = false;
    for (;;) {
      const t = this.tok;
      const next = this.tokens[this.i + 1];
      if (t.kind === 'ID' && next?.kind === 'EQUALS') {
        hash = true;
        this.i += 2;
        this.param();
      } else if (!hash && (t.kind === 'OPEN_SEXPR' || this.isHelperName(t))) {
        this.param();
      } else break;
    }
    if (blockParams && this.kind() === 'OPEN_BLOCK_PARAMS') {
      this.i++;
      if (this.kind() !== 'ID') this.unexpected('a block parameter name');
      while (this.kind() === 'ID') this.i++;
      if (this.kind() !== 'CLOSE_BLOCK_PARAMS') this.unexpected('"|"');
      this.i++;
    }
    if (this.kind() !== close) this.unexpected(DESCRIBE[close]!);
    this.i++;
    return name;
  }

  private isHelperName(t: Token): boolean {
    return t.kind === 'ID' || t.kind === 'STRING' || t.kind === 'LITERAL' || t.kind === 'DATA';
  }

  private param(): void {
    if (this.kind() !== 'OPEN_SEXPR') return void this.helperName();
    this.enter();
    this.i++;
    this.call('CLOSE_SEXPR');
    this.depth--;
  }

  /** path | @path | literal; paths follow handlebars' preparePath rules. */
  private helperName(): string | undefined {
    const t = this.tok;
    if (t.kind === 'STRING' || t.kind === 'LITERAL') {
      this.i++;
      return undefined;
    }
    if (t.kind === 'DATA') this.i++;
    if (this.kind() !== 'ID') this.unexpected('a name, a string or a number');
    let original = '';
    let tail = 0;
    for (;;) {
      const seg = this.tok;
      const special = !seg.literal && (seg.text === '..' || seg.text === '.' || seg.text === 'this');
      if (special && tail > 0) this.fail('invalid path: ".", ".." or "this" after a name', seg);
      if (!special) tail++;
      original += seg.text;
      this.i++;
      if (this.kind() !== 'SEP' || this.tokens[this.i + 1]?.kind !== 'ID') break;
      original += this.tok.text;
      this.i++;
    }
    return t.kind === 'DATA' ? `@${original}` : original;
  }

  /** openBlock program (inverse chain)? close, with matching names. */
  private block(kind: Kind): void {
    const open = this.tok;
    this.enter();
    this.i++;
    const name = this.call('CLOSE', true);
    const inner = new Set<Kind>(['INVERSE', 'OPEN_INVERSE_CHAIN', 'OPEN_ENDBLOCK', 'EOF']);
    this.program(inner);
    if (kind === 'OPEN_BLOCK') {
      while (this.kind() === 'OPEN_INVERSE_CHAIN') {
        this.i++;
        this.call('CLOSE', true);
        this.program(inner);
      }
    }
    if (this.kind() === 'INVERSE') {
      this.i++;
      this.program(inner);
    }
    if (this.kind() !== 'OPEN_ENDBLOCK') {
      if (this.kind() === 'EOF') this.fail('block is never closed', open);
      this.unexpected(DESCRIBE.OPEN_ENDBLOCK!);
    }
    this.i++;
    const close = this.call('CLOSE');
    // Handlebars compares the paths as written; a literal helper name never matches here.
    if (name === undefined || name !== close) this.fail(`block "{{/${short(close)}}}" does not match "${short(name)}"`, open);
    this.depth--;
  }
}

function short(s: string | undefined): string {
  if (s === undefined) return '(literal)';
  return s.length > 40 ? `${s.slice(0, 40)}…` : s;
}

const STARTS_MUSTACHE = new Set<Kind>(['OPEN', 'OPEN_UNESCAPED', 'OPEN_BLOCK', 'OPEN_INVERSE', 'OPEN_INVERSE_CHAIN', 'OPEN_ENDBLOCK', 'COMMENT', 'INVERSE', 'UNSUPPORTED']);

/** Checks `text`; throws TemplateSyntaxError (with line and column) when it is not a
 *  template ESI accepts. Linear in the length of `text`. Returns the mustache count. */
export function checkTemplateSyntax(text: string): { mustaches: number } {
  if (typeof text !== 'string') throw new TemplateSyntaxError('template is not a string');
  if (text.length > TEMPLATE_LIMITS.maxLength) {
    throw new TemplateSyntaxError(`template is ${text.length} characters long; the limit is ${TEMPLATE_LIMITS.maxLength}`);
  }
  const nul = text.indexOf('\0');
  if (nul >= 0) throw new TemplateSyntaxError('template contains a NUL character', ...position(text, nul));
  const tokens: Token[] = [];
  let mustaches = 0;
  let inMustache = 0;
  tokenize(text, (t) => {
    tokens.push(t);
    if (STARTS_MUSTACHE.has(t.kind)) {
      inMustache = 0;
      if (++mustaches > TEMPLATE_LIMITS.maxMustaches) {
        throw new TemplateSyntaxError(`more than ${TEMPLATE_LIMITS.maxMustaches} {{…}} expressions`, ...position(text, t.at));
      }
    } else if (t.kind !== 'CONTENT' && ++inMustache > TEMPLATE_LIMITS.maxTokensPerMustache) {
      throw new TemplateSyntaxError(`more than ${TEMPLATE_LIMITS.maxTokensPerMustache} parts in one {{…}} expression`, ...position(text, t.at));
    }
  });
  new Checker(text, tokens).run();
  return { mustaches };
}
