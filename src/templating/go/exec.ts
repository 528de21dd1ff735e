// The executor of Go's text/template (after its exec.go in Go's source) with missingkey=error,
// as ESO runs it. Every case where Go's execution fails throws ExecFailure (ESI's wording) or
// GoExecError (Go's own message); output and time are bounded as the oracle bounds them.
import { isTimeout, withAllocation } from './alloc.js';
import { goQuote } from './builtins.js';
import { ExecFailure, GoExecError, Unsupported } from './errors.js';
import type { Arg, Node, Parsed, Pipe } from './parser.js';
import { entryOrBytes, formatValue, Int64, isBytes, isStringMap, NOT_UTF8_USE, truth, sortedKeys, intOf, isInt, type Value } from './values.js';

/** How a function's parameter is filled: string, int, float64, bool, interface{},
 *  map[string]interface{}, or reflect.Value (text/template's own builtins); 'B' a string
 *  that may be bytes (values.ts's Bytes: the function reads bytes, not text). */
export type Param = 's' | 'i' | 'f' | 'b' | 'a' | 'm' | 'r' | 'B';

export interface GoFunc {
  params: Param[];
  /** The type of a variadic tail. */
  variadic?: Param;
  fn: (...args: Value[]) => Value;
}

export type FuncMap = ReadonlyMap<string, GoFunc>;

export interface ExecLimits {
  /** Bytes of output (Go's limitedBuffer). */
  maxOutput: number;
  /** performance.now() after which the render stops. */
  deadline: number;
  /** What a render past its deadline throws (index.ts's timeout error). */
  onTimeout: () => Error;
}

/** The output limit (the oracle's limitedBuffer): reported as the oracle reports it. */
export class OutputTooLarge extends Error {}

class Break {}
class Continue {}
const BREAK = new Break();
const CONTINUE = new Continue();
const MISSING = Symbol('missing');
type Final = Value | typeof MISSING;
/** Deeper {{template}} recursion is refused (Go's own limit is 100000). */
const MAX_DEPTH = 1000;

export function execute(tree: Parsed, at: { name: string; funcs: FuncMap }, data: Value, limits: ExecLimits): Uint8Array {
  return withAllocation(() => new State(tree, at.name, at.funcs, limits).run(data), limits);
}

class State {
  private out: (string | Uint8Array)[] = [];
  private bytes = 0;
  private steps = 0;
  private vars: { name: string; value: Value }[] = [];
  private depth = 0;
  /** The template executing (a define's name inside {{template}}): Go's error names it. */
  private current: string;

  constructor(
    private readonly tree: Parsed,
    private readonly name: string,
    private readonly funcs: FuncMap,
    private readonly limits: ExecLimits,
  ) {
    this.current = name;
  }

  run(data: Value): Uint8Array {
    this.vars = [{ name: '$', value: data }];
    this.walkList(data, this.tree.root);
    return Buffer.concat(this.out.map((x) => (typeof x === 'string' ? Buffer.from(x, 'utf8') : x)));
  }

  private step(): void {
    if ((++this.steps & 1023) === 0 && performance.now() > this.limits.deadline) throw this.limits.onTimeout();
  }

  private write(s: string | Uint8Array): void {
    this.bytes += typeof s === 'string' ? Buffer.byteLength(s) : s.length;
    if (this.bytes > this.limits.maxOutput) throw new OutputTooLarge();
    this.out.push(s);
  }

  private walkList(dot: Value, list: Node[]): void {
    for (const n of list) this.walk(dot, n);
  }

  private walk(dot: Value, n: Node): void {
    this.step();
    switch (n.t) {
      case 'text':
        return this.write(n.text);
      case 'action': {
        const v = this.evalPipeline(dot, n.pipe);
        if (n.pipe.decl.length === 0) this.write(isBytes(v) ? v.bytes : formatValue(v, true));
        return;
      }
      case 'if':
      case 'with': {
        const mark = this.vars.length;
        const v = this.evalPipeline(dot, n.pipe);
        if (truth(v)) this.walkList(n.t === 'with' ? v : dot, n.list);
        else if (n.elseList) this.walkList(dot, n.elseList);
        this.vars.length = mark;
        return;
      }
      case 'range':
        return this.walkRange(dot, n);
      case 'break':
        throw BREAK;
      case 'continue':
        throw CONTINUE;
      case 'template':
        return this.walkTemplate(dot, n);
    }
  }

  private walkTemplate(dot: Value, n: { name: string; pipe?: Pipe }): void {
    const body = this.tree.defines.get(n.name);
    if (n.name === this.name) throw new Unsupported('{{template}} of the template itself, by its name');
    if (!body) throw new ExecFailure(`no such template ${goQuote(n.name)}`);
    const value = n.pipe ? this.evalPipeline(dot, n.pipe) : null;
    if (++this.depth > MAX_DEPTH) throw new Unsupported(`{{template}} recursion deeper than ${MAX_DEPTH}`);
    const [saved, caller] = [this.vars, this.current];
    this.vars = [{ name: '$', value }];
    this.current = n.name;
    try {
      this.walkList(value, body);
    } finally {
      this.vars = saved;
      this.current = caller;
      this.depth--;
    }
  }

  private walkRange(dot: Value, n: { pipe: Pipe; list: Node[]; elseList?: Node[] }): void {
    const outer = this.vars.length;
    const val = this.evalPipeline(dot, n.pipe);
    const mark = this.vars.length;
    const decl = n.pipe.decl;
    const one = (index: Value, elem: Value): boolean => {
      if (decl.length > 0) {
        if (n.pipe.isAssign) this.setVar(decl.length > 1 ? decl[0]! : decl[0]!, decl.length > 1 ? index : elem);
        else this.vars[this.vars.length - 1]!.value = elem;
      }
      if (decl.length > 1) {
        if (n.pipe.isAssign) this.setVar(decl[1]!, elem);
        else this.vars[this.vars.length - 2]!.value = index;
      }
      try {
        this.walkList(elem, n.list);
      } catch (e) {
        if (e === BREAK) return false;
        if (e !== CONTINUE) throw e;
      } finally {
        this.vars.length = mark;
      }
      return true;
    };
    let ran = false;
    if (Array.isArray(val)) {
      for (let i = 0; i < val.length && one(BigInt(i), val[i]!); i++) ran = true;
      ran ||= val.length > 0;
    } else if (val instanceof Map) {
      const keys = sortedKeys(val);
      for (const k of keys) if (!one(k, entryOrBytes(val, k))) break;
      ran = keys.length > 0;
    } else if (isInt(val)) {
      if (decl.length > 1) throw new ExecFailure('range over an integer with two variables');
      const count = intOf(val);
      const wrap = (i: bigint): Value => (typeof val === 'bigint' ? i : new Int64(i));
      for (let i = 0n; i < count; i++) {
        this.step();
        if (!one(null, wrap(i))) break;
      }
      ran = count > 0n;
    } else if (isBytes(val)) {
      throw new Unsupported(NOT_UTF8_USE);
    } else if (val !== null) {
      throw new ExecFailure(`range can't iterate over a ${typeof val}`);
    }
    if (!ran && n.elseList) this.walkList(dot, n.elseList);
    this.vars.length = outer;
  }

  private setVar(name: string, value: Value): void {
    for (let i = this.vars.length - 1; i >= 0; i--) {
      if (this.vars[i]!.name === name) {
        this.vars[i]!.value = value;
        return;
      }
    }
    throw new ExecFailure('undefined variable');
  }

  private varValue(name: string): Value {
    for (let i = this.vars.length - 1; i >= 0; i--) if (this.vars[i]!.name === name) return this.vars[i]!.value;
    throw new ExecFailure('undefined variable');
  }

  evalPipeline(dot: Value, pipe: Pipe): Value {
    let value: Final = MISSING;
    for (const cmd of pipe.cmds) value = this.evalCommand(dot, cmd, value);
    const v = value as Value;
    for (const name of pipe.decl) {
      if (pipe.isAssign) this.setVar(name, v);
      else this.vars.push({ name, value: v });
    }
    return v;
  }

  private notAFunction(args: Arg[], final: Final): void {
    if (args.length > 1 || final !== MISSING) throw new ExecFailure("can't give argument to non-function");
  }

  private evalCommand(dot: Value, args: Arg[], final: Final): Value {
    const first = args[0]!;
    this.step();
    switch (first.t) {
      case 'field':
        return this.fieldChain(dot, first, args, final);
      case 'variable': {
        const v = this.varValue(first.name);
        if (first.idents.length === 0) {
          this.notAFunction(args, final);
          return v;
        }
        return this.fieldChain(v, first, args, final);
      }
      case 'chain': {
        if (first.node.t !== 'pipe') throw new Unsupported('a field chain on a value that is not a parenthesized pipeline');
        return this.fieldChain(this.evalPipeline(dot, first.node.pipe), first, args, final);
      }
      case 'identifier':
        return this.call(dot, first.name, args.slice(1), final);
      case 'pipe':
        this.notAFunction(args, final);
        return this.evalPipeline(dot, first.pipe);
    }
    this.notAFunction(args, final);
    switch (first.t) {
      case 'bool':
        return first.value;
      case 'dot':
        return dot;
      case 'nil':
        throw new ExecFailure('nil is not a command');
      case 'number':
        return first.isFloatText ? first.float : first.int!;
      case 'string':
        return first.value;
    }
  }

  /** Go's error at `node` (exec.go's errorf: the parse name, line and byte column, the
   *  executing template, the node as written). */
  private goError(node: Extract<Arg, { t: 'field' | 'variable' }>, message: string): GoExecError {
    const text = node.t === 'field' ? `.${node.idents.join('.')}` : [node.name, ...node.idents].join('.');
    const before = this.tree.source.slice(0, node.pos);
    const nl = before.lastIndexOf('\n');
    const line = 1 + before.split('\n').length - 1;
    const col = Buffer.byteLength(nl < 0 ? before : before.slice(nl + 1));
    return new GoExecError(`template: ${this.name}:${line}:${col}: executing ${goQuote(this.current)} at <${text}>: ${message}`);
  }

  /** `.a.b` on `receiver` (the idents of `at`): map lookups; a missing key is an error
   *  (missingkey=error), worded as Go's where `at` is a field or a variable. */
  private fieldChain(receiver: Value, at: Extract<Arg, { t: 'field' | 'variable' | 'chain' }>, args: Arg[], final: Final): Value {
    const idents = at.idents;
    let v = receiver;
    // A value read from a map[string]string (the data, `split`) has Go's type string, which Go's
    // message names; elsewhere the type is Go's to tell (interface {}, []string…).
    let inStringMap = false;
    idents.forEach((id, i) => {
      if (!(v instanceof Map)) {
        if (inStringMap && typeof v === 'string' && at.t !== 'chain') throw this.goError(at, `can't evaluate field ${id} in type string`);
        throw new ExecFailure(`can't evaluate field ${id}`);
      }
      if (i === idents.length - 1 && (args.length > 1 || final !== MISSING)) throw new ExecFailure(`${id} is not a method but has arguments`);
      if (!v.has(id)) throw at.t === 'chain' ? new ExecFailure(`map has no entry for key ${id}`) : this.goError(at, `map has no entry for key ${goQuote(id)}`);
      inStringMap = isStringMap(v);
      v = entryOrBytes(v, id);
    });
    return v;
  }

  private call(dot: Value, name: string, args: Arg[], final: Final): Value {
    const f = this.funcs.get(name);
    if (!f) throw new Unsupported(`function ${JSON.stringify(name)}`);
    const count = args.length + (final === MISSING ? 0 : 1);
    if (f.variadic ? count < f.params.length : count !== f.params.length) throw new ExecFailure(`wrong number of args for ${name}`);
    const paramAt = (i: number): Param => (i < f.params.length ? f.params[i]! : f.variadic!);
    if (name === 'and' || name === 'or') {
      let v: Value = null;
      for (const a of args) {
        v = this.evalArg(dot, 'r', a);
        if (truth(v) === (name === 'or')) return v;
      }
      return final === MISSING ? v : final;
    }
    const argv = args.map((a, i) => this.evalArg(dot, paramAt(i), a));
    if (final !== MISSING) argv.push(validate(final, paramAt(args.length), true));
    try {
      return f.fn(...argv);
    } catch (e) {
      if (e instanceof Unsupported || isTimeout(e)) throw e;
      // Not a Go failure this engine knows of: refused rather than guessed.
      throw new Unsupported(`${name}: an internal ${e instanceof Error ? e.name : 'error'} of the engine`);
    }
  }

  private evalArg(dot: Value, param: Param, a: Arg): Value {
    switch (a.t) {
      case 'dot':
        return validate(dot, param, false);
      case 'nil':
        if (param === 'a' || param === 'm') return null;
        throw new ExecFailure('cannot assign nil');
      case 'field':
      case 'variable':
      case 'chain':
      case 'pipe':
        return validate(this.evalCommand(dot, [a], MISSING), param, false);
      case 'identifier':
        return validate(this.call(dot, a.name, [], MISSING), param, false);
    }
    return constant(a, param);
  }
}

/** A literal argument (evalBool, evalString, evalInteger, evalFloat, evalEmptyInterface). */
function constant(a: Arg, param: Param): Value {
  const any = param === 'a' || param === 'r';
  if (a.t === 'bool' && (param === 'b' || any)) return a.value;
  if (a.t === 'string' && (param === 's' || param === 'B' || any)) return a.value;
  if (a.t === 'number') {
    if (any) return a.isFloatText ? a.float : a.int!;
    if (param === 'i' && a.int !== undefined) return a.int;
    if (param === 'f') return a.float;
  }
  throw new ExecFailure('wrong type of constant argument');
}

/** text/template's validateType: a value must have the parameter's type exactly. */
function validate(v: Value, param: Param, final: boolean): Value {
  if (isBytes(v)) {
    if (param === 'B') return v;
    throw new Unsupported(NOT_UTF8_USE);
  }
  switch (param) {
    case 'a':
      return v;
    case 'r':
      if (v === null && final) throw new ExecFailure('invalid value');
      return v;
    case 'B':
    case 's':
      if (typeof v === 'string') return v;
      break;
    case 'i':
      if (typeof v === 'bigint') return v;
      break;
    case 'f':
      if (typeof v === 'number') return v;
      break;
    case 'b':
      if (typeof v === 'boolean') return v;
      break;
    case 'm':
      if (v === null || (v instanceof Map && !isStringMap(v))) return v;
      break;
  }
  throw new ExecFailure('wrong type for value');
}
