// A linear-time syntax check of handlebars templates, run BEFORE handlebars' own parser
// sees the text. Handlebars' generated (jison) parser is super-linear on deep nesting,
// long parameter lists and unbalanced blocks or sub-expressions (a 55 KB annotation cost
// ~10 s of CPU), so neither the webhook nor the agent may hand it unchecked input.
// It tokenizes with handlebars' own lexer rules (src/templating/syntax-lexer.ts: same order,
// same lookaheads), checks the grammar with an explicit stack, and enforces the limits
// below. It accepts a subset of handlebars: partials, decorators and raw blocks are
// refused (ESI does not support them, and inline partials are the classic template bomb). The adversarial
// suite checks that whatever this accepts, handlebars parses (test/webhook/admission.adversarial.test.ts).
// Messages carry positions and token kinds, never template text.

import { position, tokenize, TemplateSyntaxError, type Kind, type Token } from './syntax-lexer.js';

export { TemplateSyntaxError };

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

const DESCRIBE: Partial<Record<Kind, string>> = {
  EOF: 'the end of the template', CLOSE: '"}}"', CLOSE_UNESCAPED: '"}}}"', INVERSE: '"{{else}}"',
  OPEN_ENDBLOCK: 'a block close "{{/…}}"', OPEN_INVERSE_CHAIN: '"{{else …}}"', EQUALS: '"="',
  OPEN_SEXPR: '"("', CLOSE_SEXPR: '")"', INVALID: 'an unexpected character', CLOSE_RAW_BLOCK: '"}}}}"',
  SEP: 'a path separator', ID: 'a name', STRING: 'a string', LITERAL: 'a literal', DATA: '"@"', OPEN: '"{{"',
  OPEN_UNESCAPED: '"{{{"', OPEN_BLOCK: '"{{#"', OPEN_INVERSE: '"{{^"', OPEN_BLOCK_PARAMS: '"as |"', CLOSE_BLOCK_PARAMS: '"|"',
  CONTENT: 'text', COMMENT: 'a comment',
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
