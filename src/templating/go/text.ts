// ESO's Go templates (text/template + Sprig + missingkey=error) rendered in TypeScript, the
// only engine the product runs (docs/decisions/0087-templating-engines.md). The real Go
// engine is the tests' oracle: test/src/templating/go/index.differential.test.ts holds this engine to
// byte-identical output against it. What the engine cannot render exactly (a function it
// does not implement, byte-level cases) it refuses with Unsupported, naming the function or
// the case; index.ts turns that into the template's error.
import { BUILTINS } from './builtins.js';
import { GoExecError, GoSyntaxError, Unsupported } from './errors.js';
import { REFUSED_FUNCTIONS } from './refused.js';
import { execute, OutputTooLarge, type ExecLimits, type FuncMap, type GoFunc } from './exec.js';
import { parse, type Parsed } from './parser.js';
import { SPRIG } from './sprig.js';
import { SPRIG_MORE } from './sprig-lists.js';
import { SPRIG_REGEX } from './sprig-regex.js';
import { ESO_CERTS } from './eso-certs.js';
import { ESO_JWK } from './eso-jwk.js';
import { ESO_PEM } from './eso-pem.js';
import { ESO_PKCS12 } from './eso-pkcs12.js';
import { ESO_PKCS12_ENCODE } from './eso-pkcs12-encode.js';
import { ESO_TRUSTSTORE } from './eso-truststore.js';
import { ESO_RSA } from './eso-rsa.js';
import { Bytes, stringMap, type Value } from './values.js';

export { AllocationExceeded } from './alloc.js';
export { ExecFailure, GoExecError, GoSyntaxError, Unsupported } from './errors.js';
export { OutputTooLarge, type ExecLimits } from './exec.js';

const FUNCS: FuncMap = new Map<string, GoFunc>(Object.entries({ ...SPRIG, ...SPRIG_MORE, ...SPRIG_REGEX, ...ESO_PEM, ...ESO_CERTS, ...ESO_JWK, ...ESO_PKCS12, ...ESO_PKCS12_ENCODE, ...ESO_TRUSTSTORE, ...ESO_RSA, ...BUILTINS }));

/** The functions this engine renders itself (docs/templates.md lists them). */
export const TYPESCRIPT_FUNCTIONS: readonly string[] = [...FUNCS.keys()].sort();

const CACHE_SIZE = 256;
const cache = new Map<string, Parsed | Unsupported | GoSyntaxError>();

/** A function Go's set has and this engine refuses is named as such; any other name is
 *  Go's "not defined". */
function hasFunction(name: string): boolean {
  if (FUNCS.has(name)) return true;
  if (REFUSED_FUNCTIONS.has(name)) throw new Unsupported(`function ${JSON.stringify(name)} is not supported by ESI`);
  return false;
}

/** Parses `source` (cached by text); throws GoSyntaxError (Go rejects it too) or Unsupported. */
export function parseGoText(source: string): Parsed {
  let hit = cache.get(source);
  if (hit) {
    cache.delete(source);
  } else {
    try {
      hit = parse(source, hasFunction);
    } catch (err) {
      if (!(err instanceof Unsupported || err instanceof GoSyntaxError)) throw err;
      hit = err;
    }
    if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!);
  }
  cache.set(source, hit);
  if (hit instanceof Unsupported || hit instanceof GoSyntaxError) throw hit;
  return hit;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** The template's data as Go sees it (map[string]string). A value that is not UTF-8 is
 *  bytes a JavaScript string cannot hold: values.ts's Bytes. */
function dataOf(data: Record<string, Uint8Array>): Value {
  return stringMap(
    Object.entries(data).map(([k, v]): [string, Value] => {
      try {
        return [k, decoder.decode(v)];
      } catch {
        return [k, new Bytes(v) as unknown as Value];
      }
    }),
  );
}

/** The oracle's own redaction of its error text (test/support/templating/go-oracle/engine.go's
 *  redact: every data value of 3 bytes or more, replaced in turn; here longest first, one of
 *  the orders Go's map iteration may take), so that the messages compare byte for byte. */
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

/** Renders one template; throws GoSyntaxError, GoExecError (Go's message), ExecFailure (Go
 *  fails too), Unsupported (refused), OutputTooLarge (Go's size error) or `limits.onTimeout()`. */
export function renderGoText(name: string, source: string, data: Record<string, Uint8Array>, limits: ExecLimits): Uint8Array {
  const tree = parseGoText(source);
  let out: Uint8Array;
  try {
    out = execute(tree, { name, funcs: FUNCS }, dataOf(data), limits);
  } catch (err) {
    if (err instanceof GoExecError) throw new GoExecError(redactLikeGo(err.goMessage, data));
    if (err instanceof Unsupported || err instanceof OutputTooLarge || err === undefined) throw err;
    // A JavaScript limit (call stack) or a defect of this engine: refused, never guessed.
    if (err instanceof RangeError) throw new Unsupported('a template that nests or recurses deeper than the engine goes');
    if (err instanceof TypeError) throw new Unsupported(`an internal ${err.name} of the engine`);
    throw err;
  }
  return out;
}
