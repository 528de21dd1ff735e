// The template helpers. Every one is a PURE function of its arguments: no environment,
// filesystem, network, clock or Kubernetes access (each such helper became a CVE in
// some other templating tool). A helper failure throws HelperError, whose message says
// what was wrong with the input without ever quoting the input.
import { createHash } from 'node:crypto';
import { BudgetExceeded, charge, ensureRoom } from './budget.js';
import { loadYaml } from '../lazy.js';
import { toPlain, toSafe } from './safe.js';

interface HelperOptions {
  loc?: { start: { line: number; column: number } };
}

export class HelperError extends Error {
  constructor(
    readonly helper: string,
    readonly reason: string,
    readonly loc?: { line: number; column: number },
  ) {
    super(`${helper}: ${reason}`);
    this.name = 'HelperError';
  }
}

type Pure = (...args: unknown[]) => unknown;

/** Argument as text. Missing values fail loudly (a typo should not render ""),
 *  except in `default`, which exists for them. */
function str(helper: string, v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v === null) return '';
  if (v === undefined) throw new HelperError(helper, 'argument is undefined (missing key?)');
  throw new HelperError(helper, `expects text, got ${Array.isArray(v) ? 'a list' : 'an object'}`);
}

function int(helper: string, v: unknown): number {
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 1000) {
    throw new HelperError(helper, 'expects a small non-negative integer');
  }
  return n;
}

const B64 = /^[A-Za-z0-9+/]*={0,2}$/;
const B64URL = /^[A-Za-z0-9_-]*={0,2}$/;

function b64decode(helper: string, v: unknown, alphabet: RegExp): string {
  const s = str(helper, v).replace(/\s+/g, '');
  // Standard base64 must be padded; base64url is often not (JWT style).
  const padded = alphabet === B64URL ? s.padEnd(Math.ceil(s.length / 4) * 4, '=') : s;
  if (padded.length % 4 !== 0 || !alphabet.test(padded)) throw new HelperError(helper, 'input is not valid base64');
  return Buffer.from(padded, alphabet === B64 ? 'base64' : 'base64url').toString('utf8');
}

function words(s: string): string[] {
  return s
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

const cap = (w: string): string => w.charAt(0).toUpperCase() + w.slice(1).toLowerCase();

function indent(n: unknown, s: unknown, helper: string): string {
  const pad = ' '.repeat(int(helper, n));
  const text = str(helper, s);
  ensureRoom(text.length + pad.length * (text.split('\n').length));
  return text
    .split('\n')
    .map((line) => (line === '' ? line : pad + line))
    .join('\n');
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n[\s\S]*?-----END \1-----/g;

/** The PEM blocks of `bundle` whose type satisfies `match`, each ending in "\n". */
function pemBlocks(bundle: string, match: (type: string) => boolean): string[] {
  const out: string[] = [];
  for (const m of bundle.matchAll(PEM_BLOCK)) if (match(m[1]!)) out.push(`${m[0].replace(/\r\n/g, '\n')}\n`);
  return out;
}

function flat(helper: string, items: unknown[]): string[] {
  return items.flatMap((i) => (Array.isArray(i) ? i.map((x) => str(helper, x)) : [str(helper, i)]));
}

function toJson(v: unknown): string {
  if (v === undefined) throw new HelperError('toJson', 'argument is undefined (missing key?)');
  return JSON.stringify(v);
}

function fromJson(v: unknown): unknown {
  const s = str('fromJson', v);
  try {
    return toSafe(JSON.parse(s));
  } catch {
    // JSON.parse quotes its input in the message: never pass it on.
    throw new HelperError('fromJson', 'input is not valid JSON');
  }
}

function toYaml(v: unknown): string {
  if (v === undefined) throw new HelperError('toYaml', 'argument is undefined (missing key?)');
  return loadYaml().stringify(toPlain(v)).replace(/\n$/, '');
}

/** Every occurrence of `from` replaced, after checking the result fits the budget. */
function replace(from: string, to: string, s: string): string {
  let count = 0;
  if (from === '') count = s.length + 1;
  else for (let i = s.indexOf(from); i >= 0; i = s.indexOf(from, i + from.length)) count++;
  ensureRoom(s.length + count * (to.length - from.length));
  return s.split(from).join(to);
}

function joined(items: string[], sep: string): string {
  ensureRoom(items.reduce((n, i) => n + i.length, 0) + sep.length * items.length);
  return items.join(sep);
}

/** Strict `lookup`: a missing key is an error, like a missing path. Never quotes the key
 *  (it may come from a value: `{{lookup db db.name}}`). */
function lookup(obj: unknown, key: unknown): unknown {
  if (obj === undefined || obj === null) throw new HelperError('lookup', 'the object is undefined (missing key?)');
  if (typeof key !== 'string' && typeof key !== 'number') throw new HelperError('lookup', 'the key must be text or a number');
  if (typeof obj !== 'object' || !Object.hasOwn(obj, key)) throw new HelperError('lookup', 'the key is not defined');
  return (obj as Record<string | number, unknown>)[key];
}

/** name → [implementation, min args, max args]. */
const HELPERS: Record<string, [Pure, number, number]> = {
  b64enc: [(s) => Buffer.from(str('b64enc', s), 'utf8').toString('base64'), 1, 1],
  b64dec: [(s) => b64decode('b64dec', s, B64), 1, 1],
  b64urlenc: [(s) => Buffer.from(str('b64urlenc', s), 'utf8').toString('base64url'), 1, 1],
  b64urldec: [(s) => b64decode('b64urldec', s, B64URL), 1, 1],
  toJson: [toJson, 1, 1],
  fromJson: [fromJson, 1, 1],
  toYaml: [toYaml, 1, 1],
  upper: [(s) => str('upper', s).toUpperCase(), 1, 1],
  lower: [(s) => str('lower', s).toLowerCase(), 1, 1],
  title: [(s) => str('title', s).replace(/\p{L}[\p{L}\p{N}']*/gu, cap), 1, 1],
  camelcase: [(s) => words(str('camelcase', s)).map((w, i) => (i === 0 ? w.toLowerCase() : cap(w))).join(''), 1, 1],
  snakecase: [(s) => words(str('snakecase', s)).map((w) => w.toLowerCase()).join('_'), 1, 1],
  kebabcase: [(s) => words(str('kebabcase', s)).map((w) => w.toLowerCase()).join('-'), 1, 1],
  default: [(d, v) => (v === undefined || v === null || v === '' ? d : v), 2, 2],
  indent: [(n, s) => indent(n, s, 'indent'), 2, 2],
  nindent: [(n, s) => `\n${indent(n, s, 'nindent')}`, 2, 2],
  trim: [(s) => str('trim', s).trim(), 1, 1],
  replace: [(from, to, s) => replace(str('replace', from), str('replace', to), str('replace', s)), 3, 3],
  join: [(sep, ...items) => joined(flat('join', items), str('join', sep)), 1, Infinity],
  concat: [(...items) => joined(flat('concat', items), ''), 1, Infinity],
  quote: [(s) => JSON.stringify(str('quote', s)), 1, 1],
  lookup: [lookup, 2, 2],
  eq: [(a, b) => a === b, 2, 2],
  ne: [(a, b) => a !== b, 2, 2],
  not: [(a) => !a, 1, 1],
  sha256sum: [(s) => createHash('sha256').update(str('sha256sum', s), 'utf8').digest('hex'), 1, 1],
  pemBlocks: [(type, s) => pemBlocks(str('pemBlocks', s), (t) => t === str('pemBlocks', type)).join(''), 2, 2],
  pemCertificates: [(s) => pemBlocks(str('pemCertificates', s), (t) => t === 'CERTIFICATE').join(''), 1, 1],
  pemPrivateKey: [
    (s) => {
      const key = pemBlocks(str('pemPrivateKey', s), (t) => t.endsWith('PRIVATE KEY'))[0];
      if (!key) throw new HelperError('pemPrivateKey', 'no PRIVATE KEY block in input');
      return key;
    },
    1,
    1,
  ],
};

export const HELPER_NAMES: readonly string[] = Object.freeze(Object.keys(HELPERS));

/** Wraps a helper for Handlebars: strips the trailing options object, checks arity and
 *  turns any failure into a value-free HelperError carrying the call's location. */
function wrap(name: string, [fn, min, max]: [Pure, number, number]): (...args: unknown[]) => unknown {
  return function helper(...args: unknown[]): unknown {
    const options = args.pop() as HelperOptions | undefined;
    const loc = options?.loc ? { line: options.loc.start.line, column: options.loc.start.column } : undefined;
    if (args.length < min || args.length > max) {
      const want = min === max ? `${min}` : max === Infinity ? `at least ${min}` : `${min}-${max}`;
      throw new HelperError(name, `expects ${want} argument(s), got ${args.length}`, loc);
    }
    try {
      const out = fn(...args);
      if (typeof out === 'string') charge(out.length);
      return out;
    } catch (err) {
      if (err instanceof BudgetExceeded) throw err;
      if (err instanceof HelperError) throw new HelperError(err.helper, err.reason, loc);
      throw new HelperError(name, `failed (${(err as Error)?.name ?? 'error'})`, loc);
    }
  };
}

/** Helpers ready to register on a Handlebars instance. */
export function handlebarsHelpers(): Record<string, (...args: unknown[]) => unknown> {
  const out: Record<string, (...args: unknown[]) => unknown> = {};
  for (const [name, spec] of Object.entries(HELPERS)) out[name] = wrap(name, spec);
  return out;
}
