// Writes and deletes of remote entries, one entry at a time:
//  - compare before write: the remote value is read first (uncached) and nothing is
//    written when it already matches;
//  - serialized per remote key: concurrent pushes to one key (two PushSecrets, two
//    properties of one JSON secret) never interleave their read-modify-write in this process;
//  - ownership: an existing entry this PushSecret did not write is overwritten or deleted
//    only where the provider keeps an ownership mark and enforces it itself (see
//    PROVIDER_OWNERSHIP); elsewhere ESI refuses to touch it.
import { ProviderError, type PushRemoteRef, type SecretsClient } from '../../providers/types.js';
import { sameValue } from './values.js';

/** Providers that mark what they push and refuse to overwrite or delete unmarked entries
 *  (docs/providers/*.md, "PushSecret"). The others (kubernetes, fake, grpc) keep no mark:
 *  the reconciler itself refuses to touch an entry it did not record as written. */
export const PROVIDER_OWNERSHIP: ReadonlySet<string> = new Set(['vault', 'aws', 'azurekv', 'gcpsm']);

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
    if (sameValue(cur, r.value)) return 'equal';
    if (!r.recorded && !PROVIDER_OWNERSHIP.has(r.provider)) {
      throw new NotOwned(`the remote entry exists and was not written by this PushSecret; the ${r.provider} provider keeps no ownership mark, so ESI does not overwrite it (delete it, or push to another remoteKey/property)`);
    }
  }
  await r.client.pushSecret(r.value, r.ref);
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
