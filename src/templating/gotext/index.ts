// ESO's Go templates (text/template + Sprig + missingkey=error) rendered in TypeScript,
// with the Go engine as the oracle: test/src/templating/gotext/index.differential.test.ts holds this
// engine to byte-identical output against it. The engine renders what it can show exact
// and declines the rest with Unsupported (a function it does not implement, Go's error
// paths, byte-level cases), and src/templating/go/index.ts hands those templates to the
// WebAssembly Go engine. docs/decisions/0071-go-templates-in-typescript.md.
import { BUILTINS } from './builtins.js';
import { GoExecError, Unsupported } from './errors.js';
import { execute, OutputTooLarge, type ExecLimits, type FuncMap, type GoFunc } from './exec.js';
import { parse, type Parsed } from './parser.js';
import { SPRIG } from './sprig.js';
import { SPRIG_MORE } from './sprig-lists.js';
import { SPRIG_REGEX } from './sprig-regex.js';
import { NOT_UTF8, stringMap, type Value } from './values.js';

export { ExecFailure, GoExecError, Unsupported } from './errors.js';
export { OutputTooLarge, type ExecLimits } from './exec.js';

const FUNCS: FuncMap = new Map<string, GoFunc>(Object.entries({ ...SPRIG, ...SPRIG_MORE, ...SPRIG_REGEX, ...BUILTINS }));

/** The functions this engine renders itself (docs/templates.md lists them). */
export const TYPESCRIPT_FUNCTIONS: readonly string[] = [...FUNCS.keys()].sort();

const CACHE_SIZE = 256;
const cache = new Map<string, Parsed | Unsupported>();

/** Parses `source` (cached by text); throws Unsupported when Go should parse it. */
export function parseGoText(source: string): Parsed {
  let hit = cache.get(source);
  if (hit) {
    cache.delete(source);
  } else {
    try {
      hit = parse(source, (name) => FUNCS.has(name));
    } catch (err) {
      if (!(err instanceof Unsupported)) throw err;
      hit = err;
    }
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
  }
  cache.set(source, hit);
  if (hit instanceof Unsupported) throw hit;
  return hit;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** The template's data as Go sees it (map[string]string). A value that is not UTF-8 is
 *  bytes a JavaScript string cannot hold: reading it declines the template. */
function dataOf(data: Record<string, Uint8Array>): Value {
  return stringMap(
    Object.entries(data).map(([k, v]): [string, Value] => {
      try {
        return [k, decoder.decode(v)];
      } catch {
        return [k, NOT_UTF8];
      }
    }),
  );
}

/** The Go engine's own redaction of its error text (src/templating/go/engine/engine.go's
 *  redact: every data value of 3 bytes or more, replaced in turn; here longest first, one of
 *  the orders Go's map iteration may take). */
function redactLikeGo(message: string, data: Record<string, Uint8Array>): string {
  // A value that is not UTF-8 cannot occur in the (UTF-8) message.
  const values = Object.values(data)
    .filter((v) => v.length >= 3)
    .flatMap((v) => {
      try {
        return [decoder.decode(v)];
      } catch {
        return [];
      }
    })
    .sort((a, b) => Buffer.byteLength(b) - Buffer.byteLength(a));
  return values.reduce((m, v) => m.split(v).join('<redacted>'), message);
}

/** Renders one template; throws GoExecError (Go's message), Unsupported (Go renders it), OutputTooLarge (Go's size
 *  error) or `limits.onTimeout()`. */
export function renderGoText(name: string, source: string, data: Record<string, Uint8Array>, limits: ExecLimits): Uint8Array {
  const tree = parseGoText(source);
  let out: string;
  try {
    out = execute(tree, { name, funcs: FUNCS }, dataOf(data), limits);
  } catch (err) {
    if (err instanceof GoExecError) throw new GoExecError(redactLikeGo(err.goMessage, data));
    if (err instanceof Unsupported || err instanceof OutputTooLarge || err === undefined) throw err;
    // A JavaScript limit (call stack) or a defect of this engine: Go decides.
    if (err instanceof RangeError || err instanceof TypeError) throw new Unsupported(`${err.name} in the TypeScript engine`);
    throw err;
  }
  return Buffer.from(out, 'utf8');
}
