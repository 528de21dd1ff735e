// Stage 1: fetch every mounted ExternalSecret from its store. One client per store,
// created lazily through the provider registry (so only the SDKs in use are loaded) and
// kept across refreshes. Within one cycle identical remote reads are coalesced: N
// ExternalSecrets reading K distinct remote keys cost at most K provider calls.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { AgentConfig, AgentStore } from '../src/agent-config/types.js';
import { loadProvider, providerNameOf } from '../src/providers/registry.js';
import { coalescing } from '../src/providers/coalescing.js';
import { fetchExternalSecret } from '../src/externalsecret/fetch.js';
import { transformKeys } from '../src/templating/go/index.js';
import {
  ProviderError,
  type Provider,
  type ProviderContext,
  type SecretKeySelector,
  type SecretMap,
  type SecretsClient,
} from '../src/providers/types.js';
import { fileNameProblem, underRoot } from './config.js';

export type Fetched = Map<string, SecretMap>;

const DEFAULT_TIMEOUT_MS = 10_000;

/** One cycle's failures, one per ExternalSecret; each message is value-free. */
export class FetchError extends Error {
  constructor(readonly failures: { secret: string; store: string; error: Error }[]) {
    const first = failures[0]!;
    super(failures.length === 1 ? first.error.message : `${first.error.message} (and ${failures.length - 1} more)`);
    this.name = 'FetchError';
  }
}

export interface FetcherOptions {
  config: AgentConfig;
  root?: string;
  logger: Logger;
  /** Per provider call (ProviderContext.timeoutMs). */
  timeoutMs?: number;
  /** Deadline of one fetchAll cycle when its caller gives no signal. */
  cycleTimeoutMs?: number;
  /** Provider lookup; the lazy registry by default (tests and embedders override it). */
  loadProvider?: (name: string) => Promise<Provider>;
  /** Called once per real (not coalesced) provider call, for metrics. */
  onProviderCall?: (store: string) => void;
}

export class Fetcher {
  private readonly clients = new Map<string, Promise<SecretsClient>>();

  constructor(private readonly opts: FetcherOptions) {}

  private context(key: string, store: AgentStore, providerName: string): ProviderContext {
    const { config, logger } = this.opts;
    return {
      storeId: key,
      namespace: config.pod.namespace,
      spec: (store.provider as Record<string, unknown>)[providerName],
      readCredential: (ref) => this.readCredential(key, store, ref),
      readConfigMap: (ref) => this.readConfigMap(key, store, ref),
      serviceAccountToken: (audience) => this.readToken(key, store, audience),
      logger: logger.child({ store: key, provider: providerName }),
      timeoutMs: this.opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    };
  }

  /** `<dir>/<name>/<key>` of a mount the webhook made for this container; the name and
   *  key come from the store spec and must not climb out of it. */
  private async readMounted(storeId: string, dir: string | undefined, ref: SecretKeySelector, what: string): Promise<Uint8Array> {
    if (!dir) throw new ProviderError('NotFound', storeId, `${what} ${ref.name}/${ref.key} is not mounted (no ${what === 'credential' ? 'credentialsDir' : 'configMapsDir'})`);
    for (const part of [ref.name, ref.key]) {
      if (fileNameProblem(part)) throw new ProviderError('InvalidSpec', storeId, `invalid ${what} reference ${ref.name}/${ref.key}`);
    }
    try {
      return new Uint8Array(await readFile(join(underRoot(this.opts.root, dir), ref.name, ref.key)));
    } catch (err) {
      throw new ProviderError('NotFound', storeId, `${what} ${ref.name}/${ref.key} is not mounted (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }

  /** `<credentialsDir>/<name>/<key>`: only what the webhook mounted into this container. */
  private readCredential(storeId: string, store: AgentStore, ref: SecretKeySelector): Promise<Uint8Array> {
    return this.readMounted(storeId, store.credentialsDir, ref, 'credential');
  }

  /** `<configMapsDir>/<name>/<key>`: ConfigMaps (CA bundles) the webhook mounted. */
  private readConfigMap(storeId: string, store: AgentStore, ref: SecretKeySelector): Promise<Uint8Array> {
    return this.readMounted(storeId, store.configMapsDir, ref, 'ConfigMap');
  }

  /** The projected service-account token, re-read every time (the kubelet rotates it).
   *  Each store has its own token (one per audience); the top-level one is the fallback. */
  private async readToken(storeId: string, store: AgentStore, audience?: string): Promise<string> {
    const { config, root } = this.opts;
    const tokenPath = store.tokenPath ?? config.tokenPath;
    const tokenAudience = store.tokenPath ? store.tokenAudience : config.tokenAudience;
    if (!tokenPath) throw new ProviderError('AuthFailed', storeId, 'no service-account token is mounted for this store (tokenPath unset)');
    if (audience && tokenAudience && audience !== tokenAudience) {
      throw new ProviderError('AuthFailed', storeId, `the mounted token is for audience "${tokenAudience}", the store wants "${audience}"`);
    }
    try {
      return (await readFile(underRoot(root, tokenPath), 'utf8')).trim();
    } catch (err) {
      throw new ProviderError('AuthFailed', storeId, `cannot read the service-account token (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }

  /** A new client for store `key`, owned by the caller (dynamic secrets keep their own:
   *  injector/leases.ts), created like the cycle's. */
  async openClient(key: string): Promise<SecretsClient> {
    const store = this.opts.config.stores[key]!;
    const name = providerNameOf(store.provider);
    const provider = await (this.opts.loadProvider ?? loadProvider)(name);
    return provider.newClient(this.context(key, store, name));
  }

  private client(key: string): Promise<SecretsClient> {
    let p = this.clients.get(key);
    if (p) return p;
    p = this.openClient(key);
    // A failed creation is retried next cycle rather than cached.
    p.catch(() => this.clients.delete(key));
    this.clients.set(key, p);
    return p;
  }

  /** Drops a client whose credentials were refused, so the next cycle logs in again. */
  private async evict(key: string): Promise<void> {
    const p = this.clients.get(key);
    this.clients.delete(key);
    await p?.then((c) => c.close()).catch(() => undefined);
  }

  /** Fetches every configured ExternalSecret; throws FetchError if any one fails. Every
   *  provider call carries the cycle's deadline: the caller's `signal`, else
   *  `cycleTimeoutMs` (default: three per-call timeouts). */
  async fetchAll(signal?: AbortSignal): Promise<Fetched> {
    const { config } = this.opts;
    const deadline = signal ?? AbortSignal.timeout(this.opts.cycleTimeoutMs ?? 3 * (this.opts.timeoutMs ?? DEFAULT_TIMEOUT_MS));
    const perCycle = new Map<string, Promise<SecretsClient>>();
    const clientFor = (key: string): Promise<SecretsClient> => {
      let c = perCycle.get(key);
      if (!c) {
        c = this.client(key).then((cl) => coalescing(cl, () => this.opts.onProviderCall?.(key)));
        perCycle.set(key, c);
      }
      return c;
    };
    const results = await Promise.allSettled(
      config.secrets.map(async (s) => fetchExternalSecret(await clientFor(s.store), s, { signal: deadline, transformKeys })),
    );
    const out: Fetched = new Map();
    const failures: { secret: string; store: string; error: Error }[] = [];
    results.forEach((r, i) => {
      const secret = config.secrets[i]!;
      if (r.status === 'fulfilled') out.set(secret.name, r.value);
      else failures.push({ secret: secret.name, store: secret.store, error: this.describe(secret.name, secret.store, r.reason) });
    });
    if (failures.length > 0) {
      const denied = new Set(failures.filter((f) => isAuthFailure(f.error)).map((f) => f.store));
      await Promise.all([...denied].map((k) => this.evict(k)));
      throw new FetchError(failures);
    }
    return out;
  }

  /** Errors that do not already name the ExternalSecret (client creation) get its name. */
  private describe(secret: string, store: string, err: unknown): Error {
    const e = err instanceof Error ? err : new Error(String(err));
    if (e.message.includes(`ExternalSecret "${secret}"`)) return e;
    return new Error(`ExternalSecret "${secret}" store ${store}: ${e.message}`, { cause: e });
  }

  async close(): Promise<void> {
    const all = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(all.map((p) => p.then((c) => c.close()).catch(() => undefined)));
  }
}

function isAuthFailure(e: Error): boolean {
  const cause = (e as { cause?: unknown }).cause ?? e;
  return cause instanceof ProviderError && (cause.code === 'AuthFailed' || cause.code === 'Forbidden');
}
