// Values out of error text. A template error may quote the data it failed on, and not only
// as the value itself: `{{ .password | b64enc | int }}` quotes the base64 of it, `toJson`
// the JSON-escaped form, `urlquery` the URL-encoded one. Error text reaches status, Events and
// logs (docs/decisions/0007-no-values-in-errors.md), so every value is removed in the
// encodings templates commonly apply before failing. Messages worded after Go's have
// the plain value redacted already (src/templating/go/text.ts); this is the second, wider net.

/** Values shorter than this are not redacted: a one- or two-character value would blank out
 *  half of any message and say little about the value. */
const MIN_LENGTH = 3;
export const REDACTED = '<redacted>';

function forms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const b64 = bytes.toString('base64');
  const out = [
    value,
    b64, b64.replace(/=+$/, ''), bytes.toString('base64url'),
    bytes.toString('hex'), bytes.toString('hex').toUpperCase(),
    encodeURIComponent(value), encodeURIComponent(value).replace(/%20/g, '+'),
    JSON.stringify(value).slice(1, -1),
    // Case-folded (upper, lower): only for values long enough not to blank out common words.
    ...(value.length >= 6 ? [value.toUpperCase(), value.toLowerCase()] : []),
  ];
  return out.filter((f) => f.length >= MIN_LENGTH);
}

/** `text` with every value (and its base64, base64url, hex, URL, JSON-escaped and case-folded
 *  forms) replaced by `<redacted>`; longest first, so a value containing another is removed
 *  whole. */
export function redactValues(text: string, values: Iterable<string | Uint8Array>): string {
  const all = new Set<string>();
  for (const v of values) {
    const s = typeof v === 'string' ? v : Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('utf8');
    if (s.length >= MIN_LENGTH) for (const f of forms(s)) all.add(f);
  }
  let out = text;
  for (const f of [...all].sort((a, b) => b.length - a.length)) if (out.includes(f)) out = out.split(f).join(REDACTED);
  return out;
}
