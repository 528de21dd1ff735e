// One ExternalSecret's `data` + `dataFrom` resolved against a store client into a
// key → bytes map, with ESO v1 semantics (decoding, key conversion, rewrites, ordering).
// Shared by the two consumers of the provider layer: the agent (injector/fetch.ts) and
// the reconciler (src/controller/). It takes the spec's shape, not either consumer's
// configuration type, so neither depends on the other.
// No message here ever holds a value: errors name the ExternalSecret, the entry and the
// remote key only.
import type {
  ConversionStrategy,
  DecodingStrategy,
  ExternalSecretData,
  ExternalSecretDataFromRemoteRef,
  ExternalSecretDataRemoteRef,
  GeneratorRef,
  NullBytePolicy,
  SecretStoreRef,
} from '../api/types.js';
import { RemoteRefError } from '../providers/errors.js';
import { emptySecretMap, ProviderError, type CallOptions, type FindRef, type RemoteRef, type SecretMap, type SecretsClient } from '../providers/types.js';
import { decodeMap, decodeValue } from './decode.js';
import { convertKeys } from '../providers/key-conversion.js';
import { isValidSecretKey } from './keys.js';
import { applyRewrites, type KeyTransform } from './rewrite.js';

/** Provider call options, plus the renderer of `rewrite[].transform` templates. */
export interface FetchOptions extends CallOptions {
  transformKeys?: KeyTransform;
  /** Set (by the reconciler, for deletionPolicy Delete and Merge): an entry whose remote
   *  secret is gone is skipped, and told here, instead of failing the whole ExternalSecret.
   *  ESO does the same (its MissingProviderSecret event); the caller decides what an empty
   *  result means (src/controller/externalsecret/reconcile.ts). */
  onMissing?: (entry: string) => void;
  /** Runs the generator a `dataFrom[].sourceRef.generatorRef` names, `index` being the entry's
   *  (the reconciler: src/controller/generatorstate/generators.ts); without it such an entry is refused. */
  generate?: (ref: GeneratorRef, index: number) => Promise<SecretMap>;
  /** The client of the store an entry's `sourceRef.storeRef` names (the reconciler);
   *  without it such an entry is refused (the agent reads one store). */
  clientFor?: (ref: SecretStoreRef) => SecretsClient;
}

/** The client an entry reads from: its own store's, or the ExternalSecret's. */
function clientOf(client: SecretsClient, ref: SecretStoreRef | undefined, opts: FetchOptions): SecretsClient {
  if (!ref) return client;
  if (!opts.clientFor) throw new RemoteRefError('sourceRef.storeRef is served by ESI\'s reconciler only (the agent reads one store per ExternalSecret)', 'Unsupported');
  return opts.clientFor(ref);
}

/** Whether `err` says the remote secret (or the property asked for) does not exist. */
function remoteSecretMissing(err: unknown): boolean {
  return (err instanceof ProviderError || err instanceof RemoteRefError) && err.code === 'NotFound';
}

/** What is fetched: an ExternalSecret's name and the `data` / `dataFrom` of its spec. */
export interface ExternalSecretSource {
  name: string;
  data?: ExternalSecretData[];
  dataFrom?: ExternalSecretDataFromRemoteRef[];
}

/** A value-free error about one entry of an ExternalSecret. */
export class ExternalSecretError extends Error {
  constructor(
    readonly secret: string,
    readonly entry: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`ExternalSecret "${secret}" ${entry}: ${message}`, options);
    this.name = 'ExternalSecretError';
  }
}

export function toRemoteRef(ref: ExternalSecretDataRemoteRef): RemoteRef {
  const out: RemoteRef = { key: ref.key };
  if (ref.property) out.property = ref.property;
  if (ref.version) out.version = ref.version;
  if (ref.metadataPolicy) out.metadataPolicy = ref.metadataPolicy;
  return out;
}

/** `, SecretStore "name"` when the entry names its own store, else nothing. */
function ownStore(ref: SecretStoreRef | undefined): string {
  return ref?.name ? `, ${ref.kind === 'ClusterSecretStore' ? 'ClusterSecretStore' : 'SecretStore'} "${ref.name}"` : '';
}

export function describeData(i: number, d: ExternalSecretData): string {
  return `data[${i}] (secretKey "${d.secretKey}", remote key "${d.remoteRef?.key}"${ownStore(d.sourceRef?.storeRef)})`;
}

export function describeFrom(i: number, f: ExternalSecretDataFromRemoteRef): string {
  const store = f.sourceRef?.storeRef;
  if (f.extract) return `dataFrom[${i}].extract (remote key "${f.extract.key}"${ownStore(store)})`;
  if (f.find) return `dataFrom[${i}].find${store?.name ? ` (${ownStore(store).slice(2)})` : ''}`;
  const gen = f.sourceRef?.generatorRef;
  if (gen) return `dataFrom[${i}].sourceRef.generatorRef (${String(gen.kind)} "${String(gen.name)}")`;
  return `dataFrom[${i}]`;
}

async function fetchData(defaultClient: SecretsClient, d: ExternalSecretData, opts: FetchOptions): Promise<Uint8Array> {
  if (d.sourceRef && !d.sourceRef.storeRef) throw new RemoteRefError('sourceRef must set storeRef', 'Unsupported');
  const client = clientOf(defaultClient, d.sourceRef?.storeRef, opts);
  if (!isValidSecretKey(d.secretKey)) throw new RemoteRefError('secretKey is not a valid key ([-._a-zA-Z0-9]+)', 'InvalidSpec');
  const value = decodeValue(d.remoteRef.decodingStrategy, await client.getSecret(toRemoteRef(d.remoteRef), opts));
  return checkNulBytes(d.remoteRef.nullBytePolicy, { [d.secretKey]: value })[d.secretKey]!;
}

/** `nullBytePolicy: Fail` (ESO): a fetched value (after decoding) holding a NUL byte is an
 *  error naming its key, the first in sorted order. */
function checkNulBytes(policy: NullBytePolicy | undefined, map: SecretMap): SecretMap {
  if (policy !== 'Fail') return map;
  const bad = Object.keys(map).sort().find((k) => map[k]!.includes(0));
  if (bad !== undefined) throw new RemoteRefError(`fetched secret value for key "${bad}" contains null bytes (nullBytePolicy Fail)`, 'InvalidSpec');
  return map;
}

function checkKeys(map: SecretMap): SecretMap {
  for (const k of Object.keys(map)) {
    if (!isValidSecretKey(k)) throw new RemoteRefError(`resulting key "${k}" is not a valid key ([-._a-zA-Z0-9]+)`, 'InvalidSpec');
  }
  return map;
}

/** A generator's values (ESO: new values at every call), rewritten like fetched keys. */
async function generateFrom(f: ExternalSecretDataFromRemoteRef, opts: FetchOptions, index: number): Promise<SecretMap> {
  const ref = f.sourceRef?.generatorRef;
  if (!ref) throw new RemoteRefError('sourceRef must set storeRef or generatorRef', 'InvalidSpec');
  if (!opts.generate) throw new RemoteRefError('sourceRef.generatorRef is served by ESI\'s reconciler only', 'Unsupported');
  const map = await opts.generate(ref, index);
  return checkKeys(f.rewrite?.length ? await applyRewrites(f.rewrite, map, opts.transformKeys) : map);
}

 
async function fetchFrom(defaultClient: SecretsClient, f: ExternalSecretDataFromRemoteRef, opts: FetchOptions, index: number): Promise<SecretMap> {
  if (f.sourceRef && !f.sourceRef.storeRef) return generateFrom(f, opts, index);
  const client = clientOf(defaultClient, f.sourceRef?.storeRef, opts);
  let map: SecretMap;
  let conversion: ConversionStrategy | undefined;
  let decoding: DecodingStrategy | undefined;
  let nul: NullBytePolicy | undefined;
  if (f.extract) {
    map = await client.getSecretMap(toRemoteRef(f.extract), opts);
    ({ conversionStrategy: conversion, decodingStrategy: decoding, nullBytePolicy: nul } = f.extract);
  } else if (f.find) {
    const find: FindRef = {};
    if (f.find.path) find.path = f.find.path;
    if (f.find.name) find.name = f.find.name;
    if (f.find.tags) find.tags = f.find.tags;
    // Some providers convert found keys themselves, before any rewrite (as in ESO); absent
    // means the CRD's default, Default, as convertKeys reads it below.
    find.conversionStrategy = f.find.conversionStrategy ?? 'Default';
    map = await client.getAllSecrets(find, opts);
    ({ conversionStrategy: conversion, decodingStrategy: decoding, nullBytePolicy: nul } = f.find);
  } else {
    throw new RemoteRefError('needs one of extract or find', 'InvalidSpec');
  }
  // As ESO: an explicit rewrite replaces the default key conversion.
  map = f.rewrite?.length ? await applyRewrites(f.rewrite, map, opts.transformKeys) : convertKeys(conversion, map);
  return checkNulBytes(nul, decodeMap(decoding, checkKeys(map)));
}

function wrap(secret: string, entry: string, err: unknown): ExternalSecretError {
  const cause = err instanceof Error ? err.message : String(err);
  const code = err instanceof ProviderError ? ` [${err.code}]` : '';
  return new ExternalSecretError(secret, entry, `${cause}${code}`, { cause: err });
}

/** Resolves `dataFrom` then `data` (ESO's order: later entries override earlier ones,
 *  so explicit `data` keys win) into key → bytes. Remote reads run concurrently; the
 *  caller's `signal` (its deadline) is passed to every provider call. */
export async function fetchExternalSecret(client: SecretsClient, secret: ExternalSecretSource, opts: FetchOptions = {}): Promise<SecretMap> {
  const failed = (entry: string) => (err: unknown) => {
    if (!opts.onMissing || !remoteSecretMissing(err)) return Promise.reject(wrap(secret.name, entry, err));
    opts.onMissing(entry);
    return undefined;
  };
  const from = (secret.dataFrom ?? []).map((f, i) => fetchFrom(client, f, opts, i).catch(failed(describeFrom(i, f))));
  const data = (secret.data ?? []).map((d, i) => fetchData(client, d, opts).catch(failed(describeData(i, d))));
  // Fetch concurrently, but report the first failure in declaration order (dataFrom, then
  // data): the same broken ExternalSecret always gives the same error line.
  const settled = await Promise.allSettled<SecretMap | Uint8Array | undefined>([...from, ...data]);
  const rejected = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (rejected) throw rejected.reason;
  const results = settled.map((s) => (s as PromiseFulfilledResult<SecretMap | Uint8Array | undefined>).value);
  const fromMaps = results.slice(0, from.length) as (SecretMap | undefined)[];
  const values = results.slice(from.length) as (Uint8Array | undefined)[];
  const out = emptySecretMap();
  for (const m of fromMaps) if (m) Object.assign(out, m);
  (secret.data ?? []).forEach((d, i) => values[i] !== undefined && (out[d.secretKey] = values[i]));
  return out;
}
