// Identical remote reads share one provider call. The agent wraps its clients for one
// refresh cycle (a wrapper per cycle: no expiry needed); the reconciler keeps one wrapper
// per store client with `windowMs`, so N ExternalSecrets reading the same (key, property,
// version) within one refresh window cost one call. Failed reads are not kept: the next
// reader tries again. Writes are never coalesced.
import type { SecretsClient } from './types.js';

export interface CoalescingOptions {
  /** How long a result is shared after its call started; forever (per wrapper) when unset. */
  windowMs?: number;
  now?: () => number;
}

/** Wraps `client` so identical reads share one call; `onCall` counts the real calls. */
export function coalescing(client: SecretsClient, onCall?: () => void, opts: CoalescingOptions = {}): SecretsClient {
  const now = opts.now ?? Date.now;
  const shared = new Map<string, { p: Promise<unknown>; at: number }>();
  let inserts = 0;
  const sweep = () => {
    const limit = now() - opts.windowMs!;
    for (const [id, e] of shared) if (e.at <= limit) shared.delete(id);
  };
  const once = <T>(op: string, ref: unknown, call: () => Promise<T>): Promise<T> => {
    const id = `${op}:${JSON.stringify(ref)}`;
    const hit = shared.get(id);
    if (hit && (opts.windowMs === undefined || now() - hit.at < opts.windowMs)) return hit.p as Promise<T>;
    onCall?.();
    const p = call();
    const entry = { p, at: now() };
    shared.set(id, entry);
    if (opts.windowMs !== undefined) {
      p.catch(() => shared.get(id) === entry && shared.delete(id));
      if (++inserts % 1024 === 0) sweep();
    }
    return p;
  };
  return {
    ...client,
    getSecret: (ref) => once('get', ref, () => client.getSecret(ref)),
    getSecretMap: (ref) => once('map', ref, () => client.getSecretMap(ref)),
    getAllSecrets: (find) => once('find', find, () => client.getAllSecrets(find)),
    pushSecret: (v, r) => client.pushSecret(v, r),
    deleteSecret: (r) => client.deleteSecret(r),
    secretExists: (r) => client.secretExists(r),
    validate: () => client.validate(),
    close: () => client.close(),
  };
}
