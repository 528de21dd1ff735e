// Identical remote reads share one provider call. The agent wraps its clients for one
// refresh cycle (a wrapper per cycle: no expiry needed); the reconciler keeps one wrapper
// per store client with `windowMs`, so N ExternalSecrets reading the same (key, property,
// version) within one refresh window cost one call. Failed reads are not kept: the next
// reader tries again. Writes are never coalesced.
import { wrapClient, type ClientCall } from './client.js';
import type { SecretsClient } from './types.js';

export interface CoalescingOptions {
  /** How long a result is shared after its call started; forever (per wrapper) when unset. */
  windowMs?: number;
  now?: () => number;
}

const READS = new Set<ClientCall>(['getSecret', 'getSecretMap', 'getAllSecrets']);

/** Wraps `client` so identical reads share one call; `onCall` counts the real calls. */
export function coalescing<C extends SecretsClient>(client: C, onCall?: () => void, opts: CoalescingOptions = {}): C {
  const now = opts.now ?? Date.now;
  const shared = new Map<string, { p: Promise<unknown>; at: number }>();
  let inserts = 0;
  const sweep = () => {
    const limit = now() - opts.windowMs!;
    for (const [id, e] of shared) if (e.at <= limit) shared.delete(id);
  };
  return wrapClient(client, (name, args, next) => {
    if (!READS.has(name)) return next();
    // The reference only (args[0]): the caller's CallOptions (deadline) do not split reads.
    const id = `${name}:${JSON.stringify(args[0])}`;
    const hit = shared.get(id);
    if (hit && (opts.windowMs === undefined || now() - hit.at < opts.windowMs)) return hit.p;
    onCall?.();
    const p = next();
    const entry = { p, at: now() };
    shared.set(id, entry);
    if (opts.windowMs !== undefined) {
      p.catch(() => shared.get(id) === entry && shared.delete(id));
      if (++inserts % 1024 === 0) sweep();
    }
    return p;
  });
}
