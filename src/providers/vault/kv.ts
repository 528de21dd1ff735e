// KV semantics of ESO's vault provider, without I/O: where a key lives (the mount, the
// `data/` and `metadata/` prefixes of KV v2), how a data map becomes bytes (the whole map
// as Go-style JSON; a property is selected by src/providers/json-path.ts), and the metadata map that
// `metadataPolicy: Fetch` and find-by-tags read.
import { isJsonNumber, numberText } from '../json-text.js';

export type KvVersion = 'v1' | 'v2';
export type DataMap = Record<string, unknown>;

const trimSlashes = (s: string) => s.replace(/^\/+|\/+$/g, '');

export interface KeyPaths {
  /** The key relative to its mount. */
  rest: string;
  data: string;
  /** KV v2 only. */
  metadata: string;
}

/** Where keys live: the store's mount (`spec.path`) and engine version. */
export class KvLayout {
  readonly mount: string | undefined;

  constructor(
    mount: string | undefined,
    readonly version: KvVersion,
  ) {
    this.mount = mount ? trimSlashes(mount) : undefined;
  }

  /** ESO's rules: a key may repeat the mount (`secret/foo` with path `secret`) and, on
   *  KV v2, the `data/` segment; without `spec.path` the key's first segment is the mount. */
  paths(key: string): KeyPaths {
    let k = trimSlashes(key);
    let mount = this.mount;
    if (mount) {
      if (k.startsWith(`${mount}/`)) {
        k = k.slice(mount.length + 1);
        if (this.version === 'v2' && k.startsWith('data/')) k = k.slice('data/'.length);
      }
    } else {
      const i = k.indexOf('/');
      mount = i < 0 ? k : k.slice(0, i);
      k = i < 0 ? '' : k.slice(i + 1);
      if (this.version === 'v2' && k.startsWith('data/')) k = k.slice('data/'.length);
    }
    return this.version === 'v2'
      ? { rest: k, data: `${mount}/data/${k}`, metadata: `${mount}/metadata/${k}` }
      : { rest: k, data: `${mount}/${k}`, metadata: `${mount}/${k}` };
  }

  /** The LIST path of a folder under the mount (`''` = the mount's root). */
  listPath(folder: string): string {
    const f = folder ? `${trimSlashes(folder)}/` : '';
    return this.version === 'v2' ? `${this.mount}/metadata/${f}` : `${this.mount}/${f}`;
  }
}

/** Go's encoding/json output for a decoded value: map keys sorted, `<`, `>`, `&`, U+2028
 *  and U+2029 escaped. ESO marshals the data map this way; files stay byte-identical. */
export function goJson(value: unknown): string {
  return serialize(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function serialize(v: unknown): string {
  if (isJsonNumber(v)) return numberText(v);
  if (Array.isArray(v)) return `[${v.map(serialize).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const keys = Object.keys(v).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    return `{${keys.map((k) => `${JSON.stringify(k)}:${serialize((v as DataMap)[k])}`).join(',')}}`;
  }
  return v === undefined ? 'null' : JSON.stringify(v);
}

/** One data value as bytes: strings raw, null empty, numbers as written, booleans as text,
 *  maps and lists as Go-style JSON. */
export function valueBytes(v: unknown): Uint8Array {
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  if (v === null || v === undefined) return new Uint8Array();
  if (isJsonNumber(v)) return Buffer.from(numberText(v), 'utf8');
  if (typeof v === 'object') return Buffer.from(goJson(v), 'utf8');
  return Buffer.from(String(v), 'utf8');
}

/** System fields of KV v2 metadata that ESO exposes next to custom_metadata. */
const SYSTEM_METADATA = ['created_time', 'current_version', 'delete_version_after'];

/** The KV v2 metadata as ESO shows it: system fields and custom_metadata, all strings. */
export function metadataMap(meta: DataMap): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const k of SYSTEM_METADATA) {
    const v = meta[k];
    if (v !== undefined && v !== null) out[k] = String(v);
  }
  const custom = meta.custom_metadata;
  if (custom && typeof custom === 'object') {
    for (const [k, v] of Object.entries(custom as DataMap)) out[k] = typeof v === 'string' ? v : String(v);
  }
  return out;
}

/** The ownership mark ESO writes on the secrets it pushes (KV v2 custom_metadata; inside the
 *  data map on KV v1). ESI writes and honours the same one, so stores move between them. */
export const MANAGED_BY = { key: 'managed-by', value: 'external-secrets' } as const;
