// The reconciler's side of ESO's generators (docs/generators.md): reads the generator a
// `generatorRef` names — in the referring object's own namespace, or a ClusterGenerator —
// and runs it (src/generators/). Generators that call a service use the reconciler's
// credential rules unchanged: the generator is turned into a SecretStore of the referring
// namespace (ECR: an aws store; VaultDynamicSecret: a vault store), so its credential
// Secrets and ServiceAccounts are read only from that namespace and the controller's own
// identity is never lent (src/controller/runtime/clients.ts). Values are never logged or put in errors.
// Generators are read from the API when they run (not watched: a tenant's generators can be
// large, and a cache of them would be unbounded memory), at most once per generator per sync
// (GeneratorReads), through the paced client (--kube-qps, src/controller/cmd.ts).
import type { AnySecretStore, ExternalSecret, ExternalSecretSpec, GeneratorRef, VaultDynamicSecretSpec } from '../../api/types.js';
import { GENERATOR_RESOURCES, GENERATORS_API_VERSION } from '../../api/types.js';
import { clusterGeneratorSpec, GeneratorError, generatorRefProblem, runGenerator, type GeneratorCalls } from '../../generators/index.js';
import { isKubeStatus, type KubeRest } from '../../kube/rest.js';
import { resourceOf, resourcePath } from '../../kube/paths.js';
import { ecrAuthorizationToken } from '../../providers/aws/ecr.js';
import { emptySecretMap, ProviderError, type Lease, type LeaseOperations, type SecretMap, type SecretsClient } from '../../providers/types.js';
import { describeStore } from '../../stores/use.js';
import type { GeneratorKind } from '../../api/generators.js';
import type { ClientCache } from '../runtime/clients.js';

/** A generator read from the API: its kind, spec and controller class. */
export interface ResolvedGenerator {
  kind: GeneratorKind;
  /** `Password "ns/name"` or `ClusterGenerator "name" (Password)`, for messages. */
  what: string;
  /** `<Kind>:<name>` of the object read (ClusterGenerator for one), unique in a namespace. */
  id: string;
  /** The name of the object read. */
  name: string;
  spec: unknown;
  /** The generator's `spec.controller` ('' when unset; only Fake and VaultDynamicSecret have one). */
  controller: string;
  uid: string;
  generation: number;
}

/** One sync's generator reads: each distinct generator is read once, however many entries
 *  name it (an ExternalSecret with 100 entries naming one Fake reads it once, not 200 times). */
export type GeneratorReads = Map<string, Promise<ResolvedGenerator>>;

/** How a run's leases are bounded and kept (src/controller/generatorstate/state.ts). */
export interface LeaseTracking {
  /** Before a mint that may bring a lease: throws to refuse it. */
  admit(): Promise<void>;
  record(lease: Lease): Promise<void>;
}

export interface GeneratorOptions {
  /** False in scoped mode (--watch-namespaces): ClusterGenerators are refused, never read. */
  clusterKinds?: boolean;
  /** --allow-generator-raw-results: a namespaced VaultDynamicSecret may use resultType Raw and Auth. */
  allowRawResults?: boolean;
}

/** The bound of what a GeneratorState copies of its generator (generatorSnapshot). */
export const MAX_SNAPSHOT_BYTES = 64 * 1024;

interface GeneratorObject {
  metadata?: { uid?: string; generation?: number };
  spec?: Record<string, unknown>;
}

/** ESO allows an ExternalSecret without a store when every entry is a generator. */
export function generatorsOnly(spec: ExternalSecretSpec): boolean {
  const from = spec.dataFrom ?? [];
  return !spec.secretStoreRef?.name && !(spec.data ?? []).length && from.length > 0 && from.every((f) => !!f.sourceRef?.generatorRef && !f.sourceRef.storeRef);
}

/** The ExternalSecret's source for messages: its stores (several with per-entry
 *  `sourceRef.storeRef`), or its generators. */
export function describeSource(es: ExternalSecret, stores: readonly AnySecretStore[]): string {
  if (stores.length) return stores.map(describeStore).join(', ');
  const refs = (es.spec.dataFrom ?? []).map((f) => f.sourceRef?.generatorRef).filter((r) => !!r);
  return `generator${refs.length > 1 ? 's' : ''} ${refs.map((r) => `${r.kind} "${r.name}"`).join(', ')}`;
}

/** What the target Secret records as its sources (labels and annotation of src/controller/externalsecret/secret.ts). */
export function sourceOf(es: ExternalSecret, stores: readonly AnySecretStore[]): { kind: string; name: string }[] {
  if (stores.length) return stores.map((s) => ({ kind: s.kind, name: s.metadata.name! }));
  const ref = es.spec.dataFrom?.[0]?.sourceRef?.generatorRef;
  return [{ kind: ref?.kind ?? 'Generator', name: ref?.name ?? '' }];
}

const noStore = () => Promise.reject(new ProviderError('InvalidSpec', 'none', 'needs spec.secretStoreRef (only generator entries may go without a store)'));

/** The "store" of an ExternalSecret that has only generators: every read is refused. */
export const noStoreClient: SecretsClient = {
  getSecret: noStore, getSecretMap: noStore, getAllSecrets: noStore, pushSecret: noStore, deleteSecret: noStore,
  secretExists: noStore, validate: noStore, close: () => Promise.resolve(),
};

/** The longest a timer can wait (setTimeout's limit, about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A credential the reconciler minted lives in a Secret until its lease runs out or is
 *  revoked (superseded, or its ExternalSecret deleted: src/controller/generatorstate/state.ts): the
 *  token that minted it stays held by the provider (Vault would revoke the lease with the
 *  token), and is released once the lease has expired, so nothing accumulates. Leases are
 *  never renewed here, as in ESO (docs/generators.md). */
function keepUntilExpiry(leases: LeaseOperations, lease: Lease): void {
  const forget = (leases as { forget?: (id: string) => void }).forget;
  if (typeof forget !== 'function') return;
  setTimeout(() => forget.call(leases, lease.id), Math.min(MAX_TIMER_MS, Math.max(0, lease.ttlSeconds) * 1000 + 60_000)).unref();
}

/** VaultDynamicSecret `resultType` → what the provider returns as data (ESO: the response's
 *  `data`, its `auth` section, or the whole response). */
const RESULT_TYPES: Readonly<Record<string, 'data' | 'auth' | 'raw'>> = { Data: 'data', Auth: 'auth', Raw: 'raw' };

/** A generator's values as a key → bytes map, as ESO converts them: strings as they are,
 *  null as an empty value, other JSON values as JSON text (numbers and booleans as written). */
function asSecretMap(data: Readonly<Record<string, unknown>>): SecretMap {
  const out = emptySecretMap();
  for (const [k, v] of Object.entries(data)) out[k] = new TextEncoder().encode(typeof v === 'string' ? v : v === null ? '' : JSON.stringify(v));
  return out;
}

/** The parts of a VaultDynamicSecret spec ESI serves; throws GeneratorError for the rest. */
function checkVaultSpec(spec: VaultDynamicSecretSpec): { method: 'GET' | 'POST'; result: 'data' | 'auth' | 'raw' } {
  if (typeof spec?.path !== 'string' || spec.path === '') throw new GeneratorError('spec.path is required');
  const resultType = spec.resultType ?? 'Data';
  const result = Object.hasOwn(RESULT_TYPES, resultType) ? RESULT_TYPES[resultType] : undefined;
  if (!result) throw new GeneratorError(`spec.resultType ${JSON.stringify(spec.resultType)}: Data, Auth or Raw`);
  const method = (spec.method ?? 'GET').toUpperCase();
  if (method !== 'GET' && method !== 'POST' && method !== 'PUT') throw new GeneratorError(`spec.method ${JSON.stringify(spec.method)}: GET, POST or PUT`);
  if (spec.getParameters && Object.keys(spec.getParameters).length) throw new GeneratorError('spec.getParameters is not supported by ESI; put the parameters in spec.parameters with method POST');
  return { method: method === 'GET' ? 'GET' : 'POST', result };
}

export class Generators {
  constructor(private readonly rest: KubeRest, private readonly clients: ClientCache, private readonly o: GeneratorOptions = {}) {}

  /** A new sync's reads (resolve's `reads`). */
  reads(): GeneratorReads {
    return new Map();
  }

  /** Revokes a lease minted by the generator `snapshot` (generatorSnapshot) for an object of
   *  `namespace`; a lease the store no longer knows counts as revoked. Throws GeneratorError
   *  or ProviderError (value-free: the lease id is never in a message). */
  async revoke(namespace: string, snapshot: unknown, leaseId: string): Promise<void> {
    const s = snapshot as { kind?: unknown; metadata?: { name?: unknown; uid?: unknown; generation?: unknown }; spec?: unknown } | undefined;
    if (s?.kind !== 'VaultDynamicSecret' || typeof s.metadata?.name !== 'string' || !s.spec) throw new GeneratorError('the generator state holds no VaultDynamicSecret to revoke its lease with');
    const name = s.metadata.name;
    const gen: ResolvedGenerator = {
      kind: 'VaultDynamicSecret', spec: s.spec, what: `VaultDynamicSecret "${namespace}/${name}"`, id: `VaultDynamicSecret:${name}`, name, controller: '',
      uid: typeof s.metadata.uid === 'string' ? s.metadata.uid : '', generation: typeof s.metadata.generation === 'number' ? s.metadata.generation : 0,
    };
    const leases = await this.leasesOf(namespace, gen, s.spec as VaultDynamicSecretSpec);
    await leases.revoke({ id: leaseId, ttlSeconds: 0, renewable: false });
  }

  /** Reads the generator `ref` names for an object of `namespace`, once per `reads`; throws GeneratorError. */
  resolve(namespace: string, ref: GeneratorRef, reads?: GeneratorReads): Promise<ResolvedGenerator> {
    const key = `${ref.kind === 'ClusterGenerator' ? '' : namespace}/${String(ref.kind)}/${String(ref.name)}`;
    const known = reads?.get(key);
    if (known) return known;
    const read = this.read(namespace, ref);
    reads?.set(key, read);
    return read;
  }

  private async read(namespace: string, ref: GeneratorRef): Promise<ResolvedGenerator> {
    const problem = generatorRefProblem(ref);
    if (problem) throw new GeneratorError(problem);
    const cluster = ref.kind === 'ClusterGenerator';
    // Scoped mode serves no cluster-scoped kind (its Roles cannot read one): refused before any read.
    if (cluster && this.o.clusterKinds === false) {
      throw new GeneratorError(`ClusterGenerator "${ref.name}" is not served: this controller is scoped to its namespaces (--watch-namespaces) and serves no cluster-scoped kind; use a generator in the ExternalSecret's namespace`);
    }
    const plural = GENERATOR_RESOURCES[ref.kind as keyof typeof GENERATOR_RESOURCES];
    const path = resourcePath(resourceOf(GENERATORS_API_VERSION, plural, !cluster), cluster ? { name: ref.name } : { namespace, name: ref.name });
    const where = cluster ? `ClusterGenerator "${ref.name}"` : `${ref.kind} "${namespace}/${ref.name}"`;
    let obj: GeneratorObject;
    try {
      obj = await this.rest.get<GeneratorObject>(path);
    } catch (err) {
      if (isKubeStatus(err, 404)) throw new GeneratorError(`${where} not found (a generatorRef names a generator in the object's own namespace, or a ClusterGenerator)`);
      throw new GeneratorError(`cannot read ${where}: ${(err as Error).message}`);
    }
    let kind = ref.kind as GeneratorKind;
    let spec: unknown = obj.spec;
    if (cluster) {
      try {
        ({ kind, spec } = clusterGeneratorSpec(obj.spec));
      } catch (err) {
        throw new GeneratorError(`${where}: ${(err as Error).message}`);
      }
    }
    const controller = (spec as { controller?: unknown } | undefined)?.controller;
    return {
      kind, spec, what: cluster ? `${where} (${kind})` : where, id: `${ref.kind}:${ref.name}`, name: ref.name,
      controller: typeof controller === 'string' ? controller : '',
      uid: obj.metadata?.uid ?? '', generation: obj.metadata?.generation ?? 0,
    };
  }

  /** New values of `gen` for an object of `namespace`; throws GeneratorError or ProviderError.
   *  `track.admit` runs before a lease-bearing mint and may refuse it (the GeneratorState
   *  bounds); `track.record` records a lease the values came with
   *  (src/controller/generatorstate/state.ts): when it fails the lease is revoked at once and the
   *  run fails, so no credential goes untracked. */
  async run(namespace: string, gen: ResolvedGenerator, signal?: AbortSignal, track?: LeaseTracking): Promise<SecretMap> {
    try {
      return await runGenerator(gen.kind, gen.spec, this.calls(namespace, gen, signal, track));
    } catch (err) {
      if (err instanceof GeneratorError) throw new GeneratorError(`${gen.what}: ${err.message}`);
      throw err;
    }
  }

  /** The generator as a SecretStore of the referring namespace (see the header). */
  private store(namespace: string, gen: ResolvedGenerator, provider: Record<string, unknown>): AnySecretStore {
    return {
      apiVersion: 'external-secrets.io/v1', kind: 'SecretStore',
      // ':' is never in a store's name: no real store shares the client cache entry.
      metadata: { name: gen.id, namespace, uid: gen.uid, generation: gen.generation },
      spec: { provider },
    } as AnySecretStore;
  }

   
  private calls(namespace: string, gen: ResolvedGenerator, signal?: AbortSignal, track?: LeaseTracking): GeneratorCalls {
    return {
      ecr: async (spec) => {
        if (spec.scope !== undefined && spec.scope !== 'private' && spec.scope !== 'public') throw new GeneratorError(`spec.scope ${JSON.stringify(spec.scope)}: private or public`);
        if (typeof spec.region !== 'string' || spec.region === '') throw new GeneratorError('spec.region is required');
        const store = this.store(namespace, gen, { aws: { service: 'SecretsManager', region: spec.region, ...(spec.role ? { role: spec.role } : {}), ...(spec.auth ? { auth: spec.auth } : {}) } });
        return ecrAuthorizationToken(this.clients.providerContext(store, namespace), { ...spec, scope: spec.scope === 'public' ? 'public' : 'private' });
      },
      vault: (spec) => this.vault(namespace, gen, spec, { signal, track }),
    };
  }

  private async leasesOf(namespace: string, gen: ResolvedGenerator, spec: VaultDynamicSecretSpec): Promise<LeaseOperations> {
    const client = await this.clients.get(this.store(namespace, gen, { vault: spec.provider }), namespace);
    const leases = client.fresh.leases;
    if (!leases) throw new GeneratorError('the vault provider of this ESI build cannot mint dynamic secrets (no lease operations); VaultDynamicSecret is not served yet');
    return leases;
  }

  private async vault(namespace: string, gen: ResolvedGenerator, spec: VaultDynamicSecretSpec, o: { signal?: AbortSignal | undefined; track?: LeaseTracking | undefined }): Promise<SecretMap> {
    const { method, result } = checkVaultSpec(spec);
    // Raw copies every top-level member of any JSON answer into the Secret, Auth a token's
    // section: a tenant's own generator gets the engine's data only, unless the operator says.
    if (result !== 'data' && !isClusterGenerator(gen) && !this.o.allowRawResults) {
      throw new GeneratorError(`spec.resultType ${spec.resultType} is not allowed for a namespaced VaultDynamicSecret in this controller (only Data); its operator allows it with --allow-generator-raw-results (chart: controller.allowGeneratorRawResults), or use a ClusterGenerator`);
    }
    await o.track?.admit();
    const leases = await this.leasesOf(namespace, gen, spec);
    const params = spec.parameters;
    const out = await leases.generate({
      path: spec.path, method, result,
      ...(params && typeof params === 'object' && !Array.isArray(params) ? { parameters: params as Record<string, unknown> } : {}),
    }, { signal: o.signal });
    if (out.lease) {
      keepUntilExpiry(leases, out.lease);
      const lease = out.lease;
      if (o.track) {
        await o.track.record(lease).catch(async (err: unknown) => {
          await leases.revoke(lease).catch(() => undefined);
          throw err;
        });
      }
    }
    const data = asSecretMap(out.data);
    if (Object.keys(data).length === 0 && spec.allowEmptyResponse !== true) throw new GeneratorError(`${spec.path} returned no data (set spec.allowEmptyResponse: true to accept that)`);
    return data;
  }
}

const isClusterGenerator = (gen: ResolvedGenerator) => gen.id.startsWith('ClusterGenerator:');

/** What a GeneratorState keeps of the generator that produced it (ESO: a snapshot of the
 *  generator manifest, used to clean up even after the generator changed or was deleted):
 *  without `parameters` and `getParameters`, which a revocation never needs and which are the
 *  part a spec can make large. Throws GeneratorError when the rest is still over
 *  MAX_SNAPSHOT_BYTES: a GeneratorState copies at most that much, whatever the generator. */
export function generatorSnapshot(gen: ResolvedGenerator): Record<string, unknown> {
  const spec = gen.spec && typeof gen.spec === 'object' ? { ...(gen.spec as Record<string, unknown>) } : gen.spec;
  if (spec && typeof spec === 'object') {
    delete (spec as Record<string, unknown>).parameters;
    delete (spec as Record<string, unknown>).getParameters;
  }
  const snapshot = {
    apiVersion: GENERATORS_API_VERSION, kind: gen.kind,
    metadata: { name: gen.name, uid: gen.uid, generation: gen.generation },
    spec,
  };
  const size = Buffer.byteLength(JSON.stringify(snapshot));
  if (size > MAX_SNAPSHOT_BYTES) {
    throw new GeneratorError(`the spec is too large to keep in a GeneratorState (${Math.ceil(size / 1024)} KiB without spec.parameters, at most ${MAX_SNAPSHOT_BYTES / 1024} KiB); no credential is minted`);
  }
  return snapshot;
}
