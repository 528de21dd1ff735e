// The bytes a PushSecret pushes: the source Secret's data, rendered through spec.template
// when there is one (the ExternalSecret templating, handlebars opt-in), then one value per
// data entry: a key (`match.secretKey`) or the whole Secret as one JSON object. Errors name
// the Secret and key, never a value.
import type { V1Secret } from '@kubernetes/client-node';
import type { PushSecret, PushSecretData } from '../../api/types.js';
import { applyExternalSecretTemplate, type TemplateEngine } from '../../templating/index.js';
import type { PushSpec } from './spec.js';

const enc = new TextEncoder();
const dec = new TextDecoder();

/** ESO's key encoding of ExternalSecrets (`_U002e_` for `.`), reversed. */
export function reverseUnicode(key: string): string {
  return key.replace(/_U([0-9A-Fa-f]{4,6})_/g, (all, hex: string) => {
    const cp = Number.parseInt(hex, 16);
    return cp <= 0x10ffff ? String.fromCodePoint(cp) : all;
  });
}

/** The source Secret's values after spec.template (a map without prototype). */
export function sourceValues(ps: PushSecret, spec: PushSpec, secret: V1Secret, engine: TemplateEngine): Record<string, Uint8Array> {
  const data = Object.create(null) as Record<string, Uint8Array>;
  for (const [k, v] of Object.entries(secret.data ?? {})) data[k] = new Uint8Array(Buffer.from(v, 'base64'));
  if (spec.engine === 'none') return data;
  return applyExternalSecretTemplate(engine, { name: ps.metadata.name!, template: ps.spec.template, choice: spec.engine }, data);
}

export class MissingKey extends Error {}

/** The value of one entry; throws MissingKey naming the key. */
export function entryValue(d: PushSecretData, values: Record<string, Uint8Array>, secretName: string, index: number): Uint8Array {
  const reverse = d.conversionStrategy === 'ReverseUnicode';
  const key = d.match.secretKey;
  if (key === undefined) {
    const whole: Record<string, string> = {};
    for (const k of Object.keys(values).sort()) whole[reverse ? reverseUnicode(k) : k] = dec.decode(values[k]);
    return enc.encode(JSON.stringify(whole));
  }
  const found = Object.keys(values).find((k) => k === key || (reverse && reverseUnicode(k) === key));
  if (found === undefined) throw new MissingKey(`spec.data[${index}].match.secretKey "${key}" is not a key of Secret "${secretName}"`);
  return values[found]!;
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') return Object.fromEntries(Object.keys(v).sort().map((k) => [k, canonical((v as Record<string, unknown>)[k])]));
  return v;
}

/** JSON with object keys sorted: equal for equal data whatever the key order. */
export function canonicalJson(v: unknown): string {
  return JSON.stringify(canonical(v));
}

function asJsonObject(b: Uint8Array): string | undefined {
  if (b[0] !== 0x7b) return undefined; // `{`
  try {
    return JSON.stringify(canonical(JSON.parse(dec.decode(b))));
  } catch {
    return undefined;
  }
}

/** Whether the remote value already is what would be pushed: same bytes, or the same
 *  JSON object (stores re-serialize maps: Vault KV, the whole-Secret pushes). */
export function sameValue(remote: Uint8Array, wanted: Uint8Array): boolean {
  if (Buffer.compare(Buffer.from(remote), Buffer.from(wanted)) === 0) return true;
  const a = asJsonObject(wanted);
  return a !== undefined && a === asJsonObject(remote);
}
