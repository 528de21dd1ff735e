// The provider registry: the only list of the providers ESI serves. Each entry pairs a
// provider's light meta (capabilities, spec validation, credential references, pod
// identity; no SDK) with a lazy import of its client. The webhook and the reconciler
// read the meta synchronously; a process pays for an SDK only when it builds a client
// for a store that uses it (the agent's start time and RSS budgets depend on it, see
// docs/decisions/0005-agent-footprint.md).
// Adding a provider = one folder (meta.ts + index.ts) and one line below.
import { providerName } from '../api/types.js';
import { meta as akeyless } from './akeyless/meta.js';
import { meta as aws } from './aws/meta.js';
import { meta as azurekv } from './azurekv/meta.js';
import { meta as bitwardensecretsmanager } from './bitwardensecretsmanager/meta.js';
import { meta as conjur } from './conjur/meta.js';
import { meta as doppler } from './doppler/meta.js';
import { meta as fake } from './fake/meta.js';
import { meta as gcpsm } from './gcpsm/meta.js';
import { meta as grpc } from './grpc/meta.js';
import { meta as infisical } from './infisical/meta.js';
import { meta as kubernetes } from './kubernetes/meta.js';
import { meta as onepassword } from './onepassword/meta.js';
import { meta as openBao } from './openbao/meta.js';
import type { Provider, ProviderMeta } from './types.js';
import { meta as vault } from './vault/meta.js';
import { meta as webhook } from './webhook/meta.js';

/** A provider's meta and the import of the module exporting its `provider`. */
export interface ProviderEntry {
  meta: ProviderMeta;
  load(): Promise<{ provider?: unknown; default?: unknown }>;
}

const ENTRIES = new Map<string, ProviderEntry>([
  ['fake', { meta: fake, load: () => import('./fake/index.js') }],
  ['kubernetes', { meta: kubernetes, load: () => import('./kubernetes/index.js') }],
  ['vault', { meta: vault, load: () => import('./vault/index.js') }],
  ['openBao', { meta: openBao, load: () => import('./openbao/index.js') }],
  ['aws', { meta: aws, load: () => import('./aws/index.js') }],
  ['azurekv', { meta: azurekv, load: () => import('./azurekv/index.js') }],
  ['gcpsm', { meta: gcpsm, load: () => import('./gcpsm/index.js') }],
  ['grpc', { meta: grpc, load: () => import('./grpc/index.js') }],
  ['webhook', { meta: webhook, load: () => import('./webhook/index.js') }],
  ['onepassword', { meta: onepassword, load: () => import('./onepassword/index.js') }],
  ['doppler', { meta: doppler, load: () => import('./doppler/index.js') }],
  ['bitwardensecretsmanager', { meta: bitwardensecretsmanager, load: () => import('./bitwardensecretsmanager/index.js') }],
  ['infisical', { meta: infisical, load: () => import('./infisical/index.js') }],
  ['akeyless', { meta: akeyless, load: () => import('./akeyless/index.js') }],
  ['conjur', { meta: conjur, load: () => import('./conjur/index.js') }],
]);

/** Names of the providers this build serves, in registry order. */
export function providerNames(): string[] {
  return [...ENTRIES.keys()];
}

/** Names of the providers ESI serves (a snapshot of the built-in registry). */
export const PROVIDER_NAMES: readonly string[] = Object.freeze(providerNames());

/** Adds a provider (an embedder's own, or a test's toy provider): the same as one more
 *  line in the table above. Replacing a built-in provider is refused. */
export function registerProvider(entry: ProviderEntry): void {
  const name = entry.meta.name;
  if (ENTRIES.has(name)) throw new Error(`provider "${name}" is already registered`);
  ENTRIES.set(name, entry);
}

class UnknownProviderError extends Error {
  constructor(readonly provider: string, detail: string) {
    super(`provider "${provider}": ${detail}`);
    this.name = 'UnknownProviderError';
  }
}

function unsupported(name: string): UnknownProviderError {
  return new UnknownProviderError(name, `is not supported by ESI (supported: ${providerNames().join(', ')})`);
}

/** The meta of a registered provider, or undefined. Synchronous: no SDK is loaded. */
export function providerMeta(name: string): ProviderMeta | undefined {
  return ENTRIES.get(name)?.meta;
}

const loaded = new Map<string, Promise<Provider>>();

function isProvider(x: unknown): x is Provider {
  const p = x as Partial<Provider> | undefined;
  return typeof p === 'object' && p !== null && typeof p.name === 'string' && typeof p.newClient === 'function';
}

async function importProvider(name: string, entry: ProviderEntry): Promise<Provider> {
  let mod: { provider?: unknown; default?: unknown };
  try {
    mod = await entry.load();
  } catch (err) {
    throw new UnknownProviderError(name, `failed to load: ${(err as Error).message}`);
  }
  const provider = mod.provider ?? mod.default;
  if (!isProvider(provider) || provider.name !== name) throw new UnknownProviderError(name, 'module does not export this provider');
  return provider;
}

/** Loads (once) the provider registered under `name`. */
export function loadProvider(name: string): Promise<Provider> {
  const entry = ENTRIES.get(name);
  if (!entry) return Promise.reject(unsupported(name));
  let p = loaded.get(name);
  if (!p) {
    p = importProvider(name, entry);
    // A failed import is not cached: the next call reports the error again.
    p.catch(() => loaded.delete(name));
    loaded.set(name, p);
  }
  return p;
}

/** The single provider key set in a store's `spec.provider`; throws otherwise. */
export function providerNameOf(spec: unknown): string {
  if (spec === null || typeof spec !== 'object') throw new Error('spec.provider must be an object');
  const name = providerName(spec as Record<string, unknown>);
  if (name) return name;
  const set = Object.keys(spec).filter((k) => (spec as Record<string, unknown>)[k] != null);
  throw new Error(set.length === 0 ? 'spec.provider names no provider' : `spec.provider must name exactly one provider, found ${set.join(', ')}`);
}

/** The meta of the one provider a store configures, or a message (naming the field)
 *  saying why there is none. */
export function storeProvider(spec: unknown): { name: string; meta: ProviderMeta; spec: unknown } | { problem: string } {
  let name: string;
  try {
    name = providerNameOf(spec);
  } catch (err) {
    return { problem: (err as Error).message };
  }
  const meta = providerMeta(name);
  if (!meta) return { problem: `spec.provider.${name} is not supported by ESI (supported: ${providerNames().join(', ')})` };
  return { name, meta, spec: (spec as Record<string, unknown>)[name] };
}
