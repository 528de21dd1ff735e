// The lexer of Go's text/template (a port of its parse package's lexer, Go 1.24+): the
// same items, the same trim markers (`{{- ` and ` -}}`), comments and newlines inside
// actions. Its only job is to accept exactly what Go accepts: on anything Go would reject
// it throws a GoSyntaxError with the line, worded after Go's lexer.
import { GoSyntaxError } from './errors.js';

export type ItemType =
  | 'text' | 'leftDelim' | 'rightDelim' | 'space' | 'identifier' | 'field' | 'variable' | 'string' | 'rawString'
  | 'char' | 'number' | 'bool' | 'nil' | 'dot' | 'pipe' | 'leftParen' | 'rightParen' | 'assign' | 'declare' | 'comma'
  | 'keyword' | 'eof';

export interface Item {
  type: ItemType;
  val: string;
  pos: number;
  line: number;
}

const KEYWORDS = new Set(['block', 'break', 'continue', 'define', 'else', 'end', 'if', 'range', 'template', 'with']);

const isSpace = (c: string) => c === ' ' || c === '\t' || c === '\r' || c === '\n';
const isAlnum = (c: string) => c === '_' || /^[\p{L}\p{Nd}]$/u.test(c);

/** Splits `src` into items; throws GoSyntaxError where Go's lexer reports an error. */
export function lex(src: string): Item[] {
  const lexer = new Lexer(src);
  try {
    return lexer.run();
  } catch (err) {
    if (err instanceof GoSyntaxError) err.line ??= lexer.currentLine();
    throw err;
  }
}

const fail = (why: string): never => {
  throw new GoSyntaxError(why);
};

class Lexer {
  private readonly items: Item[] = [];
  private pos = 0;
  private line = 1;
  private parens = 0;

  constructor(private readonly src: string) {}

  currentLine(): number {
    return this.line;
  }

  private emit(type: ItemType, start: number, startLine = this.line): void {
    this.items.push({ type, val: this.src.slice(start, this.pos), pos: start, line: startLine });
  }

  private lines(a: number, b: number): void {
    for (let i = a; i < b; i++) if (this.src.charCodeAt(i) === 10) this.line++;
  }

  run(): Item[] {
    const src = this.src;
    while (this.pos < src.length) {
      // Text up to the next left delimiter; `{{- ` trims the spaces before it.
      const open = src.indexOf('{{', this.pos);
      const textEnd = open < 0 ? src.length : open;
      const trimLeft = open >= 0 && src[open + 2] === '-' && isSpace(src[open + 3] ?? '');
      let end = textEnd;
      if (trimLeft) while (end > this.pos && isSpace(src[end - 1]!)) end--;
      if (end > this.pos) this.items.push({ type: 'text', val: src.slice(this.pos, end), pos: this.pos, line: this.line });
      this.lines(this.pos, textEnd);
      if (open < 0) break;
      this.pos = open + (trimLeft ? 4 : 2);
      if (src.startsWith('/*', this.pos)) this.comment();
      else this.action(open);
    }
    this.items.push({ type: 'eof', val: '', pos: src.length, line: this.line });
    return this.items;
  }

  /** A comment: slash-star after the delimiter (and its trim marker), star-slash right before the closing one. */
  private comment(): void {
    const close = this.src.indexOf('*/', this.pos + 2);
    if (close < 0) fail('unclosed comment');
    this.lines(this.pos, close);
    this.pos = close + 2;
    const right = atRightDelim(this.src, this.pos);
    if (!right) fail('comment ends before closing delimiter');
    this.closeDelim(right!);
  }

  private closeDelim(right: { length: number; trim: boolean }): void {
    this.pos += right.length;
    if (!right.trim) return;
    while (this.pos < this.src.length && isSpace(this.src[this.pos]!)) {
      if (this.src[this.pos] === '\n') this.line++;
      this.pos++;
    }
  }

  private action(open: number): void {
    this.items.push({ type: 'leftDelim', val: '{{', pos: open, line: this.line });
    this.parens = 0;
    for (;;) {
      const right = atRightDelim(this.src, this.pos);
      if (right && this.parens === 0) {
        this.items.push({ type: 'rightDelim', val: '}}', pos: this.pos, line: this.line });
        this.closeDelim(right);
        return;
      }
      if (this.pos >= this.src.length) fail('unclosed action');
      this.token();
    }
  }

  private token(): void {
    const src = this.src;
    const c = src[this.pos]!;
    const start = this.pos;
    if (isSpace(c)) return this.space();
    if (c === '}' && src[this.pos + 1] === '}') fail('unexpected right delimiter');
    this.pos++;
    const single: Record<string, ItemType> = { '=': 'assign', '|': 'pipe', ',': 'comma' };
    if (single[c]) return this.emit(single[c]!, start);
    if (c === ':') {
      if (src[this.pos] !== '=') fail('expected :=');
      this.pos++;
      return this.emit('declare', start);
    }
    if (c === '"' || c === "'") return this.quoted(c, start);
    if (c === '`') {
      const close = src.indexOf('`', this.pos);
      if (close < 0) fail('unterminated raw quoted string');
      this.pos = close + 1;
      this.emit('rawString', start);
      return this.lines(start, this.pos);
    }
    if (c === '$') return this.word('variable', start);
    if (c === '.') return this.dot(start);
    if (c === '+' || c === '-' || /[0-9]/.test(c)) {
      this.pos = scanNumber(src, start);
      return this.emit('number', start);
    }
    if (isAlnum(c)) return this.identifier(start);
    if (c === '(' || c === ')') return this.paren(c, start);
    fail('unrecognized character in action');
  }

  /** Spaces up to a right trim marker (" -}}"), which belongs to the delimiter. */
  private space(): void {
    const start = this.pos;
    const startLine = this.line;
    while (this.pos < this.src.length && isSpace(this.src[this.pos]!) && !(atRightDelim(this.src, this.pos)?.trim && this.parens === 0)) {
      if (this.src[this.pos] === '\n') this.line++;
      this.pos++;
    }
    if (this.pos > start) this.emit('space', start, startLine);
  }

  private quoted(q: string, start: number): void {
    const what = q === '"' ? 'quoted string' : 'character constant';
    for (;;) {
      const d = this.src[this.pos++];
      if (d === '\\') {
        if (this.src[this.pos] === undefined || this.src[this.pos] === '\n') fail(`unterminated ${what}`);
        this.pos++;
      } else if (d === undefined || d === '\n') fail(`unterminated ${what}`);
      else if (d === q) break;
    }
    this.emit(q === '"' ? 'string' : 'char', start);
  }

  private word(type: ItemType, start: number): void {
    this.pos = scanAlnum(this.src, this.pos);
    if (!atTerminator(this.src, this.pos)) fail('bad character');
    this.emit(type, start);
  }

  private dot(start: number): void {
    const next = this.src[this.pos] ?? '';
    if (/[0-9]/.test(next)) {
      this.pos = scanNumber(this.src, start);
      return this.emit('number', start);
    }
    // A lone dot is the cursor; otherwise a field name.
    this.word(isAlnum(next) ? 'field' : 'dot', start);
  }

  private identifier(start: number): void {
    this.word('identifier', start);
    const item = this.items[this.items.length - 1]!;
    const w = item.val;
    if (KEYWORDS.has(w)) item.type = 'keyword';
    else if (w === 'true' || w === 'false') item.type = 'bool';
    else if (w === 'nil') item.type = 'nil';
  }

  private paren(c: string, start: number): void {
    this.parens += c === '(' ? 1 : -1;
    if (this.parens < 0) fail('unexpected right paren');
    this.emit(c === '(' ? 'leftParen' : 'rightParen', start);
  }
}

/** `}}` or ` -}}` (a trim marker is a space, a dash and the delimiter). */
function atRightDelim(src: string, pos: number): { length: number; trim: boolean } | undefined {
  if (src.startsWith('}}', pos)) return { length: 2, trim: false };
  if (isSpace(src[pos] ?? '') && src.startsWith('-}}', pos + 1)) return { length: 4, trim: true };
  return undefined;
}

function scanAlnum(src: string, pos: number): number {
  while (pos < src.length) {
    const cp = src.codePointAt(pos)!;
    const ch = String.fromCodePoint(cp);
    if (!isAlnum(ch)) break;
    pos += ch.length;
  }
  return pos;
}

function atTerminator(src: string, pos: number): boolean {
  const c = src[pos];
  if (c === undefined || isSpace(c) || '.,|:()'.includes(c)) return true;
  return src.startsWith('}}', pos);
}

const DIGITS: Record<string, string> = { x: '0123456789abcdefABCDEF_', o: '01234567_', b: '01_' };

/** Go's scanNumber, then the check that no letter or digit follows the number. */
function scanNumber(src: string, pos: number): number {
  if (src[pos] === '+' || src[pos] === '-') pos++;
  let digits = '0123456789_';
  if (src[pos] === '0' && /[xXoObB]/.test(src[pos + 1] ?? '')) {
    digits = DIGITS[src[pos + 1]!.toLowerCase()]!;
    pos += 2;
  }
  const run = (set: string) => {
    while (pos < src.length && set.includes(src[pos]!)) pos++;
  };
  run(digits);
  if (src[pos] === '.') {
    pos++;
    run(digits);
  }
  const exponent = digits.length === 11 ? /[eE]/ : digits.length === 23 ? /[pP]/ : undefined;
  if (exponent?.test(src[pos] ?? '')) {
    pos++;
    if (src[pos] === '+' || src[pos] === '-') pos++;
    run('0123456789_');
  }
  if (src[pos] === 'i') pos++;
  if (isAlnum(src[pos] ?? '')) fail('bad number syntax');
  return pos;
}
