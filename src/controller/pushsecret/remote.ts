// Writes and deletes of remote entries, one entry at a time:
//  - compare before write: the remote value is read first (uncached) and nothing is
//    written when it already matches;
//  - serialized per remote key: concurrent pushes to one key (two PushSecrets, two
//    properties of one JSON secret) never interleave their read-modify-write in this process;
//  - ownership: an existing entry this PushSecret did not write is overwritten or deleted
//    only where the provider keeps an ownership mark and enforces it itself (its
//    `capabilities.ownershipMark`); elsewhere ESI refuses to touch it.
import { providerMeta } from '../../providers/registry.js';
import { ProviderError, type PushMetadata, type PushRemoteRef, type SecretsClient } from '../../providers/types.js';
import { canonicalJson, sameValue } from './values.js';


/** A promise chain per key: callers run one after the other. */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = prev.then(() => mine);
    this.tails.set(key, tail);
    await prev;
    try {
      return await fn();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }

  get size(): number {
    return this.tails.size;
  }
}

/** An existing remote entry ESI may not overwrite. */
export class NotOwned extends Error {}

export type PushResult = 'written' | 'equal' | 'exists';

export interface PushRequest {
  client: SecretsClient;
  provider: string;
  ref: PushRemoteRef;
  value: Uint8Array;
  updatePolicy: 'Replace' | 'IfNotExists';
  /** This PushSecret recorded the entry as written by it. */
  recorded: boolean;
  /** The entry's validated `metadata.spec`, applied with the value. */
  metadata?: PushMetadata;
  /** The metadata differs from what was recorded as applied: write even an equal value. */
  metadataChanged?: boolean;
}

/** Whether two recorded `data[].metadata` are the same (key order aside). */
export function sameMetadata(a: unknown, b: unknown): boolean {
  return canonicalJson(a ?? null) === canonicalJson(b ?? null);
}

/** Reads one remote entry; undefined when absent. */
async function readRemote(client: SecretsClient, ref: PushRemoteRef): Promise<Uint8Array | undefined> {
  try {
    return await client.getSecret({ key: ref.remoteKey, ...(ref.property ? { property: ref.property } : {}) });
  } catch (err) {
    if (err instanceof ProviderError && err.code === 'NotFound') return undefined;
    throw err;
  }
}

/** Pushes one entry unless the store already holds it. Throws ProviderError (value-free). */
export async function pushEntry(r: PushRequest): Promise<PushResult> {
  const cur = await readRemote(r.client, r.ref);
  if (cur !== undefined) {
    if (r.updatePolicy === 'IfNotExists') return 'exists';
    if (sameValue(cur, r.value) && !r.metadataChanged) return 'equal';
    if (!r.recorded && !providerMeta(r.provider)?.capabilities.ownershipMark) {
      throw new NotOwned(`the remote entry exists and was not written by this PushSecret; the ${r.provider} provider keeps no ownership mark, so ESI does not overwrite it (delete it, or push to another remoteKey/property)`);
    }
  }
  await r.client.pushSecret(r.value, r.ref, r.metadata ? { metadata: r.metadata } : {});
  return 'written';
}

/** Deletes one entry this PushSecret wrote (absent = done). */
export async function deleteEntry(client: SecretsClient, ref: PushRemoteRef): Promise<void> {
  try {
    await client.deleteSecret(ref);
  } catch (err) {
    if (err instanceof ProviderError && err.code === 'NotFound') return;
    throw err;
  }
}
