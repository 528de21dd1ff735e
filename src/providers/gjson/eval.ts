// Evaluates a parsed gjson path (path.ts) on a JSON value parsed with numbers kept as
// written (../json-text.ts), as gjson's Get does: undefined where gjson's result does not
// exist. Every step is counted against a budget so no path costs more than MAX_STEPS
// whatever the value (projections and queries over large arrays included).
import { RemoteRefError } from '../errors.js';
import { isJsonNumber, isJsonObject, numberText } from '../json-text.js';
import { wildcardMatch } from './match.js';
import { applyModifier } from './modifiers.js';
import type { Component, Path, Query } from './path.js';

export const MAX_STEPS = 1_000_000;

export class Budget {
  private steps = 0;

  tick(n = 1): void {
    this.steps += n;
    if (this.steps > MAX_STEPS) throw new RemoteRefError(`property path costs more than ${MAX_STEPS} steps on this value`, 'InvalidSpec');
  }
}

const own = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);
const defined = (v: unknown): boolean => v !== undefined;

function key(node: unknown, c: Extract<Component, { kind: 'key' }>, budget: Budget): unknown {
  if (Array.isArray(node)) return c.pattern === undefined && /^\d+$/.test(c.key) ? (node[Number(c.key)] as unknown) : undefined;
  if (!isJsonObject(node)) return undefined;
  if (c.pattern === undefined) return own(node, c.key) ? node[c.key] : undefined;
  for (const k of Object.keys(node)) {
    budget.tick();
    if (wildcardMatch(k, c.pattern)) return node[k];
  }
  return undefined;
}

/** gjson's Result.Bool: true, a number other than 0, or a string strconv.ParseBool reads as true. */
function truthy(v: unknown): boolean {
  if (v === true) return true;
  if (isJsonNumber(v)) return Number(numberText(v)) !== 0;
  return typeof v === 'string' && ['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v);
}

function compare<T extends string | number>(a: T, b: T, op: string): boolean {
  switch (op) {
    case '==': return a === b;
    case '!=': return a !== b;
    case '<': return a < b;
    case '<=': return a <= b;
    case '>': return a > b;
    default: return a >= b;
  }
}

/** `~true`, `~false`, `~null`, `~*` (gjson >= 1.13): the value's truthiness, compared
 *  with `true`; undefined for any other right-hand side. */
function tilde(value: unknown, q: Query): boolean | undefined {
  if (q.quoted || !q.right.startsWith('~')) return undefined;
  const kind = q.right.slice(1);
  if (kind === '*') return value !== undefined;
  if (kind === 'null') return value === null;
  if (kind === 'true') return truthy(value);
  return kind === 'false' ? !truthy(value) : undefined;
}

function compareValue(value: unknown, op: string, right: string): boolean {
  const like = op === '%' || op === '!%';
  if (typeof value === 'string') return like ? wildcardMatch(value, right) === (op === '%') : compare(value, right, op);
  if (like) return false;
  if (isJsonNumber(value)) {
    const n = Number(right);
    return compare(Number(numberText(value)), Number.isNaN(n) ? 0 : n, op);
  }
  if (typeof value !== 'boolean') return false;
  // gjson orders false < true and compares with the text on the right.
  const r = right === 'true' ? 1 : right === 'false' ? 0 : undefined;
  return r === undefined ? op === '!=' : compare(value ? 1 : 0, r, op);
}

function matches(element: unknown, q: Query, budget: Budget): boolean {
  const value = evaluate(element, q.left, budget);
  const ish = tilde(value, q);
  if (q.right.startsWith('~') && !q.quoted) return ish === undefined ? false : q.op === undefined || compareValue(ish, q.op, 'true');
  if (value === undefined) return false;
  return q.op === undefined || compareValue(value, q.op, q.right);
}

function chain(node: unknown, comps: Component[], from: number, budget: Budget): unknown {
  let cur = node;
  for (let i = from; i < comps.length; i++) {
    budget.tick();
    const c = comps[i]!;
    const last = i === comps.length - 1;
    if (c.kind === 'key') {
      cur = key(cur, c, budget);
    } else if (c.kind === 'modifier') {
      cur = applyModifier(cur, c.name, c.arg, budget);
    } else {
      if (!Array.isArray(cur)) return undefined;
      const elements = cur as unknown[];
      budget.tick(elements.length);
      if (c.kind === 'count' && last) return elements.length;
      if (c.kind === 'query' && !c.all) {
        cur = elements.find((el) => matches(el, c.query, budget));
      } else {
        // `#` with more path, or `#(...)#`: the rest of this chain runs on each element.
        const picked = c.kind === 'query' ? elements.filter((el) => matches(el, c.query, budget)) : elements;
        return last ? picked : picked.map((el) => chain(el, comps, i + 1, budget)).filter(defined);
      }
    }
    if (cur === undefined) return undefined;
  }
  return cur;
}

/** The value at `path` in `root`, or undefined when gjson finds nothing. */
export function evaluate(root: unknown, path: Path, budget: Budget): unknown {
  let cur = root;
  for (const comps of path) {
    cur = chain(cur, comps, 0, budget);
    if (cur === undefined) return undefined;
  }
  return cur;
}
