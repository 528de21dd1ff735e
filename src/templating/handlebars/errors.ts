// Turns whatever Handlebars throws into a TemplateError that names the template and the
// line/column and says what is wrong, WITHOUT echoing values. Handlebars' own messages
// cannot be passed on: a strict-mode lookup into a string throws a TypeError quoting
// the string (a secret), parse errors quote the source. We rebuild every message from
// locations and from path expressions of the template's AST, which hold no values.
import { TemplateError } from '../errors.js';
import { HelperError } from './helpers.js';


interface Loc {
  start: { line: number; column: number };
}

interface PathNode {
  type: 'PathExpression';
  original: string;
  parts: string[];
  loc?: Loc;
}

/** Every PathExpression of the AST, in source order. */
export function pathExpressions(ast: unknown): PathNode[] {
  const out: PathNode[] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (node === null || typeof node !== 'object') return;
    const n = node as Record<string, unknown>;
    if (n.type === 'PathExpression') out.push(n as unknown as PathNode);
    for (const [k, v] of Object.entries(n)) if (k !== 'loc' && typeof v === 'object') visit(v);
  };
  visit(ast);
  return out;
}

const STRICT = /^"(.*)" not defined in /s;
const IN_OPERATOR = /^Cannot use 'in' operator to search for '(.*?)' in /s;
const UNKNOWN_HELPER = /unknown helper (\S+?)(?: - \d+:\d+)?$/;
const TRAILING_LOC = / - (\d+):(\d+)$/;

function fromStrictLookup(name: string, ast: unknown, err: { lineNumber?: number; column?: number }, segment: string): TemplateError {
  const line = err.lineNumber;
  const col = err.column;
  const path = pathExpressions(ast).find((p) => p.loc?.start.line === line && p.loc?.start.column === col);
  const what = path ? path.original : segment;
  return new TemplateError(name, `"${what}" is not defined`, line, col === undefined ? undefined : col + 1);
}

/** A lookup of `segment` into a string value: find the path that does it. */
function fromLookupIntoString(name: string, ast: unknown, segment: string): TemplateError {
  const path = pathExpressions(ast).find((p) => p.parts.indexOf(segment) > 0);
  if (!path) return new TemplateError(name, `"${segment}" looked up in a value that is not an object`);
  const parent = path.parts.slice(0, path.parts.indexOf(segment)).join('.');
  const start = path.loc?.start;
  return new TemplateError(
    name,
    `"${path.original}": "${parent}" is a value, not an object`,
    start?.line,
    start ? start.column + 1 : undefined,
  );
}

/** Strips Handlebars' " - line:col" suffix off messages that carry no values. */
function fromHandlebarsException(name: string, message: string, err: { lineNumber?: number; column?: number }): TemplateError {
  const helper = UNKNOWN_HELPER.exec(message);
  const reason = helper ? `unknown helper "${helper[1]}" (see docs/templates.md for the helpers)` : message.replace(TRAILING_LOC, '');
  return new TemplateError(name, reason, err.lineNumber, err.column === undefined ? undefined : err.column + 1);
}

/** A Handlebars parse error: Jison's message quotes the source, so keep only the
 *  "Expecting …, got …" tail (grammar tokens) and take the position from the lexer. */
export function fromParseError(name: string, err: unknown, lexerLoc?: { first_line?: number; first_column?: number }): TemplateError {
  const e = err as { message?: string; lineNumber?: number; column?: number };
  const message = String(e?.message ?? '');
  if (e?.lineNumber !== undefined && !message.startsWith('Parse error')) return fromHandlebarsException(name, message, e);
  const tail = message.split('\n').at(-1) ?? '';
  const reason = /^Expecting /.test(tail) ? `syntax error: ${tail.charAt(0).toLowerCase()}${tail.slice(1)}` : 'syntax error';
  const line = lexerLoc?.first_line ?? Number(/line (\d+)/.exec(message)?.[1] ?? NaN);
  const col = lexerLoc?.first_column;
  return new TemplateError(name, reason, Number.isFinite(line) ? line : undefined, col === undefined ? undefined : col + 1);
}

/** Any error thrown while rendering `name`. */
export function fromRenderError(name: string, ast: unknown, err: unknown): TemplateError {
  if (err instanceof TemplateError) return err;
  if (err instanceof HelperError) {
    return new TemplateError(name, `helper ${err.helper}: ${err.reason}`, err.loc?.line, err.loc ? err.loc.column + 1 : undefined);
  }
  const e = err as { message?: string; lineNumber?: number; column?: number; name?: string };
  const message = String(e?.message ?? '');
  const strict = STRICT.exec(message);
  if (strict) return fromStrictLookup(name, ast, e, strict[1]!);
  const inOp = IN_OPERATOR.exec(message);
  if (inOp) return fromLookupIntoString(name, ast, inOp[1]!);
  if (e?.lineNumber !== undefined) return fromHandlebarsException(name, message, e);
  if (/could not be found/.test(message)) return new TemplateError(name, 'partials are not supported');
  return new TemplateError(name, `evaluation failed (${e?.name ?? 'error'})`);
}
