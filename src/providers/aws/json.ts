// PushSecret with a `property`: the pushed value becomes (or replaces) one field of a
// JSON object stored remotely, addressed by a dotted path as ESO's providers do (gjson /
// sjson syntax, `\.` for a literal dot). Errors never quote the stored value.
import { RemoteRefError, splitPath } from '../remote-ref.js';

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Parses the current remote value as a JSON object; empty means `{}`. */
export function parseObject(current: string | undefined): Obj {
  if (current === undefined || current.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(current);
  } catch {
    throw new RemoteRefError('the existing value is not JSON, so a property cannot be set in it');
  }
  if (!isObject(parsed)) throw new RemoteRefError('the existing value is not a JSON object, so a property cannot be set in it');
  return parsed;
}

/** Sets `property` (dotted path) to the string `value`, creating objects on the way. */
export function setProperty(current: string | undefined, property: string, value: string): string {
  const root = parseObject(current);
  const parts = splitPath(property);
  let node: Obj = root;
  for (const part of parts.slice(0, -1)) {
    const next = Object.prototype.hasOwnProperty.call(node, part) ? node[part] : undefined;
    if (next === undefined) node[part] = {};
    else if (!isObject(next)) throw new RemoteRefError(`property "${property}": "${part}" is not a JSON object`);
    node = node[part] as Obj;
  }
  Object.defineProperty(node, parts[parts.length - 1]!, { value, enumerable: true, writable: true, configurable: true });
  return JSON.stringify(root);
}

/** Removes `property` and the objects it leaves empty on its path; returns the new JSON
 *  text, or undefined when nothing is left (the caller then deletes the whole secret). */
export function deleteProperty(current: string, property: string): { value: string | undefined; changed: boolean } {
  const root = parseObject(current);
  if (Object.prototype.hasOwnProperty.call(root, property)) {
    delete root[property];
    return { value: Object.keys(root).length === 0 ? undefined : JSON.stringify(root), changed: true };
  }
  const parts = splitPath(property);
  const path: Obj[] = [root];
  for (const part of parts.slice(0, -1)) {
    const node = path[path.length - 1]!;
    const next = Object.prototype.hasOwnProperty.call(node, part) ? node[part] : undefined;
    if (!isObject(next)) return { value: current, changed: false };
    path.push(next);
  }
  const last = parts[parts.length - 1]!;
  if (!Object.prototype.hasOwnProperty.call(path[path.length - 1], last)) return { value: current, changed: false };
  delete path[path.length - 1]![last];
  for (let i = path.length - 1; i > 0 && Object.keys(path[i]!).length === 0; i--) delete path[i - 1]![parts[i - 1]!];
  return { value: Object.keys(root).length === 0 ? undefined : JSON.stringify(root), changed: true };
}

/** Whether the JSON object `current` has `property`. */
export function hasProperty(current: string, property: string): boolean {
  let node: unknown;
  try {
    node = parseObject(current);
  } catch {
    return false;
  }
  if (isObject(node) && Object.prototype.hasOwnProperty.call(node, property)) return true;
  for (const part of splitPath(property)) {
    if (!isObject(node) || !Object.prototype.hasOwnProperty.call(node, part)) return false;
    node = node[part];
  }
  return true;
}

/** Tags as the JSON object `metadataPolicy: Fetch` returns (ESO: tag key → value). */
export function tagsToJson(tags: { Key?: string; Value?: string }[] | undefined): Uint8Array {
  const out: Record<string, string> = {};
  for (const t of tags ?? []) if (t.Key !== undefined) out[t.Key] = t.Value ?? '';
  return new TextEncoder().encode(JSON.stringify(out));
}
