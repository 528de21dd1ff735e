// JSON edits of a pushed value: `property` (a dotted path, `\.` escapes a dot, as ESO's
// sjson paths) set in or removed from the JSON object of the latest version. Errors are
// value-free.
import { RemoteRefError, splitPath } from '../remote-ref.js';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The JSON object of an existing value (empty value or none = a new object). */
export function parseObject(current: Uint8Array | undefined): Obj {
  if (!current || current.length === 0) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(current).toString('utf8'));
  } catch {
    throw new RemoteRefError('the current value is not JSON, cannot set a property in it');
  }
  if (!isObj(parsed)) throw new RemoteRefError('the current value is not a JSON object, cannot set a property in it');
  return parsed;
}

/** `obj` with `property` set to the string `value` (intermediate objects created). */
export function setProperty(obj: Obj, property: string, value: string): Obj {
  const parts = splitPath(property);
  let node = obj;
  for (const part of parts.slice(0, -1)) {
    const next = Object.prototype.hasOwnProperty.call(node, part) ? node[part] : undefined;
    if (next !== undefined && !isObj(next)) throw new RemoteRefError(`property "${property}" crosses a non-object value`);
    if (next === undefined) node[part] = {};
    node = node[part] as Obj;
  }
  node[parts[parts.length - 1]!] = value;
  return obj;
}

/** Removes `property`; returns whether it was there. Emptied parents are removed too. */
export function deleteProperty(obj: Obj, property: string): boolean {
  const parts = splitPath(property);
  const trail: Obj[] = [obj];
  for (const part of parts.slice(0, -1)) {
    const next = trail[trail.length - 1]![part];
    if (!isObj(next)) return false;
    trail.push(next);
  }
  const last = parts[parts.length - 1]!;
  const leaf = trail[trail.length - 1]!;
  if (!Object.prototype.hasOwnProperty.call(leaf, last)) return false;
  delete leaf[last];
  for (let i = trail.length - 1; i > 0 && Object.keys(trail[i]!).length === 0; i--) delete trail[i - 1]![parts[i - 1]!];
  return true;
}

export function hasProperty(value: Uint8Array, property: string): boolean {
  let node: unknown;
  try {
    node = JSON.parse(Buffer.from(value).toString('utf8'));
  } catch {
    return false;
  }
  if (isObj(node) && Object.prototype.hasOwnProperty.call(node, property)) return true;
  for (const part of splitPath(property)) {
    if (!isObj(node) || !Object.prototype.hasOwnProperty.call(node, part)) return false;
    node = node[part];
  }
  return true;
}
