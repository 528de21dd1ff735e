// ESO's toYaml (src/templating/go/engine/yaml.go: sigs.k8s.io/yaml v1.4.0, i.e. JSON, read
// back by go-yaml v2, written by go-yaml v2 in block style, trailing newline trimmed) for the
// values whose YAML this engine can show exact: strings of letters, digits and `_ . / -`
// (values also with inner spaces, on lines go-yaml does not fold; no characters that need
// go-yaml's quoting rules), integers, bools, null, lists and maps of them. Anything else declines: the Go engine
// writes it. Held to Go's output by test/src/templating/gotext/yaml.test.ts.
import { alloc } from './alloc.js';
import { Unsupported } from './errors.js';
import { entry, intOf, isInt, isNilList, type Value } from './values.js';

/** go-yaml v2's resolve table words (bools and null), which a plain scalar must not be. */
const RESERVED = new Set(['y', 'yes', 'n', 'no', 'true', 'false', 'on', 'off', 'null']);

function decline(): never {
  throw new Unsupported('toYaml of a value whose YAML quoting the TypeScript engine does not write');
}

/** A string as go-yaml v2 writes it: plain when it reads back as a string, else
 *  double-quoted. Values (not keys) may hold inner spaces: plain, where go-yaml folds a line
 *  longer than 80 columns at a space (toYaml declines such lines). */
function scalarString(s: string, key = false): string {
  if (s === '') return '""';
  // Longer keys become "? " complex keys; longer values are fine, but keep one bound.
  if (s.length > 100 || !(key ? /^[A-Za-z0-9_./-]+$/ : /^[A-Za-z0-9_./-]+( +[A-Za-z0-9_./-]+)*$/).test(s) || /^(---|\.\.\.)/.test(s)) decline();
  // Reads back as an int or a float: quoted.
  if (/^[-+]?[0-9]+(\.[0-9]*)?$/.test(s)) return `"${s}"`;
  // Dotted numbers (addresses, versions) are no int, float or timestamp: plain.
  if (/^[0-9]+(\.[0-9]+){2,}$/.test(s)) return s;
  if (!/^[A-Za-z_/]/.test(s)) decline();
  if (RESERVED.has(s.toLowerCase())) return `"${s}"`;
  return s;
}

/** A line go-yaml would fold: longer than its 80 columns, with a space inside a value (keys
 *  and markers hold none). */
const folds = (line: string): boolean => line.length > 80 && / /.test(line.replace(/^[ -]*/, '').replace(/^[^ ]+: /, ''));

function scalar(v: Value): string | undefined {
  if (typeof v === 'string') return scalarString(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (v === null) return 'null';
  if (isInt(v)) return intOf(v).toString();
  if (typeof v === 'number') {
    // JSON writes an integral float below 2^53 as digits, read back as an int.
    if (!Number.isInteger(v) || Math.abs(v) >= 2 ** 53 || Object.is(v, -0)) decline();
    return String(v);
  }
  if (Array.isArray(v)) return v.length === 0 ? (isNilList(v) ? 'null' : '[]') : undefined;
  return v.size === 0 ? '{}' : undefined;
}

/** go-yaml v2's key order (sorter.go): runs of digits compare as numbers, letters before
 *  other characters. Keys here are ASCII (scalarString refuses the rest). */
function keyLess(a: string, b: string): boolean {
  const isLetter = (c: string) => /[A-Za-z]/.test(c);
  const isDigit = (c: string) => c >= '0' && c <= '9';
  for (let i = 0; i < a.length && i < b.length; i++) {
    if (a[i] === b[i]) continue;
    const al = isLetter(a[i]!);
    const bl = isLetter(b[i]!);
    if (al && bl) return a[i]! < b[i]!;
    if (al || bl) return bl;
    let an = 0n;
    let bn = 0n;
    if (a[i] === '0' || b[i] === '0') {
      for (let j = i - 1; j >= 0 && isDigit(a[j]!); j--) {
        if (a[j] !== '0') {
          an = 1n;
          bn = 1n;
          break;
        }
      }
    }
    let ai = i;
    let bi = i;
    for (; ai < a.length && isDigit(a[ai]!); ai++) an = BigInt.asIntN(64, an * 10n + BigInt(a.charCodeAt(ai) - 48));
    for (; bi < b.length && isDigit(b[bi]!); bi++) bn = BigInt.asIntN(64, bn * 10n + BigInt(b.charCodeAt(bi) - 48));
    if (an !== bn) return an < bn;
    if (ai !== bi) return ai < bi;
    return a[i]! < b[i]!;
  }
  return a.length < b.length;
}

/** A nested line, charged (deep nesting indents every line below it). */
function indented(prefix: string, line: string): string {
  alloc(line.length + prefix.length);
  return prefix + line;
}

/** The lines of a list or map as a block node, unindented. */
function block(v: Value[] | Map<string, Value>): string[] {
  const out: string[] = [];
  if (Array.isArray(v)) {
    for (const item of v) {
      const one = scalar(item);
      if (one !== undefined) out.push(`- ${one}`);
      else block(item as Value[] | Map<string, Value>).forEach((l, i) => out.push(indented(i === 0 ? '- ' : '  ', l)));
    }
    return out;
  }
  const keys = [...v.keys()].sort((a, b) => (keyLess(a, b) ? -1 : keyLess(b, a) ? 1 : 0));
  for (const k of keys) {
    const item = entry(v, k);
    const key = scalarString(k, true);
    const one = scalar(item);
    if (one !== undefined) out.push(`${key}: ${one}`);
    else {
      out.push(`${key}:`);
      // go-yaml v2 writes a sequence inside a mapping at the mapping's own indentation.
      for (const l of block(item as Value[] | Map<string, Value>)) out.push(Array.isArray(item) ? l : indented('  ', l));
    }
  }
  return out;
}

/** ESO's toYaml, or Unsupported. */
export function toYaml(v: Value): string {
  const lines = [scalar(v) ?? block(v as Value[] | Map<string, Value>)].flat();
  if (lines.some(folds)) decline();
  const text = lines.join('\n');
  alloc(text.length);
  return text;
}
