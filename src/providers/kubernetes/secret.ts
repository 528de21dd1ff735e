// ESO's kubernetes-provider semantics on a fetched Secret object (pure functions):
// - no `property`: the whole `data` as a JSON object of strings (keys sorted);
// - `property`: a data key; when no key is named so, `<key>.<path>` is a JSON path into
//   the value of data key `<key>` (e.g. `config.json.db.host`);
// - `metadataPolicy: Fetch`: the same over `{"annotations": {...}, "labels": {...}}`
//   (`labels`, `labels.<name>`, `labels.<name>.<path>`);
// - a map (`dataFrom.extract`): the data keys, or the JSON object a property selects.
import { RemoteRefError } from '../errors.js';
import { findProperty, jsonToSecretMap, propertyBytes, propertySegments } from '../json-path.js';
import { emptySecretMap, type RemoteRef, type SecretMap } from '../types.js';

export interface KubeSecret {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  type?: string;
  immutable?: boolean;
  /** Values are base64 on the wire. */
  data?: Record<string, string>;
}

const enc = new TextEncoder();

/** The Secret's data as bytes. */
export function dataOf(secret: KubeSecret): SecretMap {
  const out = emptySecretMap();
  for (const [k, v] of Object.entries(secret.data ?? {})) out[k] = new Uint8Array(Buffer.from(v ?? '', 'base64'));
  return out;
}

function sortedObject(entries: [string, unknown][]): Record<string, unknown> {
  const out = Object.create(null) as Record<string, unknown>;
  for (const [k, v] of entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) out[k] = v;
  return out;
}

/** A key → bytes map as one JSON object of UTF-8 strings (what ESO returns). */
export function mapToJson(map: SecretMap): Uint8Array {
  return enc.encode(JSON.stringify(sortedObject(Object.entries(map).map(([k, v]) => [k, Buffer.from(v).toString('utf8')]))));
}

function stringMap(m: Record<string, string> | undefined): Record<string, unknown> {
  return sortedObject(Object.entries(m ?? {}));
}

function metadataObject(secret: KubeSecret): Record<string, unknown> {
  return { annotations: stringMap(secret.metadata?.annotations), labels: stringMap(secret.metadata?.labels) };
}

/** Looks `property` up in a string → bytes map: the whole property as a key first, then
 *  `<key>.<path>` for each dot (left to right) whose prefix is a key holding JSON. */
function lookup(map: Record<string, Uint8Array>, property: string): Uint8Array | undefined {
  if (Object.prototype.hasOwnProperty.call(map, property)) return map[property];
  for (let i = property.indexOf('.'); i > 0 && i < property.length - 1; i = property.indexOf('.', i + 1)) {
    const key = property.slice(0, i);
    if (!Object.prototype.hasOwnProperty.call(map, key)) continue;
    let node: unknown;
    try {
      node = findProperty(map[key]!, property.slice(i + 1));
    } catch {
      continue; // the value is not JSON: no path inside it
    }
    if (node !== undefined) return propertyBytes(node);
  }
  return undefined;
}

function metadataValue(secret: KubeSecret, property: string): Uint8Array | undefined {
  const meta = metadataObject(secret);
  const dot = property.indexOf('.');
  const head = dot < 0 ? property : property.slice(0, dot);
  if (head !== 'labels' && head !== 'annotations') return undefined;
  const m = meta[head] as Record<string, string>;
  if (dot < 0) return enc.encode(JSON.stringify(m));
  const bytes = emptySecretMap();
  for (const [k, v] of Object.entries(m)) bytes[k] = enc.encode(v);
  return lookup(bytes, property.slice(dot + 1));
}

/** `getSecret`: one value of the Secret per ESO's rules. Throws RemoteRefError when the
 *  property does not exist (message names the property, never a value). */
export function valueOf(secret: KubeSecret, ref: RemoteRef): Uint8Array {
  const fetchMeta = ref.metadataPolicy === 'Fetch';
  if (!ref.property) return fetchMeta ? enc.encode(JSON.stringify(metadataObject(secret))) : mapToJson(dataOf(secret));
  propertySegments(ref.property, 'path');
  const v = fetchMeta ? metadataValue(secret, ref.property) : lookup(dataOf(secret), ref.property);
  if (v === undefined) {
    throw new RemoteRefError(`property "${ref.property}" not found in the ${fetchMeta ? 'metadata' : 'data'} of the Secret`, 'NotFound');
  }
  return v;
}

/** `getSecretMap`: the data keys, or the JSON object the property (or Fetch) selects. */
export function mapOf(secret: KubeSecret, ref: RemoteRef): SecretMap {
  if (!ref.property && ref.metadataPolicy !== 'Fetch') return dataOf(secret);
  const value = valueOf(secret, ref);
  try {
    return jsonToSecretMap(value);
  } catch {
    throw new RemoteRefError(
      ref.property ? `property "${ref.property}" of the Secret is not a JSON object` : 'the Secret metadata is not a JSON object',
    );
  }
}

// ---------------------------------------------------------------- label selectors

const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$/;
const LABEL_PREFIX = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

function validLabelKey(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return LABEL_NAME.test(key);
  const prefix = key.slice(0, slash);
  return prefix.length <= 253 && LABEL_PREFIX.test(prefix) && LABEL_NAME.test(key.slice(slash + 1));
}

/** `find.tags` as an equality label selector (`k1=v1,k2=v2`, sorted). Throws
 *  RemoteRefError for a key or value Kubernetes labels cannot have. */
export function labelSelector(tags: Record<string, string>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(tags).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!validLabelKey(k)) throw new RemoteRefError(`find.tags key "${k}" is not a valid label key`, 'InvalidSpec');
    if (typeof v !== 'string' || !LABEL_VALUE.test(v)) throw new RemoteRefError(`find.tags value of "${k}" is not a valid label value`, 'InvalidSpec');
    parts.push(`${k}=${v}`);
  }
  return parts.join(',');
}

/** PushSecret metadata (validated by meta.ts): labels and annotations of the remote Secret,
 *  merged into its own (`targetMergePolicy: Merge`, the default), replacing them
 *  (`Replace`), or left alone (`Ignore`). */
export interface KubePushMetadata {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  targetMergePolicy?: 'Merge' | 'Replace' | 'Ignore';
}

type Meta = Pick<NonNullable<KubeSecret['metadata']>, 'labels' | 'annotations'>;

/** The remote Secret's labels and annotations once `md` is applied; undefined when unchanged. */
export function withPushMetadata(cur: Meta | undefined, md: KubePushMetadata | undefined): Meta | undefined {
  if (!md || md.targetMergePolicy === 'Ignore' || (!md.labels && !md.annotations)) return undefined;
  const replace = md.targetMergePolicy === 'Replace';
  const merge = (have: Record<string, string> | undefined, want: Record<string, string> | undefined) =>
    want === undefined ? have : replace ? { ...want } : { ...(have ?? {}), ...want };
  const next = { labels: merge(cur?.labels, md.labels), annotations: merge(cur?.annotations, md.annotations) };
  const same = (a: Record<string, string> | undefined, b: Record<string, string> | undefined) => JSON.stringify(Object.entries(a ?? {}).sort()) === JSON.stringify(Object.entries(b ?? {}).sort());
  return same(next.labels, cur?.labels) && same(next.annotations, cur?.annotations) ? undefined : next;
}
