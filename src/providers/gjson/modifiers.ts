// gjson's built-in modifiers (`@name[:arg]`), on values parsed with numbers kept as
// written. `@pretty` is refused: its output is gjson's own layout, which ESI does not
// reproduce byte for byte (ESI prints structured results compactly, as `@ugly`).
// An unknown name gives no result, as in gjson.
import { RemoteRefError } from '../errors.js';
import { isJsonObject, parseJsonText, stringifyJson } from '../json-text.js';
import type { Budget } from './eval.js';

type Obj = Record<string, unknown>;

function argObject(arg: string | undefined): Obj {
  if (!arg) return {};
  try {
    const v = parseJsonText(arg);
    return isJsonObject(v) ? v : {};
  } catch {
    return {};
  }
}

function flatten(arr: unknown[], deep: boolean, budget: Budget): unknown[] {
  const out: unknown[] = [];
  for (const el of arr) {
    budget.tick();
    if (Array.isArray(el)) out.push(...(deep ? flatten(el, true, budget) : el));
    else out.push(el);
  }
  return out;
}

function dig(node: unknown, name: string, out: unknown[], budget: Budget): void {
  budget.tick();
  if (isJsonObject(node)) {
    if (Object.prototype.hasOwnProperty.call(node, name)) out.push(node[name]);
    for (const v of Object.values(node)) if (typeof v === 'object' && v !== null) dig(v, name, out, budget);
  } else if (Array.isArray(node)) {
    for (const v of node) if (typeof v === 'object' && v !== null) dig(v, name, out, budget);
  }
}

type Modifier = (node: unknown, arg: string | undefined, budget: Budget) => unknown;

const identity: Modifier = (node) => node;

const MODIFIERS: Record<string, Modifier> = {
  this: identity,
  valid: identity,
  ugly: identity,
  pretty: () => {
    throw new RemoteRefError('the gjson modifier @pretty is not supported (its layout is not reproduced)', 'InvalidSpec');
  },
  reverse: (node) => {
    if (Array.isArray(node)) return [...(node as unknown[])].reverse();
    return isJsonObject(node) ? Object.fromEntries(Object.entries(node).reverse()) : node;
  },
  flatten: (node, arg, budget) => (Array.isArray(node) ? flatten(node, argObject(arg).deep === true, budget) : node),
  join: (node, _arg, budget) => {
    if (!Array.isArray(node)) return undefined;
    const out: Obj = {};
    for (const el of node) {
      if (!isJsonObject(el)) continue;
      budget.tick(Object.keys(el).length);
      Object.assign(out, el);
    }
    return out;
  },
  keys: (node) => (isJsonObject(node) ? Object.keys(node) : []),
  values: (node) => (isJsonObject(node) ? Object.values(node) : Array.isArray(node) ? node : []),
  tostr: (node) => stringifyJson(node),
  fromstr: (node) => {
    if (typeof node !== 'string') return undefined;
    try {
      return parseJsonText(node);
    } catch {
      return undefined;
    }
  },
  group: (node, _arg, budget) => {
    if (!isJsonObject(node)) return undefined;
    const rows: Obj[] = [];
    for (const [k, v] of Object.entries(node)) {
      if (!Array.isArray(v)) continue;
      budget.tick(v.length);
      (v as unknown[]).forEach((el, i) => ((rows[i] ??= {})[k] = el));
    }
    return rows;
  },
  dig: (node, arg, budget) => {
    const out: unknown[] = [];
    if (arg) dig(node, arg, out, budget);
    return out;
  },
};

/** The value after modifier `name` (with its optional argument), or undefined. */
export function applyModifier(node: unknown, name: string, arg: string | undefined, budget: Budget): unknown {
  const fn = Object.prototype.hasOwnProperty.call(MODIFIERS, name) ? MODIFIERS[name] : undefined;
  return fn ? fn(node, arg, budget) : undefined;
}
