// Provider clients of the reconciler, one per store generation (and per namespace for a
// ClusterSecretStore whose credentials depend on it), closed when the store changes or is
// deleted. Logins happen once per client, so tokens are reused across reconciles. Each
// client is decorated once (store-client.ts): coalescing of identical reads within the
// refresh window, a per-store rate limit on real reads, the per-call deadline. Credentials come from the API, only from the namespace
// the store is used from; tokens via TokenRequest, only for a ServiceAccount the store
// names in that namespace. The controller's own identity is lent to no SecretStore, and
// to a ClusterSecretStore only with --allow-ambient-identity (controllerIdentityProblem).
import type { AddressPolicy, EgressAllowList } from '../../egress/policy.js';
import type { Logger } from 'pino';
import type { AnySecretStore } from '../../api/types.js';
import type { KubeRest } from '../../kube/rest.js';
import { loadProvider, providerNameOf } from '../../providers/registry.js';
import { ProviderError, type Provider, type ProviderContext, type SecretKeySelector } from '../../providers/types.js';
import { controllerIdentityProblem, lendsIdentity, namespaceScoped, referencedObjects, type IdentityLending } from '../../stores/access.js';
import { TokenBucket } from './queue.js';
import { StoreClient } from './store-client.js';
import { nameProblem } from '../../kube/names.js';
import { CONFIG_MAPS, resourcePath, SECRETS, SERVICE_ACCOUNTS } from '../../kube/paths.js';
import { storeId } from '../../stores/id.js';
import { credentialElsewhere, serviceAccountElsewhere } from '../../stores/use.js';

interface Entry {
  generation: number;
  uid: string;
  client: Promise<StoreClient>;
}

export interface ClientCacheOptions {
  rest: KubeRest;
  logger: Logger;
  windowMs: number;
  /** Real provider calls per second per store (0 = unlimited), and the burst. */
  storeQps: number;
  storeBurst: number;
  timeoutMs: number;
  /** Lend the controller's environment identity to ClusterSecretStores (off by default). */
  allowAmbientIdentity?: boolean;
  /** Namespaces whose SecretStores are lent it too (--allow-ambient-identity-namespaces). */
  ambientIdentityNamespaces?: readonly string[];
  /** The controller's own ServiceAccount (its token is what allowAmbientIdentity lends to a
   *  ClusterSecretStore that names no ServiceAccount). */
  ownServiceAccount?: { namespace: string; name: string };
  /** Let SecretStores and generators call loopback/private addresses (off by default). */
  allowPrivateStoreAddresses?: boolean;
  /** Private ranges and hosts opened to them (--egress-allow). */
  egressAllow?: EgressAllowList;
  onProviderCall?: (store: string) => void;
  loadProvider?: (name: string) => Promise<Provider>;
}


const b64 = (s: string) => new Uint8Array(Buffer.from(s, 'base64'));

export class ClientCache {
  private readonly entries = new Map<string, Entry>();
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(private readonly opts: ClientCacheOptions) {}

  /** The client for `store` used from `namespace`; created on first use. */
  get(store: AnySecretStore, namespace: string): Promise<StoreClient> {
    const id = storeId(store);
    const ns = store.kind === 'SecretStore' ? store.metadata.namespace! : namespace;
    const key = store.kind === 'ClusterSecretStore' && namespaceScoped(store.spec.provider) ? `${id}@${ns}` : id;
    const generation = store.metadata.generation ?? 0;
    const uid = store.metadata.uid ?? '';
    const hit = this.entries.get(key);
    if (hit && hit.generation === generation && hit.uid === uid) return hit.client;
    if (hit) void this.closeEntry(hit);
    const client = this.create(store, id, ns);
    const entry: Entry = { generation, uid, client };
    this.entries.set(key, entry);
    // A failed creation (bad credentials) is retried on the next reconcile.
    client.catch(() => this.entries.get(key) === entry && this.entries.delete(key));
    return client;
  }

  /** Closes every client of the store (changed, deleted, or its credentials refused). */
  async evict(id: string): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const [key, e] of this.entries) {
      if (key === id || key.startsWith(`${id}@`)) {
        this.entries.delete(key);
        closing.push(this.closeEntry(e));
      }
    }
    this.buckets.delete(id);
    await Promise.all(closing);
  }

  /** Why no client may be built for `store` (it would use the controller's own identity). */
  identityProblem(store: AnySecretStore): string | undefined {
    return controllerIdentityProblem(store, this.lending());
  }

  /** The context a provider would get for `store` used from `namespace` (same credential
   *  rules), for calls outside the client contract (src/controller/generatorstate/generators.ts). */
  providerContext(store: AnySecretStore, namespace: string): ProviderContext {
    const id = storeId(store);
    const refused = this.identityProblem(store);
    if (refused) throw new ProviderError('Forbidden', id, refused);
    return this.context(store, id, providerNameOf(store.spec.provider), namespace);
  }

  get size(): number {
    return this.entries.size;
  }

  async close(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    await Promise.all(all.map((e) => this.closeEntry(e)));
  }

  private async closeEntry(e: Entry): Promise<void> {
    await e.client.then((c) => c.close()).catch(() => undefined);
  }

  private bucket(id: string): TokenBucket {
    let b = this.buckets.get(id);
    if (!b) this.buckets.set(id, (b = new TokenBucket(this.opts.storeQps, this.opts.storeBurst)));
    return b;
  }

  private async create(store: AnySecretStore, id: string, namespace: string): Promise<StoreClient> {
    // Every client of the reconciler is built here: the one place the identity rule cannot be missed.
    const refused = this.identityProblem(store);
    if (refused) throw new ProviderError('Forbidden', id, refused);
    const name = providerNameOf(store.spec.provider);
    const provider = await (this.opts.loadProvider ?? loadProvider)(name);
    const raw = await provider.newClient(this.context(store, id, name, namespace));
    return new StoreClient(provider, raw, {
      storeId: id, timeoutMs: this.opts.timeoutMs, windowMs: this.opts.windowMs, rateLimit: this.bucket(id),
      onCall: () => this.opts.onProviderCall?.(id),
    });
  }

  /** The ServiceAccount whose token a store that names none gets: the controller's own, for
   *  an operator's ClusterSecretStore when --allow-ambient-identity lends it (Vault's
   *  Kubernetes auth, AWS web identity as with IRSA); nobody's otherwise. */
  private lending(): IdentityLending {
    return { clusterStores: this.opts.allowAmbientIdentity ?? false, namespaces: this.opts.ambientIdentityNamespaces ?? [] };
  }

  private lentAccount(store: AnySecretStore, id: string): { namespace: string; name: string; audiences?: string[] } {
    if (!lendsIdentity(store, this.lending())) {
      throw new ProviderError('AuthFailed', id, 'the store uses the workload identity; the reconciler does not lend its own: name a serviceAccountRef in the store');
    }
    const own = this.opts.ownServiceAccount;
    if (!own) {
      throw new ProviderError('AuthFailed', id, "the controller's own ServiceAccount is unknown: set POD_SERVICE_ACCOUNT (the chart sets it from spec.serviceAccountName)");
    }
    return own;
  }

  /** Where a store's client may connect (SECURITY.md, "The controller's network boundary"):
   *  the controller's network position is not a tenant's to use, so a SecretStore (and a
   *  generator, which becomes one) reaches loopback and private addresses only where the
   *  operator opened them; a ClusterSecretStore, the operator's own object, may. Link-local
   *  and metadata addresses never (src/egress/policy.ts). */
  egressPolicy(store: AnySecretStore): AddressPolicy {
    if (store.kind === 'ClusterSecretStore' || this.opts.allowPrivateStoreAddresses) return { privateAddresses: true };
    return {
      privateAddresses: false,
      ...(this.opts.egressAllow ? { allow: this.opts.egressAllow } : {}),
      privateHint: 'a SecretStore or generator may call it only when the operator opens it with --egress-allow (chart: controller.egressAllow) or --allow-private-store-addresses',
    };
  }

  private context(store: AnySecretStore, id: string, providerName: string, namespace: string): ProviderContext {
    const { rest } = this.opts;
    const check = (kind: string, ref: SecretKeySelector) => {
      const ns = ref.namespace ?? namespace;
      if (ns !== namespace) {
        throw new ProviderError('Forbidden', id, credentialElsewhere('the store', kind, { namespace: ns, name: ref.name }, namespace));
      }
      return ns;
    };
    const read = async (kind: 'Secret' | 'ConfigMap', ref: SecretKeySelector): Promise<Uint8Array> => {
      const ns = check(kind, ref);
      const bad = nameProblem(ref.name, 'subdomain');
      if (bad) throw new ProviderError('InvalidSpec', id, `the ${kind} name of a credential reference ${bad}`);
      let obj: { data?: Record<string, string>; binaryData?: Record<string, string> };
      try {
        obj = await rest.get(resourcePath(kind === 'Secret' ? SECRETS : CONFIG_MAPS, { namespace: ns, name: ref.name }));
      } catch (err) {
        // Never NotFound: that code means "the remote entry is gone" (pushsecret/remote.ts deleteEntry,
        // externalsecret/reconcile.ts remoteGone), and a missing credential proves nothing about the store.
        throw new ProviderError('AuthFailed', id, `cannot read the store's credential ${kind} "${ns}/${ref.name}" (${(err as Error).message})`);
      }
      // Secret data and ConfigMap binaryData are base64; ConfigMap data is text.
      const text = kind === 'ConfigMap' ? obj.data?.[ref.key] : undefined;
      if (text !== undefined) return new TextEncoder().encode(text);
      const encoded = kind === 'Secret' ? obj.data?.[ref.key] : obj.binaryData?.[ref.key];
      if (encoded === undefined) throw new ProviderError('AuthFailed', id, `the store's credential ${kind} "${ns}/${ref.name}" has no key "${ref.key}"`);
      return b64(encoded);
    };
    const serviceAccounts = referencedObjects(store.spec.provider).serviceAccounts;
    // Providers may ask for credentials and tokens on every call (the agent re-reads
    // files); here each is an API request, so keep them briefly (credentials) or until
    // well before expiry (tokens, valid 1 h).
    const memo = new Map<string, { at: number; p: Promise<unknown> }>();
    const remember = <T>(key: string, ttlMs: number, load: () => Promise<T>): Promise<T> => {
      const hit = memo.get(key);
      if (hit && Date.now() - hit.at < ttlMs) return hit.p as Promise<T>;
      const p = load();
      const entry = { at: Date.now(), p };
      memo.set(key, entry);
      p.catch(() => memo.get(key) === entry && memo.delete(key));
      return p;
    };
    return {
      storeId: id,
      namespace,
      spec: (store.spec.provider as Record<string, unknown>)[providerName],
      readCredential: (ref) => remember(`s:${ref.namespace ?? ''}/${ref.name}/${ref.key}`, 30_000, () => read('Secret', ref)),
      readConfigMap: (ref) => remember(`c:${ref.namespace ?? ''}/${ref.name}/${ref.key}`, 30_000, () => read('ConfigMap', ref)),
      serviceAccountToken: (audience) => remember(`t:${audience ?? ''}`, 45 * 60_000, async () => {
        const named = serviceAccounts[0];
        const sa = named ? { namespace: named.namespace ?? namespace, name: named.name, audiences: named.audiences } : this.lentAccount(store, id);
        if (named && sa.namespace !== namespace) throw new ProviderError('Forbidden', id, serviceAccountElsewhere(named.path, sa, namespace));
        const audiences = audience ? [audience] : sa.audiences ?? [];
        try {
          const res = await rest.create<{ status: { token: string } }>(
            resourcePath(SERVICE_ACCOUNTS, { namespace: sa.namespace, name: sa.name, subresource: 'token' }),
            { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { audiences, expirationSeconds: 3600 } },
          );
          return res.status.token;
        } catch (err) {
          throw new ProviderError('AuthFailed', id, `cannot request a token for ServiceAccount "${sa.namespace}/${sa.name}" (${(err as Error).message})`);
        }
      }),
      environmentIdentity: lendsIdentity(store, this.lending()),
      logger: this.opts.logger.child({ store: id, provider: providerName }),
      timeoutMs: this.opts.timeoutMs,
      addresses: this.egressPolicy(store),
      // An operator's store may quote its own errors; a tenant-aimed one a class and status only.
      quoteStoreErrors: store.kind === 'ClusterSecretStore',
    };
  }
}
