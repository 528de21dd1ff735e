// Provider-independent ExternalSecret semantics (ESO v1): decoding strategies, JSON
// `property` extraction, key conversion, `dataFrom.rewrite`, and the resolution of one
// ExternalSecret's `data` + `dataFrom` into a key → bytes map. Providers and the agent
// share this so every store behaves the same. No function here ever puts a value in a
// message: errors name the ExternalSecret, the entry and the remote key only.
import type { AgentSecret } from '../agent-config.js';
import type {
  ConversionStrategy,
  DecodingStrategy,
  ExternalSecretData,
  ExternalSecretDataFromRemoteRef,
  ExternalSecretDataRemoteRef,
  ExternalSecretRewrite,
} from '../api/types.js';
import { ProviderError, type FindRef, type RemoteRef, type SecretMap, type SecretsClient } from './types.js';
import { transformKeys } from '../templating/go/index.js';

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

/** A key → bytes map without a prototype, so a remote key named `__proto__` is just a key. */
export function emptySecretMap(): SecretMap {
  return Object.create(null) as SecretMap;
}

/** Thrown by the pure helpers below; the caller adds which secret/entry it was. */
export class RemoteRefError extends Error {
  override name = 'RemoteRefError';
}

// ---------------------------------------------------------------- decoding

const B64_STD = /^[A-Za-z0-9+/]*={0,2}$/;
const B64_URL = /^[A-Za-z0-9_-]*={0,2}$/;

/** Go's base64 decoders (which ESO uses) require padding and one alphabet; Node's
 *  decoder accepts anything, so validate first to keep `Auto` deterministic. */
function strictBase64(value: Uint8Array, alphabet: RegExp, what: string): Uint8Array {
  const text = Buffer.from(value).toString('latin1').replace(/[\r\n]/g, '');
  if (text.length % 4 !== 0 || !alphabet.test(text)) {
    throw new RemoteRefError(`value is not valid ${what} (decodingStrategy)`);
  }
  return new Uint8Array(Buffer.from(text, alphabet === B64_STD ? 'base64' : 'base64url'));
}

/** ESO decoding: `None` (default) keeps bytes; `Auto` tries Base64, then Base64URL,
 *  then keeps the value as is. */
export function decodeValue(strategy: DecodingStrategy | undefined, value: Uint8Array): Uint8Array {
  switch (strategy ?? 'None') {
    case 'None':
      return value;
    case 'Base64':
      return strictBase64(value, B64_STD, 'base64');
    case 'Base64URL':
      return strictBase64(value, B64_URL, 'base64url');
    case 'Auto':
      for (const [alphabet, what] of [[B64_STD, 'base64'], [B64_URL, 'base64url']] as const) {
        try {
          return strictBase64(value, alphabet, what);
        } catch {
          // Not this encoding: try the next one, then fall back to the raw value.
        }
      }
      return value;
    default:
      throw new RemoteRefError(`unknown decodingStrategy "${String(strategy)}"`);
  }
}

export function decodeMap(strategy: DecodingStrategy | undefined, map: SecretMap): SecretMap {
  const out = emptySecretMap();
  for (const [k, v] of Object.entries(map)) {
    try {
      out[k] = decodeValue(strategy, v);
    } catch (err) {
      throw new RemoteRefError(`key "${k}": ${(err as Error).message}`);
    }
  }
  return out;
}

// ---------------------------------------------------------------- JSON properties

function parseJson(value: Uint8Array): unknown {
  try {
    return JSON.parse(Buffer.from(value).toString('utf8')) as unknown;
  } catch {
    // JSON.parse messages quote the input: never propagate them.
    throw new RemoteRefError('value is not JSON');
  }
}

/** Splits a gjson-style dotted path; `\.` escapes a dot inside a name. */
export function splitPath(path: string): string[] {
  const parts: string[] = [];
  let cur = '';
  for (let i = 0; i < path.length; i++) {
    const c = path[i];
    if (c === '\\' && path[i + 1] === '.') {
      cur += '.';
      i++;
    } else if (c === '.') {
      parts.push(cur);
      cur = '';
    } else {
      cur += c;
    }
  }
  parts.push(cur);
  return parts;
}

function step(node: unknown, name: string): unknown {
  if (Array.isArray(node)) return /^\d+$/.test(name) ? node[Number(name)] : undefined;
  if (node !== null && typeof node === 'object' && Object.prototype.hasOwnProperty.call(node, name)) {
    return (node as Record<string, unknown>)[name];
  }
  return undefined;
}

/** How ESO providers turn a JSON node into bytes: strings raw, `null` empty,
 *  everything else as compact JSON. */
export function jsonNodeToBytes(node: unknown): Uint8Array {
  if (typeof node === 'string') return new TextEncoder().encode(node);
  if (node === null) return new Uint8Array();
  return new TextEncoder().encode(JSON.stringify(node));
}

/** The JSON node at `property` of a structured value, or undefined. A top-level key
 *  equal to the whole property wins over the dotted path (as ESO's providers do). */
export function findProperty(value: Uint8Array, property: string): unknown {
  const root = parseJson(value);
  const direct = step(root, property);
  if (direct !== undefined) return direct;
  let node: unknown = root;
  for (const part of splitPath(property)) {
    node = step(node, part);
    if (node === undefined) return undefined;
  }
  return node;
}

/** `remoteRef.property`: the field of a JSON value as bytes; throws when absent. */
export function extractProperty(value: Uint8Array, property: string): Uint8Array {
  const node = findProperty(value, property);
  if (node === undefined) throw new RemoteRefError(`property "${property}" not found`);
  return jsonNodeToBytes(node);
}

/** `dataFrom.extract`: a JSON object value (or its `property`) as a key → bytes map. */
export function jsonToSecretMap(value: Uint8Array, property?: string): SecretMap {
  const node = property ? findProperty(value, property) : parseJson(value);
  if (node === null || typeof node !== 'object' || Array.isArray(node)) {
    throw new RemoteRefError(property ? `property "${property}" is not a JSON object` : 'value is not a JSON object');
  }
  const out = emptySecretMap();
  for (const [k, v] of Object.entries(node)) out[k] = jsonNodeToBytes(v);
  return out;
}

// ---------------------------------------------------------------- keys

const KEY_CHAR = /[\p{L}\p{N}._-]/u;

/** ESO key conversion: characters other than letters, digits, `-`, `.`, `_` become `_`
 *  (`Default`) or `_U<hex4>_` (`Unicode`). */
export function convertKey(strategy: ConversionStrategy | undefined, key: string): string {
  let out = '';
  for (const ch of key) {
    if (KEY_CHAR.test(ch)) out += ch;
    else if (strategy === 'Unicode') out += `_U${ch.codePointAt(0)!.toString(16).padStart(4, '0')}_`;
    else out += '_';
  }
  return out;
}

export function convertKeys(strategy: ConversionStrategy | undefined, map: SecretMap): SecretMap {
  const out = emptySecretMap();
  for (const [k, v] of Object.entries(map)) out[convertKey(strategy, k)] = v;
  return out;
}

/** A valid Secret data key (and therefore a valid file name for the agent). */
export function isValidSecretKey(key: string): boolean {
  return key.length > 0 && key.length <= 253 && /^[-._a-zA-Z0-9]+$/.test(key) && key !== '.' && key !== '..';
}

// ---------------------------------------------------------------- rewrite

/** Compiles an RE2 (Go) pattern for JavaScript: `(?P<name>` is Go's named group. */
export function compileGoRegexp(source: string): RegExp {
  try {
    return new RegExp(source.replace(/\(\?P</g, '(?<'), 'gu');
  } catch (err) {
    throw new RemoteRefError(`invalid rewrite regexp "${source}": ${(err as Error).message}`);
  }
}

/** Go's Regexp.Expand: `$1`, `${1}`, `$name`, `${name}`; `$$` is a dollar; a name
 *  is the longest run of letters, digits and `_`; unknown groups expand to nothing. */
export function expandGoTemplate(target: string, groups: (string | undefined)[], named: Record<string, string | undefined>): string {
  return target.replace(/\$(\$|\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))/g, (_m, all: string, braced?: string, bare?: string) => {
    if (all === '$') return '$';
    const name = (braced ?? bare)!;
    if (/^\d+$/.test(name)) return groups[Number(name)] ?? '';
    return named[name] ?? '';
  });
}

function rewriteKey(re: RegExp, target: string, key: string): string {
  return key.replace(re, (...args: unknown[]) => {
    const last = args[args.length - 1];
    const hasNamed = typeof last === 'object' && last !== null;
    const named = (hasNamed ? last : {}) as Record<string, string | undefined>;
    const groups = args.slice(0, hasNamed ? -3 : -2) as (string | undefined)[];
    return expandGoTemplate(target, groups, named);
  });
}

/** `dataFrom[].rewrite`: each step rewrites every key, in order. */
export function applyRewrites(rewrites: ExternalSecretRewrite[], map: SecretMap): SecretMap {
  let cur = map;
  for (const [i, rw] of rewrites.entries()) {
    if (rw.transform) {
      // A Go template (ESO engine v2) rendering each key, bound to `.value`.
      cur = transformKeys(`rewrite[${i}].transform`, rw.transform.template, cur);
      continue;
    }
    if (!rw.regexp) throw new RemoteRefError(`rewrite[${i}] has no regexp`);
    const re = compileGoRegexp(rw.regexp.source);
    const next = emptySecretMap();
    for (const [k, v] of Object.entries(cur)) next[rewriteKey(re, rw.regexp.target, k)] = v;
    cur = next;
  }
  return cur;
}

// ---------------------------------------------------------------- resolution

export function toRemoteRef(ref: ExternalSecretDataRemoteRef): RemoteRef {
  const out: RemoteRef = { key: ref.key };
  if (ref.property) out.property = ref.property;
  if (ref.version) out.version = ref.version;
  if (ref.metadataPolicy) out.metadataPolicy = ref.metadataPolicy;
  return out;
}

function describeData(i: number, d: ExternalSecretData): string {
  return `data[${i}] (secretKey "${d.secretKey}", remote key "${d.remoteRef?.key}")`;
}

function describeFrom(i: number, f: ExternalSecretDataFromRemoteRef): string {
  if (f.extract) return `dataFrom[${i}].extract (remote key "${f.extract.key}")`;
  if (f.find) return `dataFrom[${i}].find`;
  return `dataFrom[${i}]`;
}

async function fetchData(client: SecretsClient, d: ExternalSecretData): Promise<Uint8Array> {
  if (d.sourceRef) throw new RemoteRefError('sourceRef is not supported by the agent (one store per ExternalSecret)');
  if (!isValidSecretKey(d.secretKey)) throw new RemoteRefError('secretKey is not a valid key ([-._a-zA-Z0-9]+)');
  return decodeValue(d.remoteRef.decodingStrategy, await client.getSecret(toRemoteRef(d.remoteRef)));
}

function checkKeys(map: SecretMap): SecretMap {
  for (const k of Object.keys(map)) {
    if (!isValidSecretKey(k)) throw new RemoteRefError(`resulting key "${k}" is not a valid key ([-._a-zA-Z0-9]+)`);
  }
  return map;
}

async function fetchFrom(client: SecretsClient, f: ExternalSecretDataFromRemoteRef): Promise<SecretMap> {
  if (f.sourceRef) throw new RemoteRefError('sourceRef (generators, store overrides) is not supported by the agent');
  let map: SecretMap;
  let conversion: ConversionStrategy | undefined;
  let decoding: DecodingStrategy | undefined;
  if (f.extract) {
    map = await client.getSecretMap(toRemoteRef(f.extract));
    ({ conversionStrategy: conversion, decodingStrategy: decoding } = f.extract);
  } else if (f.find) {
    const find: FindRef = {};
    if (f.find.path) find.path = f.find.path;
    if (f.find.name) find.name = f.find.name;
    if (f.find.tags) find.tags = f.find.tags;
    map = await client.getAllSecrets(find);
    ({ conversionStrategy: conversion, decodingStrategy: decoding } = f.find);
  } else {
    throw new RemoteRefError('needs one of extract or find');
  }
  // As ESO: an explicit rewrite replaces the default key conversion.
  map = f.rewrite?.length ? applyRewrites(f.rewrite, map) : convertKeys(conversion, map);
  return decodeMap(decoding, checkKeys(map));
}

function wrap(secret: string, entry: string, err: unknown): ExternalSecretError {
  const cause = err instanceof Error ? err.message : String(err);
  const code = err instanceof ProviderError ? ` [${err.code}]` : '';
  return new ExternalSecretError(secret, entry, `${cause}${code}`, { cause: err });
}

/** Resolves `dataFrom` then `data` (ESO's order: later entries override earlier ones,
 *  so explicit `data` keys win) into key → bytes. Remote reads run concurrently. */
export async function fetchExternalSecret(client: SecretsClient, secret: AgentSecret): Promise<Record<string, Uint8Array>> {
  const from = (secret.dataFrom ?? []).map((f, i) =>
    fetchFrom(client, f).catch((err: unknown) => Promise.reject(wrap(secret.name, describeFrom(i, f), err))),
  );
  const data = (secret.data ?? []).map((d, i) =>
    fetchData(client, d).catch((err: unknown) => Promise.reject(wrap(secret.name, describeData(i, d), err))),
  );
  // Fetch concurrently, but report the first failure in declaration order (dataFrom, then
  // data): the same broken ExternalSecret always gives the same error line.
  const settled = await Promise.allSettled([...from, ...data]);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  const results = settled.map((s) => (s as PromiseFulfilledResult<unknown>).value);
  const fromMaps = results.slice(0, from.length) as SecretMap[];
  const values = results.slice(from.length) as Uint8Array[];
  const out = emptySecretMap();
  for (const m of fromMaps) Object.assign(out, m);
  (secret.data ?? []).forEach((d, i) => (out[d.secretKey] = values[i]!));
  return out;
}

/** A helper's value-free RemoteRefError as the store's ProviderError ("not found" →
 *  NotFound); anything else is rethrown unchanged. */
export function asProviderError(err: unknown, storeId: string, key: string): never {
  if (err instanceof RemoteRefError) {
    throw new ProviderError(/not found/.test(err.message) ? 'NotFound' : 'Unknown', storeId, err.message, key);
  }
  throw err;
}

/** The `property` of a fetched value (the whole value when there is none). */
export function selectProperty(storeId: string, key: string, value: Uint8Array, property?: string): Uint8Array {
  if (!property) return value;
  try {
    return extractProperty(value, property);
  } catch (err) {
    return asProviderError(err, storeId, key);
  }
}

/** A fetched value read as a JSON map (`dataFrom.extract`), narrowed by `property`. */
export function valueAsMap(storeId: string, key: string, value: Uint8Array, property?: string): SecretMap {
  try {
    return jsonToSecretMap(value, property);
  } catch (err) {
    return asProviderError(err, storeId, key);
  }
}
