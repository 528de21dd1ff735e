// Generic SecretsClient plumbing, so no caller forwards the methods one by one: a client
// built from one call function, a client wrapped around each store call (coalescing,
// metrics, laziness), and the caller's deadline (`CallOptions.signal`) applied to every
// call of every provider.
import { ProviderError, CLIENT_CALLS, type CallOptions, type SecretsClient } from './types.js';

export type ClientCall = (typeof CLIENT_CALLS)[number];
type Call = (...args: unknown[]) => Promise<unknown>;

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

/** Every call fails with `Timeout` as soon as the caller's signal aborts (providers that
 *  can also pass the signal to their SDK do, to stop the request itself). */
export function honourCallerDeadline<C extends SecretsClient>(client: C, storeId: string): C {
  return wrapClient(client, (name, args, next) => {
    const signal = callOptions(name, args).signal;
    if (!signal) return next();
    const timeout = () => new ProviderError('Timeout', storeId, `${name}: the caller's deadline passed`);
    if (signal.aborted) return Promise.reject(timeout());
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(timeout());
      signal.addEventListener('abort', onAbort, { once: true });
      next().then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  });
}

/** Every store call of `client` bounded by `ms`: the caller's own deadline when it passes one
 *  that is sooner, else a fresh one per call. A store that accepts a connection and never
 *  answers then fails the call with `Timeout` instead of holding the caller forever (the
 *  reconciler's workers: src/controller/runtime/clients.ts). */
export function withDeadline<C extends SecretsClient>(client: C, storeId: string, ms: number): C {
  const bounded = wrapClient(client, (name, args) => {
    const at = OPTIONS_AT[name];
    const given = callOptions(name, args);
    const signal = given.signal ? AbortSignal.any([given.signal, AbortSignal.timeout(ms)]) : AbortSignal.timeout(ms);
    const withSignal = [...args];
    while (withSignal.length < at) withSignal.push(undefined);
    withSignal[at] = { ...given, signal };
    return invoke(client, name, withSignal);
  });
  return honourCallerDeadline(bounded, storeId);
}
