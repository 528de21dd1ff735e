// The storage side of the reference plugin. server.ts speaks gRPC and calls a
// `SecretBackend`; to plug in your own store, implement this interface (talk to your
// database, HSM, internal API...) and pass it to startPluginServer({ backend }).
//
// MemoryStore is the backend the reference plugin ships with: an in-memory map with
// versions, optionally loaded from a JSON file. It is what ESI's tests run against.

/** What a backend may report; server.ts turns it into the contract's reply `error`
 *  ("<code>: <message>") or, for Unavailable, into gRPC status UNAVAILABLE (ESI retries). */
export type PluginErrorCode = 'NotFound' | 'AuthFailed' | 'Forbidden' | 'Unsupported' | 'Unavailable';

export class PluginError extends Error {
  constructor(readonly code: PluginErrorCode, message: string) {
    super(message);
    this.name = 'PluginError';
  }
}

/** Who is calling. Authenticate by `clientCertificate` (verified by TLS when the plugin
 *  requires client certificates); `store` and `namespace` are what the caller says about
 *  itself and are only sent with GetSecret and PushSecret. */
export interface Caller {
  /** Subject CN of the verified TLS client certificate, when there is one. */
  clientCertificate?: string;
  /** The namespace the store is used from. */
  namespace?: string;
  /** The SecretStore / ClusterSecretStore that made the call (names only, no credentials). */
  store?: { kind: string; name: string; namespace?: string };
}

export interface SecretBackend {
  /** The value stored at `key` (`version` "" = the current one). Throw NotFound when absent. */
  get(key: string, version: string, caller: Caller): Promise<Uint8Array>;
  /** Stores `value` at `key`, or as `property` of the JSON object at `key`. */
  put(key: string, value: Uint8Array, property: string, caller: Caller): Promise<void>;
  /** Removes `key` (or its `property`); removing what is absent is not an error. */
  delete(key: string, property: string, caller: Caller): Promise<void>;
  exists(key: string, property: string, caller: Caller): Promise<boolean>;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

function jsonObject(value: Uint8Array | undefined): Record<string, unknown> | undefined {
  if (!value) return undefined;
  try {
    const v = JSON.parse(dec.decode(value)) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** An in-memory store: every write adds a version ("1", "2", ...); reads without a version
 *  return the newest. Keys are opaque strings (slashes are fine). */
export class MemoryStore implements SecretBackend {
  private readonly entries = new Map<string, Uint8Array[]>();

  /** Initial contents: key → string (stored as UTF-8) or any JSON (stored as its JSON text). */
  constructor(data: Record<string, unknown> = {}) {
    for (const [key, value] of Object.entries(data)) this.set(key, typeof value === 'string' ? value : JSON.stringify(value));
  }

  /** Writes a new version of `key` directly (seeding, tests); returns its version id. */
  set(key: string, value: string | Uint8Array): string {
    const versions = this.entries.get(key) ?? [];
    versions.push(typeof value === 'string' ? enc.encode(value) : Uint8Array.from(value));
    this.entries.set(key, versions);
    return String(versions.length);
  }

  /** Removes `key` and all its versions directly. */
  remove(key: string): void {
    this.entries.delete(key);
  }

  keys(): string[] {
    return [...this.entries.keys()];
  }

  private current(key: string): Uint8Array | undefined {
    return this.entries.get(key)?.at(-1);
  }

  async get(key: string, version: string, _caller?: Caller): Promise<Uint8Array> {
    const versions = this.entries.get(key);
    if (!versions) throw new PluginError('NotFound', `secret "${key}" not found`);
    if (!version) return versions.at(-1)!;
    const n = Number(version);
    const value = Number.isInteger(n) && n >= 1 ? versions[n - 1] : undefined;
    if (!value) throw new PluginError('NotFound', `version "${version}" of secret "${key}" not found`);
    return value;
  }

  async put(key: string, value: Uint8Array, property: string, _caller?: Caller): Promise<void> {
    if (!property) {
      this.set(key, value);
      return;
    }
    const current = this.current(key);
    const obj = current && current.length > 0 ? jsonObject(current) : {};
    if (!obj) throw new PluginError('Unsupported', `secret "${key}" is not a JSON object: cannot set property "${property}"`);
    obj[property] = dec.decode(value);
    this.set(key, JSON.stringify(obj));
  }

  async delete(key: string, property: string, _caller?: Caller): Promise<void> {
    const current = this.current(key);
    if (!current) return;
    if (!property) {
      this.entries.delete(key);
      return;
    }
    const obj = jsonObject(current);
    if (!obj || !Object.hasOwn(obj, property)) return;
    delete obj[property];
    if (Object.keys(obj).length === 0) this.entries.delete(key);
    else this.set(key, JSON.stringify(obj));
  }

  async exists(key: string, property: string, _caller?: Caller): Promise<boolean> {
    const current = this.current(key);
    if (!current) return false;
    if (!property) return true;
    return Object.hasOwn(jsonObject(current) ?? {}, property);
  }
}
