// SecretsClient over @azure/keyvault-secrets with ESO's azurekv semantics (secrets only):
//  - key: the secret name; ESO's object-type prefix `secret/<name>` is accepted,
//    `key/…` and `cert/…` (keys, certificates) are reported as Unsupported;
//  - property: a JSON field of the value; version: a secret version id;
//  - metadataPolicy Fetch: the secret's tags instead of its value (ESO's shape);
//  - find: enabled secrets by name regexp and/or tags (Key Vault has no paths);
//  - push: setSecret tagged `managed-by: external-secrets`; an existing secret without
//    that tag is never overwritten or deleted (ESO's ownership rule); `property` merges
//    into a JSON object value; push metadata (push-metadata.ts) adds tags and an expiry;
//  - delete: soft delete, then purge when the vault and the identity allow it.
// Every call is bounded by ctx.timeoutMs (SDK retries included).
import type { KeyVaultSecret, SecretClient, SecretProperties } from '@azure/keyvault-secrets';
import type { Logger } from 'pino';
import { RemoteRefError, toProviderError } from '../errors.js';
import { asJsonObject, deleteProperty, extractProperty, hasProperty, jsonToSecretMap, propertySegments, setProperty } from '../json-path.js';
import { findNameTest } from '../regexp.js';
import { emptySecretMap, ProviderError, type FindRef, type PushOptions, type PushRemoteRef, type RemoteRef, type SecretMap, type SecretsClient } from '../types.js';
import { classifyAzure, DeadlineError } from './errors.js';
import type { AzurePushMetadata } from './push-metadata.js';

export const MANAGED_BY_TAG = 'managed-by';
export const MANAGED_BY_VALUE = 'external-secrets';
/** Secret names: 1-127 letters, digits and dashes. */
const NAME = /^[0-9A-Za-z-]{1,127}$/;
/** Name probed by validate(): a 404 proves the token is accepted, reading no value. */
const VALIDATE_PROBE = 'esi-validate-probe';
const FIND_CONCURRENCY = 8;

const enc = new TextEncoder();
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

interface Op {
  signal: AbortSignal;
}

export class AzureKVClient implements SecretsClient {
  private closed = false;

  constructor(
    private readonly storeId: string,
    private readonly kv: SecretClient,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
  ) {}

  /** Runs `fn` with an abort signal at the deadline, and a hard stop in case some
   *  layer (a token request) does not honour the signal. */
  private async run<T>(key: string | undefined, fn: (op: Op) => Promise<T>, what = 'secret'): Promise<T> {
    if (this.closed) throw new ProviderError('Unknown', this.storeId, 'client is closed', key);
    const ac = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        ac.abort();
        reject(new DeadlineError(`no answer within ${this.timeoutMs} ms`));
      }, this.timeoutMs);
    });
    try {
      return await Promise.race([fn({ signal: ac.signal }), deadline]);
    } catch (err) {
      throw toProviderError(err, { storeId: this.storeId, key }, classifyAzure(what));
    } finally {
      clearTimeout(timer);
    }
  }

  /** ESO's `<type>/<name>` keys: only secrets are served. */
  private secretName(key: string): string {
    const slash = key.indexOf('/');
    const type = slash < 0 ? 'secret' : key.slice(0, slash);
    const name = slash < 0 ? key : key.slice(slash + 1);
    if (type === 'key' || type === 'cert') {
      throw new ProviderError('Unsupported', this.storeId, `Key Vault ${type === 'key' ? 'keys' : 'certificates'} are not supported by ESI's azurekv provider (secrets only)`, key);
    }
    if (type !== 'secret') throw new ProviderError('InvalidSpec', this.storeId, `unknown Key Vault object type "${type}" (use a secret name or secret/<name>)`, key);
    if (!NAME.test(name)) throw new ProviderError('InvalidSpec', this.storeId, 'not a valid Key Vault secret name (1-127 letters, digits and dashes)', key);
    return name;
  }

  /** The secret, or undefined when it does not exist. */
  private async find(name: string, op: Op, version?: string): Promise<KeyVaultSecret | undefined> {
    try {
      return await this.kv.getSecret(name, { abortSignal: op.signal, ...(version ? { version } : {}) });
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return undefined;
      throw err;
    }
  }

  private async fetch(ref: RemoteRef, op: Op): Promise<KeyVaultSecret> {
    const secret = await this.find(this.secretName(ref.key), op, ref.version);
    if (!secret) throw new ProviderError('NotFound', this.storeId, ref.version ? `version "${ref.version}" not found` : 'secret not found', ref.key);
    return secret;
  }

  async getSecret(ref: RemoteRef): Promise<Uint8Array> {
    return this.run(ref.key, async (op) => {
      const secret = await this.fetch(ref, op);
      if (ref.metadataPolicy === 'Fetch') return tagValue(secret.properties.tags ?? {}, ref.property);
      const value = enc.encode(secret.value ?? '');
      return ref.property ? extractProperty(value, ref.property) : value;
    });
  }

  async getSecretMap(ref: RemoteRef): Promise<SecretMap> {
    return this.run(ref.key, async (op) => {
      const secret = await this.fetch(ref, op);
      if (ref.metadataPolicy === 'Fetch') return tagMap(this.secretName(ref.key), secret.properties.tags ?? {}, ref.property);
      return jsonToSecretMap(enc.encode(secret.value ?? ''), ref.property);
    });
  }

  async getAllSecrets(find: FindRef): Promise<SecretMap> {
    if (find.path) {
      throw new ProviderError('Unsupported', this.storeId, 'find.path: Key Vault secret names are flat, there are no paths (use find.name)');
    }
    const re = findNameTest(find, this.storeId);
    return this.run(undefined, async (op) => {
      const names: string[] = [];
      for await (const p of this.kv.listPropertiesOfSecrets({ abortSignal: op.signal })) {
        if (matches(p, re, find.tags)) names.push(p.name);
      }
      const out = emptySecretMap();
      for (let i = 0; i < names.length; i += FIND_CONCURRENCY) {
        const batch = names.slice(i, i + FIND_CONCURRENCY);
        const values = await Promise.all(batch.map((n) => this.find(n, op)));
        // A secret deleted between the listing and the read is simply not there.
        values.forEach((s, j) => s && (out[batch[j]!] = enc.encode(s.value ?? '')));
      }
      return out;
    }, 'secrets');
  }

  /** The owner check of ESO: only secrets ESO/ESI created may be changed. */
  private owned(secret: KeyVaultSecret, key: string, verb: string): void {
    if (secret.properties.tags?.[MANAGED_BY_TAG] !== MANAGED_BY_VALUE) {
      throw new ProviderError('Forbidden', this.storeId,
        `refusing to ${verb} a secret that is not tagged ${MANAGED_BY_TAG}=${MANAGED_BY_VALUE} (it was not created by a PushSecret)`, key);
    }
  }

  async pushSecret(value: Uint8Array, ref: PushRemoteRef, opts: PushOptions = {}): Promise<void> {
    const md = (opts.metadata ?? {}) as AzurePushMetadata;
    // Key Vault tags and expiry belong to a version: a new version carries them all.
    const tags = { ...(md.tags ?? {}), [MANAGED_BY_TAG]: MANAGED_BY_VALUE };
    const expiresOn = md.expirationDate ? new Date(md.expirationDate) : undefined;
    await this.run(ref.remoteKey, async (op) => {
      const name = this.secretName(ref.remoteKey);
      const current = await this.find(name, op);
      if (current) this.owned(current, ref.remoteKey, 'overwrite');
      const next = ref.property ? setProperty(current?.value, ref.property, text(value), 'key') : text(value);
      if (current && current.value === next && metadataApplied(current, md)) return;
      try {
        await this.kv.setSecret(name, next, { abortSignal: op.signal, enabled: true, tags, ...(expiresOn ? { expiresOn } : {}) });
      } catch (err) {
        if ((err as { statusCode?: number }).statusCode === 409) {
          throw new ProviderError('Unknown', this.storeId,
            'a deleted secret with this name is kept by soft delete; recover or purge it before pushing (409)', ref.remoteKey);
        }
        throw err;
      }
    });
  }

  async deleteSecret(ref: PushRemoteRef): Promise<void> {
    await this.run(ref.remoteKey, async (op) => {
      const name = this.secretName(ref.remoteKey);
      const current = await this.find(name, op);
      if (!current) return;
      this.owned(current, ref.remoteKey, 'delete');
      if (ref.property) {
        const rest = deleteProperty(current.value ?? '', ref.property, 'key');
        if (!rest.changed) return;
        if (rest.value !== undefined) {
          await this.kv.setSecret(name, rest.value, { abortSignal: op.signal, enabled: true, tags: current.properties.tags ?? {} });
          return;
        }
      }
      const poller = await this.kv.beginDeleteSecret(name, { abortSignal: op.signal, intervalInMs: 250 });
      await poller.pollUntilDone({ abortSignal: op.signal });
      await this.purge(name, ref.remoteKey, op);
    });
  }

  /** Purges a soft-deleted secret so its name can be pushed again. Vaults with purge
   *  protection, or identities without the purge permission, keep it until the
   *  retention period ends: that is the vault's policy, not an error. */
  private async purge(name: string, key: string, op: Op): Promise<void> {
    try {
      await this.kv.purgeDeletedSecret(name, { abortSignal: op.signal });
    } catch (err) {
      const status = (err as { statusCode?: number }).statusCode;
      if (status === 403 || status === 404 || status === 409) {
        this.logger.info({ key, status }, 'azurekv: deleted secret not purged (purge protection or no purge permission); it stays soft-deleted');
        return;
      }
      throw err;
    }
  }

  async secretExists(ref: PushRemoteRef): Promise<boolean> {
    return this.run(ref.remoteKey, async (op) => {
      const current = await this.find(this.secretName(ref.remoteKey), op);
      if (!current) return false;
      if (!ref.property) return true;
      return hasProperty(current.value ?? '', ref.property, 'key');
    });
  }

  async validate(): Promise<void> {
    await this.run(undefined, async (op) => {
      await this.find(VALIDATE_PROBE, op);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

/** Whether the secret's current version already carries the push metadata. */
function metadataApplied(secret: KeyVaultSecret, md: AzurePushMetadata): boolean {
  const have = secret.properties.tags ?? {};
  if (Object.entries(md.tags ?? {}).some(([k, v]) => have[k] !== v)) return false;
  return !md.expirationDate || secret.properties.expiresOn?.getTime() === new Date(md.expirationDate).getTime();
}

function matches(p: SecretProperties, re: (name: string) => boolean, tags: Record<string, string> | undefined): boolean {
  if (p.enabled === false) return false;
  for (const [k, v] of Object.entries(tags ?? {})) if (p.tags?.[k] !== v) return false;
  return re(p.name);
}

/** metadataPolicy Fetch with getSecret: one tag (`property`, or `tag.path` into a JSON
 *  tag value), or all tags as a JSON object. */
function tagValue(tags: Record<string, string>, property: string | undefined): Uint8Array {
  if (!property) return enc.encode(JSON.stringify(tags));
  propertySegments(property, 'path');
  if (Object.prototype.hasOwnProperty.call(tags, property)) return enc.encode(tags[property]!);
  const dot = property.indexOf('.');
  const tag = dot > 0 ? property.slice(0, dot) : undefined;
  if (tag && Object.prototype.hasOwnProperty.call(tags, tag)) return extractProperty(enc.encode(tags[tag]!), property.slice(dot + 1));
  throw new RemoteRefError(`tag "${property}" not found`, 'NotFound');
}

/** metadataPolicy Fetch with dataFrom.extract: ESO names the keys `<secret>_<tag>`
 *  (`<secret>_<tag>_<field>` for a JSON object tag); `property` selects one. */
function tagMap(name: string, tags: Record<string, string>, property: string | undefined): SecretMap {
  const flat: Record<string, string> = {};
  for (const [tag, v] of Object.entries(tags)) {
    const obj = asJsonObject(v);
    if (obj && Object.values(obj).every((x) => typeof x === 'string')) {
      for (const [k, x] of Object.entries(obj)) flat[`${name}_${tag}_${k}`] = x as string;
    } else {
      flat[`${name}_${tag}`] = v;
    }
  }
  const out = emptySecretMap();
  for (const [k, v] of Object.entries(flat)) {
    if (!property || k === `${name}_${property}`) out[k] = enc.encode(v);
  }
  return out;
}
