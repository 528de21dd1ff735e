// gjson paths (tidwall/gjson's SYNTAX.md) for `remoteRef.property` reads: ESO's providers
// resolve a property with gjson.Get, and no npm library implements that syntax, so this
// small module does. Parsing: path.ts; evaluation with a step budget: eval.ts; `@`
// modifiers: modifiers.ts; `*`/`?` patterns: match.ts.
import { Budget, evaluate } from './eval.js';
import { parsePath } from './path.js';

export { parsePath } from './path.js';

/** gjson.Get on a parsed JSON value: the node at `path`, or undefined when none exists.
 *  Throws RemoteRefError (InvalidSpec) for a malformed, unsupported or too costly path. */
export function gjsonGet(root: unknown, path: string): unknown {
  return evaluate(root, parsePath(path), new Budget());
}
