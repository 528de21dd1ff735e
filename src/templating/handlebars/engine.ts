// The handlebars engine ESI renders templates with. One isolated Handlebars instance
// (Handlebars.create(): helpers registered here are invisible to any other user of the
// library) with:
//  - strict mode: a missing key is an error, not an empty string;
//  - knownHelpersOnly: only the pure helpers of helpers.ts (plus if/unless/each/with/
//    lookup) can be called; `log` is removed (it writes values to the console);
//  - prototype access off at every call: no `constructor`, `__proto__`, `toString`…;
//  - noEscape: rendered files are configuration, not HTML.
// Compiled templates are cached by source text.
import type Handlebars from 'handlebars';
import { TemplateError } from '../errors.js';
import { fromParseError, fromRenderError } from './errors.js';
import { detectGoTemplate } from './go-syntax.js';
import { handlebarsHelpers, HELPER_NAMES } from './helpers.js';
import { loadHandlebars } from '../lazy.js';
import { BudgetExceeded, charge, DEFAULT_RENDER_LIMITS, withBudget, type RenderLimits } from './budget.js';
import { safeObject } from './safe.js';
import { checkTemplateSyntax, TemplateSyntaxError } from './syntax.js';

export type TemplateContext = Record<string, unknown>;

/** Handlebars' own block helpers we keep; all are pure. */
const BUILTINS = ['if', 'unless', 'each', 'with', 'lookup'] as const;

const RUNTIME_OPTIONS: Handlebars.RuntimeOptions = {
  allowProtoPropertiesByDefault: false,
  allowProtoMethodsByDefault: false,
  allowedProtoProperties: {},
  allowedProtoMethods: {},
};

interface Compiled {
  ast: hbs.AST.Program;
  fn: Handlebars.TemplateDelegate;
  /** `{{…}}` expressions: each prints at most one context value outside any block. */
  mustaches: number;
}

type Block = ((...args: unknown[]) => string) & Record<string, unknown>;
type BlockOptions = { fn?: Block; inverse?: Block };

/** A block body that charges its output to the render budget. */
function metered(block: Block): Block {
  const wrapped = function (this: unknown, ...args: unknown[]): string {
    charge(0);
    const out = block.apply(this, args);
    charge(out.length);
    return out;
  } as Block;
  // Handlebars reads properties it set on programs (blockParams, depth).
  return Object.assign(wrapped, block);
}

/** The longest string a template could print without a helper or block: bounds the
 *  output of plain `{{path}}` expressions, which handlebars appends without a hook. */
function longestValue(v: unknown, depth = 0): number {
  if (typeof v === 'string') return v.length;
  if (v === null || typeof v !== 'object' || depth > 3) return 0;
  let max = 0;
  for (const x of Object.values(v)) max = Math.max(max, longestValue(x, depth + 1));
  return max;
}

export interface CompiledTemplate {
  /** Renders with `context`; throws TemplateError naming `name`. */
  render(name: string, context: TemplateContext): string;
}

let loggerSilenced = false;

/** Handlebars reports denied prototype access through console.* (its module-wide
 *  logger). The denial itself is what we want; the console output is not (product code
 *  logs through pino only), so raise the shared logger's threshold above every level. */
function silenceHandlebarsLogger(hb: typeof Handlebars): void {
  if (loggerSilenced) return;
  (hb as unknown as { logger: { level: string | number } }).logger.level = 'silent';
  loggerSilenced = true;
}

export class TemplateEngine {
  // Created on the first compile: constructing an engine does not load handlebars.
  private instance: typeof Handlebars | undefined;
  private readonly cache = new Map<string, Compiled>();
  private readonly compileOptions: CompileOptions;

  constructor(
    private readonly cacheSize = 256,
    /** Output and time limits of one render (docs/templates.md). */
    readonly limits: RenderLimits = DEFAULT_RENDER_LIMITS,
  ) {
    const knownHelpers: Record<string, boolean> = {};
    for (const name of [...BUILTINS, ...HELPER_NAMES]) knownHelpers[name] = true;
    // Handlebars' compiler treats `log` as known by default; we removed it.
    knownHelpers.log = false;
    this.compileOptions = { strict: true, noEscape: true, knownHelpersOnly: true, knownHelpers, preventIndent: true };
  }

  private get hb(): typeof Handlebars {
    if (this.instance) return this.instance;
    const hb = loadHandlebars().create();
    silenceHandlebarsLogger(hb);
    hb.unregisterHelper('log');
    for (const [name, fn] of Object.entries(handlebarsHelpers())) hb.registerHelper(name, fn);
    // Block helpers run their bodies through the budget (nested `each` is the classic bomb).
    for (const name of ['if', 'unless', 'each', 'with']) {
      const builtin = hb.helpers[name] as (...args: unknown[]) => unknown;
      hb.registerHelper(name, function (this: unknown, ...args: unknown[]) {
        const options = args[args.length - 1] as BlockOptions | undefined;
        if (options && typeof options === 'object') {
          if (options.fn) options.fn = metered(options.fn);
          if (options.inverse) options.inverse = metered(options.inverse);
        }
        return builtin.apply(this, args);
      });
    }
    return (this.instance = hb);
  }

  /** Parses (and caches) `source`; throws TemplateError for syntax errors, for Go
   *  template syntax (ESO's engine, which ESI does not implement) and unknown helpers. */
  compile(name: string, source: string): CompiledTemplate {
    const compiled = this.compiled(name, source);
    return { render: (n, context) => this.run(n, compiled, context) };
  }

  /** compile + render in one call. */
  render(name: string, source: string, context: TemplateContext): string {
    return this.run(name, this.compiled(name, source), context);
  }

  private compiled(name: string, source: string): Compiled {
    const hit = this.cache.get(source);
    if (hit) {
      // Refresh recency: Map iteration order is insertion order, so this is an LRU.
      this.cache.delete(source);
      this.cache.set(source, hit);
      return hit;
    }
    const compiled = this.parse(name, source);
    this.cache.set(source, compiled);
    if (this.cache.size > this.cacheSize) this.cache.delete(this.cache.keys().next().value!);
    return compiled;
  }

  private parse(name: string, source: string): Compiled {
    if (typeof source !== 'string') throw new TemplateError(name, 'template is not a string');
    const go = detectGoTemplate(source);
    if (go) {
      throw new TemplateError(
        name,
        'looks like a Go template (ESO engine); ESI renders handlebars only, e.g. {{db.password}} instead of {{ .password }} (see docs/templates.md)',
        go.line,
        go.column,
      );
    }
    let mustaches: number;
    try {
      // Linear, bounded check first: handlebars' own parser is super-linear on hostile
      // input, and partials/decorators (template bombs) are refused here.
      mustaches = checkTemplateSyntax(source).mustaches;
    } catch (err) {
      if (err instanceof TemplateSyntaxError) throw new TemplateError(name, err.reason, err.line, err.column);
      throw err;
    }
    let ast: hbs.AST.Program;
    try {
      ast = this.hb.parse(source);
    } catch (err) {
      const lexer = (this.hb as unknown as { Parser?: { lexer?: { yylloc?: { first_line?: number; first_column?: number } } } })
        .Parser?.lexer?.yylloc;
      throw fromParseError(name, err, lexer);
    }
    const fn = this.hb.compile(ast, this.compileOptions);
    // Handlebars compiles lazily on first call; force it now with an empty context
    // so compile-time errors (unknown helpers) surface at compile time. Runtime errors
    // of this dry run (missing keys) are expected and ignored.
    try {
      withBudget(this.limits, () => fn(safeObject(), RUNTIME_OPTIONS));
    } catch (err) {
      const e = err as { message?: string };
      if (/knownHelpersOnly|unknown helper/.test(String(e?.message))) throw fromRenderError(name, ast, err);
    }
    return { ast, fn, mustaches };
  }

  private run(name: string, compiled: Compiled, context: TemplateContext): string {
    const { maxOutput } = this.limits;
    const work = maxOutput * 64;
    if (compiled.mustaches * longestValue(context) > work) {
      throw new TemplateError(name, `could print more than the limit of ${work} characters (${compiled.mustaches} expressions × values up to ${longestValue(context)} characters)`);
    }
    let out: string;
    try {
      out = withBudget(this.limits, () => compiled.fn(context, RUNTIME_OPTIONS));
    } catch (err) {
      if (err instanceof BudgetExceeded) throw new TemplateError(name, err.reason);
      throw fromRenderError(name, compiled.ast, err);
    }
    if (out.length > maxOutput) throw new TemplateError(name, `output exceeds the limit of ${maxOutput} characters per template`);
    return out;
  }
}

type CompileOptions = NonNullable<Parameters<typeof Handlebars.compile>[1]>;
