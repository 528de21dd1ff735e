// Provider registry: maps a `spec.provider.<name>` key to its module, imported lazily so
// a process pays only for the SDKs of the stores its configuration names (the agent's
// start time and RSS budgets depend on it). Each provider folder's `index.ts` exports
// `provider: Provider` (a default export is accepted too).
import type { SecretStoreProvider } from '../api/types.js';
import type { Provider } from './types.js';

/** Module specifiers, relative to this file. Kept as data (not literal `import()`s) so a
 *  build without some provider folder still type-checks and reports it at run time. */
const MODULES: Readonly<Record<string, string>> = Object.freeze({
  fake: './fake/index.js',
  kubernetes: './kubernetes/index.js',
  vault: './vault/index.js',
  aws: './aws/index.js',
  azurekv: './azurekv/index.js',
  gcpsm: './gcpsm/index.js',
  grpc: './grpc/index.js',
});

/** Names of the providers this build knows about. */
export const PROVIDER_NAMES: readonly string[] = Object.freeze(Object.keys(MODULES));

export class UnknownProviderError extends Error {
  constructor(readonly provider: string, detail: string) {
    super(`provider "${provider}": ${detail}`);
    this.name = 'UnknownProviderError';
  }
}

const loaded = new Map<string, Promise<Provider>>();

function isProvider(x: unknown): x is Provider {
  const p = x as Partial<Provider> | undefined;
  return typeof p === 'object' && p !== null && typeof p.name === 'string' && typeof p.newClient === 'function';
}

async function importProvider(name: string, specifier: string): Promise<Provider> {
  let mod: { provider?: unknown; default?: unknown };
  try {
    mod = (await import(specifier)) as typeof mod;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' && String((err as Error).message).includes(specifier.slice(2))) {
      throw new UnknownProviderError(name, 'is not available in this build');
    }
    throw new UnknownProviderError(name, `failed to load: ${(err as Error).message}`);
  }
  const provider = mod.provider ?? mod.default;
  if (!isProvider(provider)) throw new UnknownProviderError(name, 'module does not export a provider');
  return provider;
}

/** Loads (once) the provider registered under `name`. */
export function loadProvider(name: string): Promise<Provider> {
  const specifier = Object.prototype.hasOwnProperty.call(MODULES, name) ? MODULES[name] : undefined;
  if (!specifier) {
    return Promise.reject(
      new UnknownProviderError(name, `is not supported by ESI (supported: ${PROVIDER_NAMES.join(', ')})`),
    );
  }
  let p = loaded.get(name);
  if (!p) {
    p = importProvider(name, specifier);
    // A failed import is not cached: the next call reports the error again.
    p.catch(() => loaded.delete(name));
    loaded.set(name, p);
  }
  return p;
}

/** The single provider key set in a store's `spec.provider`; throws otherwise. */
export function providerNameOf(spec: SecretStoreProvider): string {
  if (spec === null || typeof spec !== 'object') throw new Error('spec.provider must be an object');
  const set = Object.keys(spec).filter((k) => (spec as Record<string, unknown>)[k] != null);
  if (set.length !== 1) {
    throw new Error(
      set.length === 0
        ? 'spec.provider names no provider'
        : `spec.provider must name exactly one provider, found ${set.join(', ')}`,
    );
  }
  return set[0]!;
}
