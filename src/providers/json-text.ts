// JSON numbers kept as written, for every secret value a provider parses. ESO's Go code never round-trips a number
// through a float where a Secret can see it: gjson and json.RawMessage hand back the source text,
// Vault's client decodes with UseNumber. JavaScript's JSON.parse would turn
// `12345678901234567890` into 12345678901234567000, `1.50` into 1.5 and `1e3` into 1000.
//
// The one rule: a number whose text JavaScript prints back unchanged (`5432`, `-1`, `0.5`)
// is parsed as a plain number, so code that reads counters (Vault's lease_duration) is
// unaffected; any other number is a LosslessNumber holding its source text (lossless-json).
// Whatever serializes a parsed value must therefore use `stringifyJson` (or `numberText` for
// one leaf), never JSON.stringify, which would print a LosslessNumber as an object.
import { isLosslessNumber, LosslessNumber, parse, stringify } from 'lossless-json';

export { isLosslessNumber, LosslessNumber };

const keepText = (text: string): number | LosslessNumber => (String(Number(text)) === text ? Number(text) : new LosslessNumber(text));

/** JSON.parse with numbers kept as written (see above). A repeated key keeps its last value,
 *  as JSON.parse and Go's encoding/json do. Throws SyntaxError on invalid JSON (its message
 *  quotes the input: callers must not pass it on). */
export function parseJsonText(text: string): unknown {
  return parse(text, null, { parseNumber: keepText, onDuplicateKey: ({ newValue }) => newValue });
}

/** JSON.stringify (compact) that prints a kept number as its source text. */
export function stringifyJson(value: unknown): string {
  return stringify(value) ?? 'null';
}

/** Whether `v` is a JSON number as parsed here (a plain number or a kept text). */
export function isJsonNumber(v: unknown): v is number | LosslessNumber {
  return typeof v === 'number' || isLosslessNumber(v);
}

/** A JSON object as parsed here: not null, not an array, not a kept number. */
export function isJsonObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !isLosslessNumber(v);
}

/** The text of a parsed number: as written in the source. */
export function numberText(v: number | LosslessNumber): string {
  return typeof v === 'number' ? String(v) : v.value;
}

/** gjson's Result.String() of a number, which ESO writes for a property it selects: the
 *  literal when it is a plain integer (any length: `12345678901234567890` stays), otherwise
 *  Go's strconv.FormatFloat(n, 'f', -1, 64) — the shortest digits that read back as the same
 *  float64, never an exponent (`1e3` → `1000`, `1.50` → `1.5`, `1e-7` → `0.0000001`). */
export function gjsonNumberString(text: string): string {
  if (/^-?\d+$/.test(text)) return text;
  const n = Number(text);
  if (!Number.isFinite(n)) return n > 0 ? '+Inf' : '-Inf';
  if (Object.is(n, -0)) return '-0';
  // JavaScript's shortest round-trip digits are Go's; only the exponent form differs.
  const m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(n.toString());
  if (!m) return n.toString();
  const [, sign, lead, rest = '', exp] = m;
  const digits = lead! + rest;
  const point = 1 + Number(exp);
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}
