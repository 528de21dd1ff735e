// The lexer of Go's text/template (a port of text/template/parse/lex.go, Go 1.24+): the
// same items, the same trim markers (`{{- ` and ` -}}`), comments and newlines inside
// actions. Its only job is to accept exactly what Go accepts: on anything Go would reject
// it throws Unsupported, and the WebAssembly Go engine produces Go's own message
// (docs/decisions/0071-go-templates-in-typescript.md).
import { Unsupported } from './errors.js';

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

/** Splits `src` into items; throws Unsupported where Go's lexer reports an error. */
export function lex(src: string): Item[] {
  const items: Item[] = [];
  let pos = 0;
  let line = 1;
  const emit = (type: ItemType, start: number, end: number, startLine: number) => items.push({ type, val: src.slice(start, end), pos: start, line: startLine });
  const lines = (a: number, b: number) => {
    for (let i = a; i < b; i++) if (src.charCodeAt(i) === 10) line++;
  };
  const fail = (why: string): never => {
    throw new Unsupported(`syntax: ${why}`);
  };
  while (pos < src.length) {
    // Text up to the next left delimiter.
    const open = src.indexOf('{{', pos);
    const textEnd = open < 0 ? src.length : open;
    let afterLeft = open < 0 ? src.length : open + 2;
    let trimLeft = false;
    if (open >= 0 && src[afterLeft] === '-' && isSpace(src[afterLeft + 1] ?? '')) {
      trimLeft = true;
      afterLeft += 2;
    }
    let end = textEnd;
    if (trimLeft) while (end > pos && isSpace(src[end - 1]!)) end--;
    if (end > pos) emit('text', pos, end, line);
    lines(pos, textEnd);
    if (open < 0) break;
    pos = afterLeft;
    // Comment: `{{/*` (after an optional trim marker) … `*/}}` or `*/ -}}`.
    if (src.startsWith('/*', pos)) {
      const close = src.indexOf('*/', pos + 2);
      if (close < 0) fail('unclosed comment');
      lines(pos, close);
      pos = close + 2;
      const right = atRightDelim(src, pos);
      if (!right) fail('comment ends before closing delimiter');
      pos += right!.length;
      if (right!.trim) pos = skipSpace(src, pos, () => line++);
      continue;
    }
    emit('leftDelim', open, open + 2, line);
    let parens = 0;
    for (;;) {
      const right = atRightDelim(src, pos);
      if (right && parens === 0) {
        emit('rightDelim', pos, pos + right.length, line);
        pos += right.length;
        if (right.trim) pos = skipSpace(src, pos, () => line++);
        break;
      }
      if (pos >= src.length) fail('unclosed action');
      const c = src[pos]!;
      const start = pos;
      const startLine = line;
      if (isSpace(c)) {
        // Spaces up to a right trim marker (" -}}"), which belongs to the delimiter.
        while (pos < src.length && isSpace(src[pos]!) && !(atRightDelim(src, pos)?.trim && parens === 0)) {
          if (src[pos] === '\n') line++;
          pos++;
        }
        if (pos > start) emit('space', start, pos, startLine);
        continue;
      }
      if (c === '}' && src[pos + 1] === '}') fail('unexpected right delimiter');
      pos++;
      if (c === '=') emit('assign', start, pos, line);
      else if (c === ':') {
        if (src[pos] !== '=') fail('expected :=');
        pos++;
        emit('declare', start, pos, line);
      } else if (c === '|') emit('pipe', start, pos, line);
      else if (c === '"') {
        for (;;) {
          const d = src[pos++];
          if (d === '\\') {
            if (src[pos] === undefined || src[pos] === '\n') fail('unterminated quoted string');
            pos++;
          } else if (d === undefined || d === '\n') fail('unterminated quoted string');
          else if (d === '"') break;
        }
        emit('string', start, pos, line);
      } else if (c === '`') {
        const close = src.indexOf('`', pos);
        if (close < 0) fail('unterminated raw quoted string');
        pos = close + 1;
        emit('rawString', start, pos, startLine);
        lines(start, pos);
      } else if (c === '$') {
        pos = scanAlnum(src, pos);
        if (!atTerminator(src, pos)) fail('bad character');
        emit('variable', start, pos, line);
      } else if (c === "'") {
        for (;;) {
          const d = src[pos++];
          if (d === '\\') {
            if (src[pos] === undefined || src[pos] === '\n') fail('unterminated character constant');
            pos++;
          } else if (d === undefined || d === '\n') fail('unterminated character constant');
          else if (d === "'") break;
        }
        emit('char', start, pos, line);
      } else if (c === '.') {
        if (/[0-9]/.test(src[pos] ?? '')) {
          pos = scanNumber(src, start, fail);
          emit('number', start, pos, line);
        } else if (!isAlnum(src[pos] ?? '')) {
          // A lone dot: "." is the cursor; it must be followed by a terminator.
          if (!atTerminator(src, pos)) fail('bad character');
          emit('dot', start, pos, line);
        } else {
          pos = scanAlnum(src, pos);
          if (!atTerminator(src, pos)) fail('bad character');
          emit('field', start, pos, line);
        }
      } else if (c === '+' || c === '-' || /[0-9]/.test(c)) {
        pos = scanNumber(src, start, fail);
        emit('number', start, pos, line);
      } else if (isAlnum(c)) {
        pos = scanAlnum(src, pos);
        if (!atTerminator(src, pos)) fail('bad character');
        const word = src.slice(start, pos);
        if (KEYWORDS.has(word)) emit('keyword', start, pos, line);
        else if (word === 'true' || word === 'false') emit('bool', start, pos, line);
        else if (word === 'nil') emit('nil', start, pos, line);
        else emit('identifier', start, pos, line);
      } else if (c === '(') {
        parens++;
        emit('leftParen', start, pos, line);
      } else if (c === ')') {
        parens--;
        if (parens < 0) fail('unexpected right paren');
        emit('rightParen', start, pos, line);
      } else if (c === ',') emit('comma', start, pos, line);
      else fail('unrecognized character in action');
    }
  }
  items.push({ type: 'eof', val: '', pos: src.length, line });
  return items;
}

function skipSpace(src: string, pos: number, newline: () => void): number {
  while (pos < src.length && isSpace(src[pos]!)) {
    if (src[pos] === '\n') newline();
    pos++;
  }
  return pos;
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

/** Go's scanNumber, then the check that no letter or digit follows the number. */
function scanNumber(src: string, pos: number, fail: (why: string) => never): number {
  if (src[pos] === '+' || src[pos] === '-') pos++;
  let digits = '0123456789_';
  if (src[pos] === '0' && /[xXoObB]/.test(src[pos + 1] ?? '')) {
    const p = src[pos + 1]!.toLowerCase();
    digits = p === 'x' ? '0123456789abcdefABCDEF_' : p === 'o' ? '01234567_' : '01_';
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
  if (digits.length === 11 && /[eE]/.test(src[pos] ?? '')) {
    pos++;
    if (src[pos] === '+' || src[pos] === '-') pos++;
    run('0123456789_');
  }
  if (digits.length === 23 && /[pP]/.test(src[pos] ?? '')) {
    pos++;
    if (src[pos] === '+' || src[pos] === '-') pos++;
    run('0123456789_');
  }
  if (src[pos] === 'i') pos++;
  if (isAlnum(src[pos] ?? '')) fail('bad number syntax');
  return pos;
}
