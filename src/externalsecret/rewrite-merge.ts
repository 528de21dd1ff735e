// `dataFrom[].rewrite[].merge` as ESO serves it: every value of the map is a JSON object;
// their members are merged, the keys read in sorted order and then the `priority` keys in
// their order (so a priority key's members win). A member seen twice is a conflict, an
// error unless `conflictPolicy: Ignore`. `strategy: Extract` (default) makes the merged
// members the new keys; `JSON` keeps the map and adds the merged object, as JSON with
// sorted keys, under `into`. Numbers keep the text they were written with (json-text.ts).
// Errors name keys, never values.
import type { ExternalSecretRewriteMerge } from '../api/types.js';
import { RemoteRefError } from '../providers/errors.js';
import { jsonNodeToBytes, parseJson } from '../providers/json-path.js';
import { isJsonObject, stringifyJson } from '../providers/json-text.js';
import { emptySecretMap, type SecretMap } from '../providers/types.js';

/** Go's encoding/json marshals maps with sorted keys: the same for every nested object. */
function sortedDeep(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortedDeep);
  if (!isJsonObject(v)) return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v).sort()) out[k] = sortedDeep(v[k]);
  return out;
}

/** Go's json.Marshal also escapes <, >, & and U+2028/U+2029 (only ever inside strings). */
const goEscaped = (json: string): string =>
  json.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

function mergedMembers(op: ExternalSecretRewriteMerge, map: SecretMap, where: string): { merged: Record<string, unknown>; conflicts: string[] } {
  const priority = op.priority ?? [];
  const keys = [...Object.keys(map).filter((k) => !priority.includes(k)).sort(), ...priority];
  const merged: Record<string, unknown> = {};
  const conflicts: string[] = [];
  for (const key of keys) {
    if (!Object.prototype.hasOwnProperty.call(map, key)) {
      if (op.priorityPolicy === 'IgnoreNotFound') continue;
      throw new RemoteRefError(`${where}: priority key "${key}" is not in the fetched keys`, 'InvalidSpec');
    }
    let node: unknown;
    try {
      node = parseJson(map[key]!);
    } catch {
      node = undefined;
    }
    if (!isJsonObject(node)) throw new RemoteRefError(`${where}: the value of "${key}" is not a JSON object`);
    for (const [k, v] of Object.entries(node)) {
      if (Object.prototype.hasOwnProperty.call(merged, k)) conflicts.push(k);
      merged[k] = v;
    }
  }
  return { merged, conflicts };
}

/** One merge step over the keys of a dataFrom entry. */
export function rewriteMerge(op: ExternalSecretRewriteMerge, map: SecretMap, where: string): SecretMap {
  const { merged, conflicts } = mergedMembers(op, map, where);
  if (op.conflictPolicy !== 'Ignore' && conflicts.length) {
    throw new RemoteRefError(`${where}: merge conflicts on ${conflicts.map((k) => `"${k}"`).join(', ')} (conflictPolicy Ignore lets the later value win)`, 'InvalidSpec');
  }
  const out = emptySecretMap();
  if ((op.strategy ?? 'Extract') === 'Extract') {
    for (const [k, v] of Object.entries(merged)) {
      out[k] = isJsonObject(v) || Array.isArray(v) ? new TextEncoder().encode(goEscaped(stringifyJson(sortedDeep(v)))) : jsonNodeToBytes(v);
    }
    return out;
  }
  if (!op.into) throw new RemoteRefError(`${where}: strategy JSON needs "into", the key that receives the merged object`, 'InvalidSpec');
  Object.assign(out, map);
  out[op.into] = new TextEncoder().encode(stringifyJson(sortedDeep(merged)));
  return out;
}
