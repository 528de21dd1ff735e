// The one JSON path module of every provider: what `remoteRef.property` means inside a
// structured (JSON) remote value, for reads and for PushSecret writes.
//
// One meaning of `property`, two modes, chosen per provider as ESO does:
//  - reads (every provider): an exact top-level key of that name first, else a gjson
//    path (`a.b.0`, `\.` escapes, `#`, `#(...)` queries, wildcards, modifiers: gjson/),
//    as ESO's gjson lookups;
//  - writes: `path` (aws, gcpsm: ESO uses sjson, so `a.b` creates/edits a nested object)
//    or `key` (vault, azurekv, kubernetes, fake, grpc: `a.b` is one flat key). Each
//    provider declares its mode in `capabilities.pushProperty` (its meta.ts).
// Prototype safety: a dotted segment `__proto__`, `constructor` or `prototype` is refused
// in both modes, so no property can reach Object.prototype whatever object holds the JSON.
// Errors are RemoteRefErrors that name the property, never the value.
// Numbers keep the text they were written with, on reads and on writes (json-text.ts).
import { guard, RemoteRefError } from './errors.js';
import { gjsonGet } from './gjson/index.js';
import { gjsonNumberString, isJsonNumber, isJsonObject, numberText, parseJsonText, stringifyJson } from './json-text.js';
import { emptySecretMap, type PropertyMode, type RemoteRef, type SecretMap } from './types.js';

export type { PropertyMode };
type Obj = Record<string, unknown>;

const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);
const isObj = isJsonObject;
const own = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

/** Splits a gjson-style dotted path; `\.` escapes a dot inside a name. */
function splitPath(path: string): string[] {
  const parts: string[] = [];
  let cur = '';
  for (let i = 0; i < path.length; i++) {
    const c = path[i];
    if (c === '\\' && path[i + 1] === '.') {
      cur += '.';
      i++;
    } else if (c === '.') {
      parts.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  parts.push(cur);
  return parts;
}

/** The segments of `property` in `mode`; throws (InvalidSpec) on an empty property or a
 *  prototype segment. Every function below starts here. */
export function propertySegments(property: string, mode: PropertyMode): string[] {
  if (typeof property !== 'string' || property === '') throw new RemoteRefError('property must be a non-empty string', 'InvalidSpec');
  // Checked on the dotted segments in both modes: one rule, whichever mode reads it later.
  const bad = [property, ...splitPath(property)].find((p) => FORBIDDEN.has(p));
  if (bad) throw new RemoteRefError(`property "${property}" names "${bad}", which is not allowed`, 'InvalidSpec');
  return mode === 'key' ? [property] : splitPath(property);
}

/** Parses a remote value as JSON, numbers as written. Parser messages quote the input:
 *  never passed on. */
export function parseJson(value: Uint8Array | string): unknown {
  try {
    return parseJsonText(typeof value === 'string' ? value : Buffer.from(value).toString('utf8'));
  } catch {
    throw new RemoteRefError('value is not JSON');
  }
}

function child(node: unknown, name: string): unknown {
  if (Array.isArray(node)) return /^\d+$/.test(name) ? (node[Number(name)] as unknown) : undefined;
  if (isObj(node) && own(node, name)) return node[name];
  return undefined;
}

/** The read meaning of `property` on a parsed JSON node: the exact top-level key first,
 *  else the gjson path. Undefined when absent. */
export function selectNode(root: unknown, property: string): unknown {
  propertySegments(property, 'path');
  const direct = child(root, property);
  if (direct !== undefined) return direct;
  return gjsonGet(root, property);
}

/** How ESO providers turn a JSON node into bytes: strings raw, `null` empty, numbers as
 *  written, everything else as compact JSON (its numbers as written too). */
export function jsonNodeToBytes(node: unknown): Uint8Array {
  if (typeof node === 'string') return new TextEncoder().encode(node);
  if (node === null) return new Uint8Array();
  if (isJsonNumber(node)) return new TextEncoder().encode(numberText(node));
  return new TextEncoder().encode(stringifyJson(node));
}

/** The JSON node at `property` of a structured value, or undefined. */
export function findProperty(value: Uint8Array, property: string): unknown {
  propertySegments(property, 'path');
  return selectNode(parseJson(value), property);
}

/** A node a property selected, as ESO writes it (gjson's Result.String()): as
 *  jsonNodeToBytes, but a number in gjson's string form (`1e3` → `1000`, json-text.ts). */
export function propertyBytes(node: unknown): Uint8Array {
  return isJsonNumber(node) ? new TextEncoder().encode(gjsonNumberString(numberText(node))) : jsonNodeToBytes(node);
}

/** `remoteRef.property`: the field of a JSON value as bytes; NotFound when absent. */
export function extractProperty(value: Uint8Array, property: string): Uint8Array {
  const node = findProperty(value, property);
  if (node === undefined) throw new RemoteRefError(`property "${property}" not found`, 'NotFound');
  return propertyBytes(node);
}

/** A JSON object node as a key → bytes map (prototype-free). */
export function objectToSecretMap(node: unknown, what: string): SecretMap {
  if (!isObj(node)) throw new RemoteRefError(`${what} is not a JSON object`);
  const out = emptySecretMap();
  for (const [k, v] of Object.entries(node)) out[k] = jsonNodeToBytes(v);
  return out;
}

/** `dataFrom.extract`: a JSON object value (or its `property`) as a key → bytes map. */
export function jsonToSecretMap(value: Uint8Array, property?: string): SecretMap {
  if (!property) return objectToSecretMap(parseJson(value), 'value');
  const node = findProperty(value, property);
  if (node === undefined) throw new RemoteRefError(`property "${property}" not found`, 'NotFound');
  return objectToSecretMap(node, `property "${property}"`);
}

/** A fetched value narrowed by `ref.property` (the whole value without one); failures
 *  as the store's ProviderError naming the key. */
export function selectProperty(value: Uint8Array, ref: RemoteRef, storeId: string): Uint8Array {
  return ref.property ? guard({ storeId, key: ref.key }, () => extractProperty(value, ref.property!)) : value;
}

/** A fetched value read as a JSON map (`dataFrom.extract`), narrowed by `ref.property`. */
export function valueAsMap(value: Uint8Array, ref: RemoteRef, storeId: string): SecretMap {
  return guard({ storeId, key: ref.key }, () => jsonToSecretMap(value, ref.property));
}

/** The JSON object a value holds, or undefined when it is not JSON or not an object. */
export function asJsonObject(value: Uint8Array | string): Record<string, unknown> | undefined {
  try {
    const node = parseJson(value);
    return isObj(node) ? node : undefined;
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------- writes

/** The JSON object of the current remote value; empty or absent = a new object. */
function parseJsonObject(current: Uint8Array | string | undefined): Obj {
  const text = current === undefined ? '' : typeof current === 'string' ? current : Buffer.from(current).toString('utf8');
  if (text.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = parseJsonText(text);
  } catch {
    throw new RemoteRefError('the current value is not JSON, so a property cannot be set in it');
  }
  if (!isObj(parsed)) throw new RemoteRefError('the current value is not a JSON object, so a property cannot be set in it');
  return parsed;
}

/** The current value with `property` set to the string `value` (objects on the way
 *  created in `path` mode); returns the new JSON text. */
export function setProperty(current: Uint8Array | string | undefined, property: string, value: string, mode: PropertyMode): string {
  const parts = propertySegments(property, mode);
  const root = parseJsonObject(current);
  let node = root;
  for (const part of parts.slice(0, -1)) {
    const next = own(node, part) ? node[part] : undefined;
    if (next !== undefined && !isObj(next)) throw new RemoteRefError(`property "${property}": "${part}" is not a JSON object`);
    if (next === undefined) node[part] = {};
    node = node[part] as Obj;
  }
  node[parts[parts.length - 1]!] = value;
  // The other fields go back as they were read, numbers included.
  return stringifyJson(root);
}

/** The current value without `property` (emptied parent objects removed in `path` mode).
 *  `value` undefined = nothing is left (the caller deletes the whole secret). */
export function deleteProperty(current: Uint8Array | string, property: string, mode: PropertyMode): { value: string | undefined; changed: boolean } {
  const parts = propertySegments(property, mode);
  const root = parseJsonObject(current);
  const done = () => ({ value: Object.keys(root).length === 0 ? undefined : stringifyJson(root), changed: true });
  if (own(root, property)) {
    delete root[property];
    return done();
  }
  const unchanged = { value: typeof current === 'string' ? current : Buffer.from(current).toString('utf8'), changed: false };
  const trail: Obj[] = [root];
  for (const part of parts.slice(0, -1)) {
    const next = child(trail[trail.length - 1], part);
    if (!isObj(next)) return unchanged;
    trail.push(next);
  }
  const last = parts[parts.length - 1]!;
  const leaf = trail[trail.length - 1]!;
  if (!own(leaf, last)) return unchanged;
  delete leaf[last];
  for (let i = trail.length - 1; i > 0 && Object.keys(trail[i]!).length === 0; i--) delete trail[i - 1]![parts[i - 1]!];
  return done();
}

/** Whether the current JSON object value has `property` (false when it is not JSON). */
export function hasProperty(current: Uint8Array | string, property: string, mode: PropertyMode): boolean {
  propertySegments(property, mode);
  let root: unknown;
  try {
    root = parseJson(current);
  } catch {
    return false;
  }
  return mode === 'key' ? isObj(root) && own(root, property) : selectNode(root, property) !== undefined;
}
