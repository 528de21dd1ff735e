// PushSecret `dataTo` (ESO's bulk push; docs/pushsecret.md "dataTo"): for each source Secret,
// the keys (after spec.template, then conversionStrategy) that match `match.regexp` and that
// no explicit `data` entry pushes become entries for the stores `storeRef` picks among the
// PushSecret's targets: one remote secret per key, named by `rewrite` (per-key mode), or one
// JSON object under `remoteKey` (bundle mode). Each entry is an ordinary data entry from here
// on: pushed, compared, recorded and deleted as `data` entries are.
import type { AnySecretStore, PushSecretData, PushSecretDataTo, PushSecretStoreRef } from '../../api/types.js';
import { applyRewrites } from '../../externalsecret/rewrite.js';
import { compileGoRegexp } from '../../providers/regexp.js';
import { emptySecretMap, type SecretMap } from '../../providers/types.js';
import { matchesLabelSelector } from '../../stores/access.js';
import { transformKeys } from '../../templating/go/index.js';
import { reverseUnicode } from './values.js';

/** At most this many keys of one source Secret are expanded: bounded work per reconcile. */
const MAX_DATA_TO_KEYS = 1000;

const enc = new TextEncoder();
const dec = new TextDecoder();

/** What is wrong with `spec.dataTo`, without I/O (each problem names the field). */
export function dataToProblems(dataTo: PushSecretDataTo[]): string[] {
  const problems: string[] = [];
  dataTo.forEach((d, i) => {
    const at = `spec.dataTo[${i}]`;
    const ref = d.storeRef;
    if (!ref || (!ref.name && !ref.labelSelector)) problems.push(`${at}.storeRef needs name or labelSelector: every bulk push names its store`);
    if (ref?.kind && ref.kind !== 'SecretStore' && ref.kind !== 'ClusterSecretStore') problems.push(`${at}.storeRef.kind "${String(ref.kind)}" must be SecretStore or ClusterSecretStore`);
    if (d.match?.regexp) {
      try {
        compileGoRegexp(d.match.regexp);
      } catch (err) {
        problems.push(`${at}.match.regexp: ${(err as Error).message}`);
      }
    }
    if (d.remoteKey !== undefined && !d.remoteKey) problems.push(`${at}.remoteKey is empty`);
    if (d.remoteKey && d.rewrite?.length) problems.push(`${at}: remoteKey and rewrite exclude each other (rewrite names each key's own remote secret; remoteKey bundles them into one)`);
    (d.rewrite ?? []).forEach((rw, j) => {
      const steps = [rw.regexp, rw.transform, (rw as { merge?: unknown }).merge].filter((x) => x !== undefined).length;
      if ((rw as { merge?: unknown }).merge !== undefined) problems.push(`${at}.rewrite[${j}].merge is not a PushSecret rewrite (one source: nothing to merge)`);
      else if (steps !== 1) problems.push(`${at}.rewrite[${j}] needs exactly one of regexp or transform`);
      if (rw.regexp) {
        try {
          compileGoRegexp(rw.regexp.source);
        } catch (err) {
          problems.push(`${at}.rewrite[${j}].regexp.source: ${(err as Error).message}`);
        }
      }
    });
    if (d.conversionStrategy && d.conversionStrategy !== 'None' && d.conversionStrategy !== 'ReverseUnicode') {
      problems.push(`${at}.conversionStrategy "${String(d.conversionStrategy)}" must be None or ReverseUnicode`);
    }
  });
  return problems;
}

/** Whether `storeRef` picks `store` (by name and kind, or by labels and kind). */
export function picks(ref: PushSecretStoreRef, store: AnySecretStore): boolean {
  if ((ref.kind ?? 'SecretStore') !== (store.kind ?? 'SecretStore')) return false;
  if (ref.name) return ref.name === store.metadata.name;
  return !!ref.labelSelector && matchesLabelSelector(ref.labelSelector, store.metadata.labels ?? {});
}

/** The targets each dataTo entry pushes to, or the entries whose storeRef picks none of
 *  them (ESO: a storeRef outside secretStoreRefs is a validation error). */
export function dataToStores(dataTo: PushSecretDataTo[], targets: AnySecretStore[]): { stores: AnySecretStore[][]; problems: string[] } {
  const problems: string[] = [];
  const stores = dataTo.map((d, i) => {
    const picked = d.storeRef ? targets.filter((s) => picks(d.storeRef!, s)) : [];
    if (!picked.length) problems.push(`spec.dataTo[${i}].storeRef picks none of the stores spec.secretStoreRefs names (served by this controller)`);
    return picked;
  });
  return { stores, problems };
}

export interface Expanded {
  /** Index in spec.dataTo. */
  index: number;
  data: PushSecretData;
  value: Uint8Array;
}

/** One source Secret's dataTo entries. `explicit`: source keys pushed by `data` entries
 *  (they win). Throws an Error naming the field (never a value) on a key collision. */
export async function expandDataTo(dataTo: PushSecretDataTo[], values: Record<string, Uint8Array>, explicit: Set<string>, source: string): Promise<Expanded[]> {
  const keys = Object.keys(values).sort();
  if (keys.length > MAX_DATA_TO_KEYS) throw new Error(`Secret "${source}" has ${keys.length} keys; spec.dataTo expands at most ${MAX_DATA_TO_KEYS}`);
  const out: Expanded[] = [];
  for (const [index, d] of dataTo.entries()) {
    const at = `spec.dataTo[${index}]`;
    const reverse = d.conversionStrategy === 'ReverseUnicode';
    const re = d.match?.regexp ? compileGoRegexp(d.match.regexp) : undefined;
    // Converted name → source key; explicit data entries are compared on the source key (ESO).
    const picked = new Map<string, string>();
    for (const k of keys) {
      const name = reverse ? reverseUnicode(k) : k;
      if (explicit.has(k) || (re && !re.test(name))) continue;
      picked.set(name, k);
    }
    const meta = d.metadata !== undefined && d.metadata !== null ? { metadata: d.metadata } : {};
    if (d.remoteKey) {
      if (!picked.size) continue;
      const bundle: Record<string, string> = {};
      for (const [name, k] of picked) bundle[name] = dec.decode(values[k]);
      out.push({ index, data: { match: { remoteRef: { remoteKey: d.remoteKey } }, ...meta }, value: enc.encode(JSON.stringify(bundle)) });
      continue;
    }
    const remote = await remoteNames(d, [...picked.keys()], `${at}.rewrite`);
    for (const [name, k] of picked) {
      out.push({ index, data: { match: { secretKey: k, remoteRef: { remoteKey: remote.get(name)! } }, ...meta }, value: values[k]! });
    }
  }
  return out;
}

/** Each converted key's remote name after `rewrite` (the one rewrite implementation of
 *  dataFrom, src/externalsecret/rewrite.ts, applied to a map whose values are the keys). */
async function remoteNames(d: PushSecretDataTo, names: string[], where: string): Promise<Map<string, string>> {
  if (!d.rewrite?.length) return new Map(names.map((n) => [n, n]));
  const map: SecretMap = emptySecretMap();
  for (const n of names) map[n] = enc.encode(n);
  const rewritten = await applyRewrites(d.rewrite, map, (name, template, m) => transformKeys(`PushSecret ${where} ${name}`, template, m));
  const out = new Map<string, string>();
  for (const [to, from] of Object.entries(rewritten)) out.set(dec.decode(from), to);
  if (out.size !== names.length) {
    const lost = names.filter((n) => !out.has(n)).sort();
    throw new Error(`${where} gives several keys the same remote name (${lost.slice(0, 5).map((n) => `"${n}"`).join(', ')}${lost.length > 5 ? ', …' : ''} collide with others); each remote secret can be written once`);
  }
  const empty = [...out].filter(([, to]) => !to).map(([n]) => n);
  if (empty.length) throw new Error(`${where} gives key "${empty[0]}" an empty remote name`);
  return out;
}
