// The `fake` provider (ESO's `spec.provider.fake`): serves the values written in the
// store spec itself. Tests, examples and the benchmarks use it; it is also what a
// platform team can use to try ESI without a real store. Writes (PushSecret) go to an
// in-memory copy owned by the client, never back to the spec.
import type { FakeProvider, FakeProviderData } from '../../api/types.js';
import { defineProvider } from '../define.js';
import { guard } from '../errors.js';
import { deleteProperty, hasProperty, jsonToSecretMap, selectProperty, setProperty } from '../json-path.js';
import { findNameTest } from '../regexp.js';
import { meta, validateSpec } from './meta.js';
import { emptySecretMap, ProviderError, type FindRef, type PushRemoteRef, type RemoteRef, type SecretMap, type SecretsClient } from '../types.js';
import { convertFoundKeys } from '../key-conversion.js';

interface Entry {
  value: string;
  valueMap?: Record<string, string>;
}

const enc = new TextEncoder();

/** ESO's ValidationResult values: 0 Ready, 1 Unknown, 2 Error. */
const VALIDATION_ERROR = 2;

/** A pushed `property` is one flat key of the JSON object value (ESO's fake provider). */
const PROPERTY_WRITES = meta.capabilities.pushProperty;

/** Entries are keyed by `key` + version ("" = unversioned), as upstream. */
function entryId(key: string, version?: string): string {
  return `${key}\u0000${version ?? ''}`;
}

export class FakeClient implements SecretsClient {
  private readonly entries = new Map<string, Entry>();
  private closed = false;

  constructor(
    private readonly storeId: string,
    data: FakeProviderData[],
    /** ESO's test hook (`validationResult`): see validate(). */
    private readonly validationResult?: number,
  ) {
    for (const d of data) {
      const entry: Entry = { value: d.value ?? '' };
      if (d.valueMap) entry.valueMap = { ...d.valueMap };
      this.entries.set(entryId(d.key, d.version), entry);
    }
  }

  private live(): void {
    if (this.closed) throw new ProviderError('Unknown', this.storeId, 'client is closed');
  }

  private lookup(ref: RemoteRef): Entry {
    this.live();
    if (ref.metadataPolicy === 'Fetch') {
      throw new ProviderError('Unsupported', this.storeId, 'metadataPolicy Fetch is not supported by the fake provider', ref.key);
    }
    const entry = this.entries.get(entryId(ref.key, ref.version));
    const what = ref.version ? `version "${ref.version}" not found` : 'secret not found';
    if (!entry) throw new ProviderError('NotFound', this.storeId, what, ref.key);
    return entry;
  }

  async getSecret(ref: RemoteRef): Promise<Uint8Array> {
    return selectProperty(enc.encode(this.lookup(ref).value), ref, this.storeId);
  }

  async getSecretMap(ref: RemoteRef): Promise<SecretMap> {
    const entry = this.lookup(ref);
    if (entry.valueMap && !ref.property) {
      const out = emptySecretMap();
      for (const [k, v] of Object.entries(entry.valueMap)) out[k] = enc.encode(v);
      return out;
    }
    return guard({ storeId: this.storeId, key: ref.key }, () => jsonToSecretMap(enc.encode(entry.value), ref.property));
  }

  async getAllSecrets(find: FindRef): Promise<SecretMap> {
    this.live();
    if (find.tags && Object.keys(find.tags).length > 0) {
      throw new ProviderError('Unsupported', this.storeId, 'find by tags is not supported by the fake provider');
    }
    const re = findNameTest(find, this.storeId);
    const out = emptySecretMap();
    for (const [id, entry] of this.entries) {
      const [key, version] = id.split('\u0000') as [string, string];
      // Only unversioned entries: a find returns the current value of each secret.
      if (version !== '') continue;
      if (find.path && !key.startsWith(find.path)) continue;
      if (!re(key)) continue;
      out[key] = enc.encode(entry.value);
    }
    // ESO's fake provider converts found keys itself: a rewrite sees converted keys.
    return convertFoundKeys(find.conversionStrategy, out);
  }

  async pushSecret(value: Uint8Array, ref: PushRemoteRef): Promise<void> {
    this.live();
    const id = entryId(ref.remoteKey);
    const text = Buffer.from(value).toString('utf8');
    const scope = { storeId: this.storeId, key: ref.remoteKey };
    const next = ref.property ? guard(scope, () => setProperty(this.entries.get(id)?.value, ref.property!, text, PROPERTY_WRITES)) : text;
    this.entries.set(id, { value: next });
  }

  async deleteSecret(ref: PushRemoteRef): Promise<void> {
    this.live();
    const id = entryId(ref.remoteKey);
    const current = this.entries.get(id);
    if (!current) return;
    if (!ref.property) {
      this.entries.delete(id);
      return;
    }
    const rest = guard({ storeId: this.storeId, key: ref.remoteKey }, () => deleteProperty(current.value, ref.property!, PROPERTY_WRITES));
    if (!rest.changed) return;
    if (rest.value === undefined) this.entries.delete(id);
    else this.entries.set(id, { value: rest.value });
  }

  async secretExists(ref: PushRemoteRef): Promise<boolean> {
    this.live();
    const current = this.entries.get(entryId(ref.remoteKey));
    if (!current) return false;
    if (!ref.property) return true;
    return guard({ storeId: this.storeId, key: ref.remoteKey }, () => hasProperty(current.value, ref.property!, PROPERTY_WRITES));
  }

  /** As ESO's fake store: `validationResult` 2 (Error) fails the store's validation;
   *  0 (Ready) and 1 (Unknown, which ESO does not count as a failure) pass. */
  async validate(): Promise<void> {
    this.live();
    if (this.validationResult === VALIDATION_ERROR) {
      throw new ProviderError('Unknown', this.storeId, 'unable to validate (validationResult: 2, the fake store\'s test hook)');
    }
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

export const provider = defineProvider<FakeProvider>(meta, async (ctx, spec) => new FakeClient(ctx.storeId, spec.data, spec.validationResult));

export { validateSpec };
export default provider;
