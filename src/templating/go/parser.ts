// The parser of Go's text/template (a port of its parse package's parser): the same
// grammar, the same checks (declared variables, known functions, break/continue inside
// range, non-executable pipeline stages). Whatever Go rejects throws GoSyntaxError, worded
// after Go's parser, with the line; what ESI does not render (character constants, number
// syntax beyond decimal and hexadecimal…) throws Unsupported with the line.
import { GoSyntaxError, Unsupported } from './errors.js';
import { lex, type Item, type ItemType } from './lexer.js';

export type Arg =
  // pos: where Go's node starts in the source (UTF-16 offset), for Go's error context: the
  // field token, or the first field of a chain (`.a.b` is at `.b`, as Go's parser places it).
  | { t: 'field'; idents: string[]; pos: number }
  | { t: 'variable'; name: string; idents: string[]; pos: number }
  | { t: 'chain'; node: Arg; idents: string[] }
  | { t: 'identifier'; name: string }
  | { t: 'dot' }
  | { t: 'nil' }
  | { t: 'bool'; value: boolean }
  | { t: 'number'; text: string; int?: bigint; float: number; isFloatText: boolean }
  | { t: 'string'; value: string }
  | { t: 'pipe'; pipe: Pipe };

export interface Pipe {
  decl: string[];
  isAssign: boolean;
  cmds: Arg[][];
}

export type Node =
  | { t: 'text'; text: string }
  | { t: 'action'; pipe: Pipe }
  | { t: 'if' | 'with' | 'range'; pipe: Pipe; list: Node[]; elseList?: Node[] }
  | { t: 'template'; name: string; pipe?: Pipe }
  | { t: 'break' | 'continue' };

type Ending = { t: 'end' } | { t: 'else'; chain: boolean };

export interface Parsed {
  root: Node[];
  defines: Map<string, Node[]>;
  /** The template's text (error positions). */
  source: string;
}

/** Parses `src`; `hasFunction` says which identifiers name functions. */
export function parse(src: string, hasFunction: (name: string) => boolean): Parsed {
  const parser = new Parser(lex(src), hasFunction);
  try {
    return { ...parser.parseAll(), source: src };
  } catch (err) {
    if (err instanceof GoSyntaxError || err instanceof Unsupported) err.line ??= parser.currentLine();
    throw err;
  }
}

const fail = (why: string): never => {
  throw new GoSyntaxError(why);
};

const isEmpty = (list: Node[]) => list.every((n) => n.t === 'text' && n.text.trim() === '');

class Parser {
  private i = 0;
  private vars: string[] = ['$'];
  private rangeDepth = 0;
  readonly defines = new Map<string, Node[]>();

  constructor(
    private readonly items: Item[],
    private readonly hasFunction: (name: string) => boolean,
  ) {}

  /** The line of the item read last (where a failure was found). */
  currentLine(): number {
    return this.items[Math.max(0, this.i - 1)]!.line;
  }

  private peek(): Item {
    return this.items[this.i]!;
  }
  private next(): Item {
    return this.items[this.i++]!;
  }
  private nextNonSpace(): Item {
    let it = this.next();
    while (it.type === 'space') it = this.next();
    return it;
  }
  private peekNonSpace(): Item {
    const save = this.i;
    const it = this.nextNonSpace();
    this.i = save;
    // Go's peekNonSpace consumes the spaces; keep that behaviour.
    while (this.peek().type === 'space') this.i++;
    return it;
  }
  private expect(type: ItemType, val?: string): Item {
    const it = this.nextNonSpace();
    if (it.type !== type || (val !== undefined && it.val !== val)) fail(`unexpected ${it.val}`);
    return it;
  }
  private isKeyword(it: Item, word: string): boolean {
    return it.type === 'keyword' && it.val === word;
  }

  parseAll(): Omit<Parsed, 'source'> {
    const root: Node[] = [];
    while (this.peek().type !== 'eof') {
      if (this.peek().type === 'leftDelim') {
        const save = this.i;
        this.next();
        if (this.isKeyword(this.nextNonSpace(), 'define')) {
          this.parseDefinition();
          continue;
        }
        this.i = save;
      }
      const n = this.textOrAction();
      if ('t' in n && (n.t === 'end' || n.t === 'else')) fail(`unexpected ${n.t}`);
      root.push(n as Node);
    }
    return { root, defines: this.defines };
  }

  private templateName(): string {
    const it = this.nextNonSpace();
    if (it.type !== 'string' && it.type !== 'rawString') fail('template name is not a string');
    return unquote(it);
  }

  private withFreshScope<T>(body: () => T): T {
    const [vars, depth] = [this.vars, this.rangeDepth];
    this.vars = ['$'];
    this.rangeDepth = 0;
    try {
      return body();
    } finally {
      this.vars = vars;
      this.rangeDepth = depth;
    }
  }

  private addDefine(name: string, list: Node[]): void {
    const old = this.defines.get(name);
    if (old === undefined || isEmpty(old)) this.defines.set(name, list);
    else if (!isEmpty(list)) fail(`multiple definition of template ${name}`);
  }

  private parseDefinition(): void {
    const name = this.templateName();
    this.expect('rightDelim');
    const [list, end] = this.withFreshScope(() => this.itemList());
    if (end.t !== 'end') fail('unexpected else in define');
    this.addDefine(name, list);
  }

  private itemList(): [Node[], Ending] {
    const list: Node[] = [];
    while (this.peekNonSpace().type !== 'eof') {
      const n = this.textOrAction();
      if (n.t === 'end' || n.t === 'else') return [list, n as Ending];
      list.push(n as Node);
    }
    return fail('unexpected EOF');
  }

  private textOrAction(): Node | Ending {
    const it = this.nextNonSpace();
    if (it.type === 'text') return { t: 'text', text: it.val };
    if (it.type === 'leftDelim') return this.action();
    return fail(`unexpected ${it.val} in input`);
  }

  private action(): Node | Ending {
    const it = this.nextNonSpace();
    if (it.type === 'keyword') {
      switch (it.val) {
        case 'block':
          return this.blockControl();
        case 'break':
        case 'continue':
          this.expect('rightDelim');
          if (this.rangeDepth === 0) fail(`{{${it.val}}} outside {{range}}`);
          return { t: it.val };
        case 'else': {
          const peek = this.peekNonSpace();
          if (this.isKeyword(peek, 'if') || this.isKeyword(peek, 'with')) return { t: 'else', chain: true };
          this.expect('rightDelim');
          return { t: 'else', chain: false };
        }
        case 'end':
          this.expect('rightDelim');
          return { t: 'end' };
        case 'if':
        case 'range':
        case 'with':
          return this.control(it.val);
        case 'template':
          return this.templateControl();
      }
      return fail(`unexpected ${it.val}`);
    }
    this.i--;
    return { t: 'action', pipe: this.pipeline('command', 'rightDelim') };
  }

  private control(context: 'if' | 'range' | 'with'): Node {
    const mark = this.vars.length;
    try {
      const pipe = this.pipeline(context, 'rightDelim');
      if (context === 'range') this.rangeDepth++;
      const [list, next] = this.itemList();
      if (context === 'range') this.rangeDepth--;
      let elseList: Node[] | undefined;
      if (next.t === 'else') {
        const peek = this.peek();
        if (next.chain && ((context === 'if' && this.isKeyword(peek, 'if')) || (context === 'with' && this.isKeyword(peek, 'with')))) {
          this.next();
          elseList = [this.control(context)];
        } else {
          const [els, end] = this.itemList();
          if (end.t !== 'end') fail('expected end; found else');
          elseList = els;
        }
      }
      return { t: context, pipe, list, elseList };
    } finally {
      this.vars.length = mark;
    }
  }

  private templateControl(): Node {
    const name = this.templateName();
    if (this.nextNonSpace().type === 'rightDelim') return { t: 'template', name };
    this.i--;
    return { t: 'template', name, pipe: this.pipeline('template clause', 'rightDelim') };
  }

  private blockControl(): Node {
    const name = this.templateName();
    const pipe = this.pipeline('block clause', 'rightDelim');
    const [list, end] = this.withFreshScope(() => this.itemList());
    if (end.t !== 'end') fail('unexpected else in block clause');
    this.addDefine(name, list);
    return { t: 'template', name, pipe };
  }

  private pipeline(context: string, end: ItemType): Pipe {
    const pipe: Pipe = { decl: [], isAssign: false, cmds: [] };
    for (;;) {
      const v = this.peekNonSpace();
      if (v.type !== 'variable') break;
      const save = this.i;
      this.next();
      const after = this.peekNonSpace();
      if (after.type === 'assign' || after.type === 'declare') {
        pipe.isAssign = after.type === 'assign';
        this.nextNonSpace();
        pipe.decl.push(v.val);
        this.vars.push(v.val);
        break;
      }
      if (after.type === 'comma') {
        this.nextNonSpace();
        pipe.decl.push(v.val);
        this.vars.push(v.val);
        if (context === 'range' && pipe.decl.length < 2) {
          const p = this.peekNonSpace().type;
          if (p === 'variable' || p === 'rightDelim' || p === 'rightParen') continue;
          fail('range can only initialize variables');
        }
        fail(`too many declarations in ${context}`);
      }
      this.i = save;
      break;
    }
    for (;;) {
      const it = this.nextNonSpace();
      if (it.type === end) {
        if (pipe.cmds.length === 0) fail(`missing value for ${context}`);
        pipe.cmds.slice(1).forEach((c) => {
          if (['bool', 'dot', 'nil', 'number', 'string'].includes(c[0]!.t)) fail('non executable command in pipeline');
        });
        return pipe;
      }
      if (['bool', 'char', 'dot', 'field', 'identifier', 'number', 'nil', 'rawString', 'string', 'variable', 'leftParen'].includes(it.type)) {
        this.i--;
        pipe.cmds.push(this.command());
      } else fail(`unexpected ${it.val} in ${context}`);
    }
  }

  private command(): Arg[] {
    const args: Arg[] = [];
    for (;;) {
      this.peekNonSpace();
      const operand = this.operand();
      if (operand) args.push(operand);
      const it = this.next();
      if (it.type === 'space') continue;
      if (it.type === 'rightDelim' || it.type === 'rightParen') this.i--;
      else if (it.type !== 'pipe') fail(`unexpected ${it.val} in operand`);
      break;
    }
    if (args.length === 0) fail('empty command');
    return args;
  }

  private operand(): Arg | undefined {
    const node = this.term();
    if (!node || this.peek().type !== 'field') return node;
    const idents: string[] = [];
    const pos = this.peek().pos;
    while (this.peek().type === 'field') idents.push(this.next().val.slice(1));
    if (node.t === 'field' || node.t === 'variable') return { ...node, idents: [...node.idents, ...idents], pos };
    if (['bool', 'string', 'number', 'nil', 'dot'].includes(node.t)) fail('unexpected . after term');
    return { t: 'chain', node, idents };
  }

  private term(): Arg | undefined {
    const it = this.nextNonSpace();
    switch (it.type) {
      case 'identifier':
        // hasFunction throws Unsupported for a function of Go's set that ESI does not render.
        if (!this.hasFunction(it.val)) fail(`function ${JSON.stringify(it.val)} not defined`);
        return { t: 'identifier', name: it.val };
      case 'dot':
        return { t: 'dot' };
      case 'nil':
        return { t: 'nil' };
      case 'variable':
        if (!this.vars.includes(it.val)) fail('undefined variable');
        return { t: 'variable', name: it.val, idents: [], pos: it.pos };
      case 'field':
        return { t: 'field', idents: [it.val.slice(1)], pos: it.pos };
      case 'bool':
        return { t: 'bool', value: it.val === 'true' };
      case 'number':
        return number(it.val);
      case 'char':
        throw new Unsupported("character constants ('x')");
      case 'leftParen':
        return { t: 'pipe', pipe: this.pipeline('parenthesized pipeline', 'rightParen') };
      case 'string':
      case 'rawString':
        return { t: 'string', value: unquote(it) };
    }
    this.i--;
    return undefined;
  }
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Decimal integers and floats; Go's other number forms (hex, octal, binary, underscores,
 *  imaginary) are refused. */
function number(text: string): Arg {
  if (/^[+-]?(0|[1-9][0-9]*)$/.test(text)) {
    const int = BigInt(text);
    if (int < INT64_MIN || int > INT64_MAX) throw new Unsupported('integer constant out of int64 range');
    return { t: 'number', text, int, float: Number(text), isFloatText: false };
  }
  if (/^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$/.test(text) && !/^[+-]?0[0-9]/.test(text)) {
    const float = Number(text);
    if (!Number.isFinite(float)) throw new Unsupported('float constant out of range');
    const int = Number.isInteger(float) && Math.abs(float) < 2 ** 63 ? BigInt(float) : undefined;
    return { t: 'number', text, int, float, isFloatText: true };
  }
  throw new Unsupported(`number syntax ${text}`);
}

const ESCAPES: Record<string, string> = { a: '\x07', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\', '"': '"' };

/** strconv.Unquote of a Go string or raw string literal. */
function unquote(it: Item): string {
  if (it.type === 'rawString') return it.val.slice(1, -1).replace(/\r/g, '');
  const body = it.val.slice(1, -1);
  return body.replace(/\\(U[0-9a-fA-F]{8}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|[0-7]{3}|.)/gs, (_m, e: string) => {
    if (e in ESCAPES) return ESCAPES[e]!;
    if (e[0] === 'u' || e[0] === 'U') {
      const cp = parseInt(e.slice(1), 16);
      if (cp > 0x10ffff || (cp >= 0xd800 && cp < 0xe000)) fail('invalid syntax');
      return String.fromCodePoint(cp);
    }
    // \x and octal escapes are bytes: only ASCII ones are the same character in JS.
    const byte = e[0] === 'x' ? parseInt(e.slice(1), 16) : /^[0-7]{3}$/.test(e) ? parseInt(e, 8) : fail('invalid syntax');
    if (byte > 0x7f) throw new Unsupported('non-ASCII byte escapes in a string');
    return String.fromCharCode(byte);
  });
}
