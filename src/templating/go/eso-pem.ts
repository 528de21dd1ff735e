// Go's encoding/pem (the Decode of Go 1.26, the toolchain the oracle is built with, and
// EncodeToMemory) and ESO's filterPEM on top of it (test/support/templating/go-oracle/pem.go). Go
// works on bytes: the input is read as its UTF-8 bytes, held here in a 'latin1' string
// (one character per byte) so that every offset is a byte offset as in Go.
import { alloc } from './alloc.js';
import { ExecFailure, Unsupported } from './errors.js';
import type { GoFunc } from './exec.js';
import { textOrBytes } from './sprig.js';
import { isAscii, isBytes, type Value } from './values.js';

export interface PemBlock {
  type: string;
  headers: Map<string, string>;
  bytes: Buffer;
}

const PEM_START = '\n-----BEGIN ';
const PEM_END = '\n-----END ';
const EOL = '-----';

/** A template argument's bytes as a byte string. */
export function byteString(v: Value): string {
  const buf = isBytes(v) ? Buffer.from(v.bytes) : Buffer.from(v as string, 'utf8');
  alloc(buf.length);
  return buf.toString('latin1');
}

/** getLine: the line without its newline (and a \r before it) or trailing blanks, what follows, bytes consumed. */
function getLine(data: string): [string, string, number] {
  let i = data.indexOf('\n');
  let j: number;
  if (i < 0) {
    i = data.length;
    j = i;
  } else {
    j = i + 1;
    if (i > 0 && data[i - 1] === '\r') i--;
  }
  let end = i;
  while (end > 0 && (data[end - 1] === ' ' || data[end - 1] === '\t')) end--;
  return [data.slice(0, end), data.slice(j), j];
}

/** bytes.TrimSpace for the ASCII whitespace; other bytes past ASCII are not read as Unicode here. */
function trimSpace(s: string): string {
  if (!isAscii(s)) throw new Unsupported('a PEM header that is not ASCII');
  const space = (c: string) => c === ' ' || (c >= '\t' && c <= '\r');
  let a = 0;
  let b = s.length;
  while (a < b && space(s[a]!)) a++;
  while (b > a && space(s[b - 1]!)) b--;
  return s.slice(a, b);
}

/** base64.StdEncoding.Decode (newlines ignored, padding required, other bytes fail); null on failure. */
function decodeBase64(s: string): Buffer | null {
  const clean = s.replace(/[\r\n]/g, '');
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(clean)) return null;
  return Buffer.from(clean, 'base64');
}

/** The header lines after a BEGIN line ("key: value", until a line without a colon); null
 *  when the input ends first (Go then finds no block at all). */
function readHeaders(rest: string): { headers: Map<string, string>; rest: string; used: number } | null {
  const headers = new Map<string, string>();
  let used = 0;
  for (;;) {
    if (rest.length === 0) return null;
    const [line, next, n] = getLine(rest);
    const colon = line.indexOf(':');
    if (colon < 0) return { headers, rest, used };
    headers.set(trimSpace(line.slice(0, colon)), trimSpace(line.slice(colon + 1)));
    rest = next;
    used += n;
  }
}

/** pem.Decode: the first block and what follows it, or null and the input unchanged. */
export function pemDecode(data: string): [PemBlock | null, string] {
  let rest = data;
  let endTrailerIndex = 0;
  for (;;) {
    if (endTrailerIndex < 0 || endTrailerIndex > rest.length) return [null, data];
    rest = rest.slice(endTrailerIndex);
    let endIndex = rest.indexOf(PEM_END);
    if (endIndex < 0) return [null, data];
    endTrailerIndex = endIndex + PEM_END.length;
    // Searched back from the END only: each stretch of the input is scanned once.
    const begin = PEM_START.slice(1);
    const beginIndex = endIndex >= begin.length ? rest.lastIndexOf(begin, endIndex - begin.length) : -1;
    if (beginIndex < 0 || (beginIndex > 0 && rest[beginIndex - 1] !== '\n')) continue;
    const skip = beginIndex + PEM_START.length - 1;
    rest = rest.slice(skip);
    endIndex -= skip;
    endTrailerIndex -= skip;
    const [line, after, consumed] = getLine(rest);
    rest = after;
    endIndex -= consumed;
    endTrailerIndex -= consumed;
    if (!line.endsWith(EOL)) continue;
    const typeLine = line.slice(0, -EOL.length);
    const read = readHeaders(rest);
    if (read === null) return [null, data];
    const { headers } = read;
    rest = read.rest;
    endIndex -= read.used;
    endTrailerIndex -= read.used;
    if (headers.size > 0 && endIndex < 0) continue;
    let endTrailer = rest.slice(endTrailerIndex);
    const endTrailerLen = typeLine.length + EOL.length;
    if (endTrailer.length < endTrailerLen) continue;
    const restOfEndLine = endTrailer.slice(endTrailerLen);
    endTrailer = endTrailer.slice(0, endTrailerLen);
    if (!endTrailer.startsWith(typeLine) || !endTrailer.endsWith(EOL)) continue;
    if (getLine(restOfEndLine)[0].length !== 0) continue;
    let bytes: Buffer = Buffer.alloc(0);
    if (endIndex > 0) {
      const decoded = decodeBase64(rest.slice(0, endIndex).replace(/[ \t]/g, ''));
      if (decoded === null) continue;
      bytes = decoded;
    }
    return [{ type: typeLine, headers, bytes }, getLine(rest.slice(endIndex + PEM_END.length - 1))[1]];
  }
}

/** pem.EncodeToMemory, as a byte string. */
export function pemEncode(b: PemBlock): string {
  let out = `-----BEGIN ${b.type}-----\n`;
  if (b.headers.size > 0) {
    const keys = [...b.headers.keys()].filter((k) => k !== 'Proc-Type').sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
    if (b.headers.has('Proc-Type')) keys.unshift('Proc-Type');
    for (const k of keys) out += `${k}: ${b.headers.get(k)!}\n`;
    out += '\n';
  }
  const b64 = b.bytes.toString('base64');
  alloc(b64.length * 2);
  for (let i = 0; i < b64.length; i += 64) out += `${b64.slice(i, i + 64)}\n`;
  return `${out}-----END ${b.type}-----\n`;
}

/** A PEM block of DER bytes, as Go's pemBlock helper writes it. */
export const derToPem = (type: string, der: Buffer): string => pemEncode({ type, headers: new Map(), bytes: der });

/** strings.EqualFold, for ASCII (Unicode's simple folding is not ported). */
function equalFold(a: string, b: string): boolean {
  if (!isAscii(a) || !isAscii(b)) throw new Unsupported('filterPEM of a type that is not ASCII');
  return a.toLowerCase() === b.toLowerCase();
}

/** The oracle's trimJunk: what precedes the first "-----BEGIN" is dropped. */
export function trimJunk(s: string): string {
  const i = s.indexOf('-----BEGIN');
  return i >= 0 ? s.slice(i) : s;
}

/** filterPEM: the blocks of one type (case-insensitive), re-encoded, in order. */
function filterPEM(pemType: string, input: Value): Value {
  const wanted = Buffer.from(pemType, 'utf8').toString('latin1');
  let data = trimJunk(byteString(input));
  let out = '';
  for (;;) {
    const [block, rest] = pemDecode(data);
    data = rest;
    if (block === null) break;
    if (equalFold(block.type, wanted)) out += pemEncode(block);
  }
  // Go's message names the type; ESI's does not repeat template text (one rule: no values).
  if (out === '' && data.length !== 0) throw new ExecFailure('error calling filterPEM: found text that is not PEM and no block of the type');
  return textOrBytes(Buffer.from(out, 'latin1'));
}

export const ESO_PEM: Record<string, GoFunc> = {
  filterPEM: { params: ['s', 'B'], fn: (t, s) => filterPEM(t as string, s) },
};
