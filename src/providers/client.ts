// Generic SecretsClient plumbing, so no caller forwards the methods one by one: a client
// built from one call function, a client wrapped around each store call (coalescing,
// metrics, laziness), and the deadline (`CallOptions.signal`, and the reconciler's
// per-call timeout) applied to a call.
import { ProviderError, CLIENT_CALLS, type CallOptions, type SecretsClient } from './types.js';

export type ClientCall = (typeof CLIENT_CALLS)[number];
type Call = (...args: unknown[]) => Promise<unknown>;

/** The remote reads: what is coalesced and rate limited (writes are paced by their reconcilers). */
export const READ_CALLS: ReadonlySet<ClientCall> = new Set<ClientCall>(['getSecret', 'getSecretMap', 'getAllSecrets']);

/** Where each call takes its CallOptions (the last parameter). */
const OPTIONS_AT: Readonly<Record<ClientCall, number>> = {
  getSecret: 1, getSecretMap: 1, getAllSecrets: 1, pushSecret: 2, deleteSecret: 1, secretExists: 1, validate: 0,
};

/** The CallOptions of one call's arguments. */
export function callOptions(name: ClientCall, args: readonly unknown[]): CallOptions {
  return (args[OPTIONS_AT[name]] as CallOptions | undefined) ?? {};
}

/** Calls `name` on `client` with `args`. */
export function invoke(client: SecretsClient, name: ClientCall, args: unknown[]): Promise<unknown> {
  return (client[name] as Call).apply(client, args);
}

/** A client whose every store call is `call(name, args)`. */
export function clientFrom(call: (name: ClientCall, args: unknown[]) => Promise<unknown>, close: () => Promise<void>): SecretsClient {
  const out: Partial<Record<ClientCall, Call>> = {};
  for (const name of CLIENT_CALLS) out[name] = (...args: unknown[]) => call(name, args);
  return { ...(out as Pick<SecretsClient, ClientCall>), close };
}

/** `client` with every store call passed through `around`; every other member (close,
 *  a provider's own accessors) is the client's own. */
export function wrapClient<C extends SecretsClient>(client: C, around: (name: ClientCall, args: unknown[], next: () => Promise<unknown>) => Promise<unknown>): C {
  const calls = new Set<PropertyKey>(CLIENT_CALLS);
  return new Proxy(client, {
    get(target, prop) {
      if (!calls.has(prop)) return Reflect.get(target, prop, target) as unknown;
      const name = prop as ClientCall;
      return (...args: unknown[]) => around(name, args, () => invoke(target, name, args));
    },
  }) as C;
}

/** Calls `name` on `client` under a deadline: the caller's signal, joined with a fresh
 *  timeout of `ms` when given (the signal the provider sees then carries both, so a provider
 *  that passes it to its SDK stops the request itself). The call fails with `Timeout` as soon
 *  as that signal aborts, whether or not the provider listens to it. */
export function callWithin(client: SecretsClient, name: ClientCall, args: unknown[], deadline: { storeId: string; ms?: number }): Promise<unknown> {
  const { storeId, ms } = deadline;
  const given = callOptions(name, args);
  let signal = given.signal;
  let passed = args;
  if (ms !== undefined) {
    signal = signal ? AbortSignal.any([signal, AbortSignal.timeout(ms)]) : AbortSignal.timeout(ms);
    const at = OPTIONS_AT[name];
    passed = [...args];
    while (passed.length < at) passed.push(undefined);
    passed[at] = { ...given, signal };
  }
  if (!signal) return invoke(client, name, passed);
  const timeout = () => new ProviderError('Timeout', storeId, `${name}: the caller's deadline passed`);
  if (signal.aborted) return Promise.reject(timeout());
  const bound = signal;
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(timeout());
    bound.addEventListener('abort', onAbort, { once: true });
    invoke(client, name, passed).then(resolve, reject).finally(() => bound.removeEventListener('abort', onAbort));
  });
}

/** `client` whose every call fails with `Timeout` as soon as the caller's signal aborts: the
 *  contract every provider's client keeps (src/providers/define.ts). */
export function honourCallerDeadline<C extends SecretsClient>(client: C, storeId: string): C {
  return wrapClient(client, (name, args) => callWithin(client, name, args, { storeId }));
}
