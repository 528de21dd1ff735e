// `result.jsonPath` of a webhook store: the JSONPath subset that selects one node, which
// is what ESO's documented stores use (`$.args.parameter`, `$.data.value`, `$.items[0]`):
// `$`, `.name`, `['name']` / `["name"]`, `[n]`. Wildcards, filters, slices and recursive
// descent select many nodes (ESO then takes the first) and are refused at admission.
import { RemoteRefError } from '../errors.js';
import { isJsonObject } from '../json-text.js';

export type Step = string | number;

/** Parses a path; throws an Error naming what is not supported. */
export function parseJsonPath(path: string): Step[] {
  if (!path.startsWith('$')) throw new Error('must start with $');
  const steps: Step[] = [];
  let i = 1;
  while (i < path.length) {
    if (path[i] === '.') {
      const m = /^[A-Za-z0-9_-]+/.exec(path.slice(i + 1));
      if (!m) throw new Error(`unsupported at offset ${i} (wildcards and recursive descent are not supported)`);
      steps.push(m[0]);
      i += 1 + m[0].length;
    } else if (path[i] === '[') {
      const rest = path.slice(i);
      const m = /^\[(?:(\d{1,9})|'([^'\\]*)'|"([^"\\]*)")\]/.exec(rest);
      if (!m) throw new Error(`unsupported at offset ${i} (filters, slices and wildcards are not supported)`);
      steps.push(m[1] !== undefined ? Number(m[1]) : (m[2] ?? m[3])!);
      i += m[0].length;
    } else {
      throw new Error(`unexpected character at offset ${i}`);
    }
  }
  return steps;
}

/** The node at `steps` of `root`; NotFound when the answer has none. */
export function selectJsonPath(root: unknown, steps: Step[], path: string): unknown {
  let node = root;
  for (const s of steps) {
    if (typeof s === 'number' && Array.isArray(node) && s < node.length) node = node[s];
    else if (typeof s === 'string' && isJsonObject(node) && Object.hasOwn(node, s)) node = node[s];
    else throw new RemoteRefError(`the answer has nothing at result.jsonPath ${path}`, 'NotFound');
  }
  return node;
}
