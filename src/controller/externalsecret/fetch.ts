// The fetch-and-render half of one ExternalSecret's reconcile (src/controller/externalsecret/reconcile.ts
// decides whether to fetch and writes the result): the store's values through its cached,
// coalescing client and the generators' new ones, the templateFrom sources, and the render in
// the bounded pool. Every failure becomes a Failure carrying the condition reason and whether
// retrying can help. Messages are value-free by construction (src/externalsecret, the
// providers and templating build them).
import { EXTERNAL_SECRET_API_VERSION, type AnySecretStore, type ExternalSecret, type SecretStoreRef } from '../../api/types.js';
import { storeId, storeIdOf } from '../../stores/id.js';
import { storeKindOf } from '../../stores/use.js';
import { fetchExternalSecret } from '../../externalsecret/fetch.js';
import { TemplateSourceError } from '../../externalsecret/template-sources.js';
import { ProviderError, type SecretsClient } from '../../providers/types.js';
import { selectTemplateEngine, type RenderedTemplate } from '../../templating/index.js';
import { RenderBusy, RenderFailed, type PooledRenderer } from '../../templating/pool/index.js';
import type { ClientCache } from '../runtime/clients.js';
import type { EventRecorder } from '../runtime/events.js';
import { noStoreClient, type GeneratorReads, type Generators } from '../generatorstate/generators.js';
import type { Generation } from '../generatorstate/state.js';
import { StateLimit } from '../generatorstate/limits.js';
import { queueKey } from '../runtime/keys.js';
import { bounded } from './status.js';
import { readTemplateSources } from './template-from.js';
import type { KubeRest } from '../../kube/rest.js';

/** A reconcile that cannot complete: `reason` is the Ready condition's, `retry` whether
 *  backoff retries can help (a spec error waits for the spec to change). */
export class Failure extends Error {
  constructor(readonly reason: string, message: string, readonly retry: boolean) {
    super(message);
  }
}

/** AccessDenied because a store would authenticate with the controller's own identity: the
 *  webhook's agents serve such an ExternalSecret with the pod's (src/controller/externalsecret/pod-agents.ts). */
export class IdentityRefusal extends Failure {
  constructor(message: string) {
    super('AccessDenied', message, false);
  }
}

export const esKey = (ns: string, name: string) => queueKey('es', ns, name);

/** The object an Event about `es` is recorded against. */
export function regarding(es: ExternalSecret) {
  return { apiVersion: EXTERNAL_SECRET_API_VERSION, kind: 'ExternalSecret', name: es.metadata.name!, namespace: es.metadata.namespace, uid: es.metadata.uid };
}

function rootCause(err: unknown): unknown {
  let e = err;
  while (e instanceof Error && e.cause && !(e instanceof ProviderError)) e = e.cause;
  return e;
}

/** ESO with no remote data: Delete deletes the Secret; Retain writes nothing, an existing
 *  Secret kept as it is (e.g. a find that matches nothing); Merge writes what is left. */
function nothingFetched(es: ExternalSecret, policy: string, values: Record<string, Uint8Array>): 'Delete' | 'Retain' | undefined {
  if (Object.keys(values).length > 0) return undefined;
  if (policy === 'Delete') return 'Delete';
  return policy === 'Retain' && (es.spec.data?.length || es.spec.dataFrom?.length) ? 'Retain' : undefined;
}

/** One sync's fetch: how fresh, since when, the leases it mints, its generator reads. */
export interface SyncScope {
  fresh: boolean;
  requestedAt: number;
  generation?: Generation | undefined;
  reads?: GeneratorReads | undefined;
}

export interface FetchDeps {
  clients: ClientCache;
  generators: Generators;
  rest: KubeRest;
  events: EventRecorder;
  renderer: PooledRenderer;
}

export class ExternalSecretFetcher {
  constructor(private readonly d: FetchDeps) {}

  /** The ExternalSecret's values, rendered; `gone` when deletionPolicy Delete finds no
   *  remote data left. With deletionPolicy Delete or Merge an entry whose remote secret is
   *  gone is skipped (an Event names it), as ESO does; with Retain it fails the sync.
   *  `generation` records the leases generators mint (src/controller/generatorstate/state.ts). */
  async fetch(es: ExternalSecret, stores: readonly AnySecretStore[], o: SyncScope): Promise<{ rendered: RenderedTemplate } | { gone: 'Delete' | 'Retain' }> {
    const ns = es.metadata.namespace!;
    const policy = es.spec.target?.deletionPolicy ?? 'Retain';
    const missing: string[] = [];
    const values = await this.values(es, stores, { ...o, ...(policy === 'Retain' ? {} : { onMissing: (entry: string) => missing.push(entry) }) });
    if (missing.length) {
      this.d.events.emit(regarding(es), 'Normal', 'MissingProviderSecret', bounded(`remote secret gone, entry skipped (deletionPolicy ${policy}): ${missing.sort().join('; ')}`));
    }
    const gone = nothingFetched(es, policy, values);
    if (gone) return { gone };
    // The same engine choice as the agent: ESO's Go templates, or handlebars when opted in.
    const template = es.spec.target?.template;
    const choice = selectTemplateEngine(es.metadata.name!, es.metadata.annotations, template);
    const sources = await this.templateSources(es);
    try {
      return { rendered: await this.d.renderer.render({ tenant: ns, key: esKey(ns, es.metadata.name!) }, { name: es.metadata.name!, template, choice }, values, { metadata: true, sources }) };
    } catch (err) {
      if (err instanceof RenderBusy) throw err;
      // Out of time: retried with backoff (a loaded machine, or a template that loops);
      // other template errors are the spec's and wait for it to change.
      const timedOut = err instanceof RenderFailed && err.timedOut;
      throw new Failure(timedOut ? 'TemplateTimeout' : 'TemplateError', (err as Error).message, timedOut);
    }
  }

  /** The stores' values and the generators' new ones (key → bytes); throws Failure. */
  private async values(es: ExternalSecret, stores: readonly AnySecretStore[], o: SyncScope & { onMissing?: (entry: string) => void }): Promise<Record<string, Uint8Array>> {
    const ns = es.metadata.namespace!;
    try {
      // One cached client per store (spec.secretStoreRef's is the default of every entry
      // without its own sourceRef.storeRef), each coalescing as a single store does.
      const byId = new Map<string, SecretsClient>();
      for (const store of stores) {
        const client = await this.d.clients.get(store, ns);
        byId.set(storeId(store), o.fresh ? client.fresh : client.sharedAsOf(o.requestedAt));
      }
      const ref = es.spec.secretStoreRef;
      const main = ref?.name ? byId.get(storeIdOf(storeKindOf(ref), ref.name, ns)) : undefined;
      // Every store was looked up before the fetch (src/controller/externalsecret/spec.ts).
      const clientFor = (r: SecretStoreRef) => byId.get(storeIdOf(storeKindOf(r), r.name, ns)) ?? noStoreClient;
      return await fetchExternalSecret(main ?? noStoreClient, {
        name: es.metadata.name!, data: es.spec.data ?? [], dataFrom: es.spec.dataFrom ?? [],
      }, {
        transformKeys: (name, template, map) => this.d.renderer.transformKeys({ tenant: ns, key: esKey(ns, es.metadata.name!) }, name, template, map),
        generate: async (g, i) => {
          const gen = await this.d.generators.resolve(ns, g, o.reads);
          // ESO's state key of a dataFrom generator is its index.
          const generation = o.generation;
          return this.d.generators.run(ns, gen, undefined, generation && {
            admit: () => generation.admit(String(i), gen), record: (lease) => generation.record(String(i), gen, lease),
          });
        },
        clientFor,
        ...(o.onMissing ? { onMissing: o.onMissing } : {}),
      });
    } catch (err) {
      const cause = rootCause(err);
      if (cause instanceof RenderBusy) throw cause;
      // Retried with backoff: states are released as their revocations succeed.
      if (cause instanceof StateLimit) throw new Failure('GeneratorStateLimit', (err as Error).message, true);
      const code = cause instanceof ProviderError ? cause.code : undefined;
      // The failing entry's store is not known here: every store logs in again (cheap, rare).
      if (code === 'AuthFailed' || code === 'Forbidden') for (const store of stores) await this.d.clients.evict(storeId(store));
      // Retried with backoff, generator spec errors included: generators are not watched, so
      // a fixed generator is seen at the next retry.
      throw new Failure('SecretSyncedError', (err as Error).message, true);
    }
  }

  /** templateFrom configMap/secret sources (src/controller/externalsecret/template-from.ts). */
  private async templateSources(es: ExternalSecret) {
    try {
      return await readTemplateSources(this.d.rest, es);
    } catch (err) {
      const what = `ExternalSecret "${es.metadata.name}": `;
      if (!(err instanceof TemplateSourceError)) throw new Failure('TemplateError', `${what}cannot read a templateFrom source: ${(err as Error).message}`, true);
      // Not found: retried with backoff (the object may be created after the ExternalSecret).
      const notFound = err.reason === 'TemplateSourceNotFound';
      throw new Failure(notFound ? 'TemplateError' : err.reason, what + err.message, notFound);
    }
  }
}
