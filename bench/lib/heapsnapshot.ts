// Summarises a V8 .heapsnapshot (node --heapsnapshot-signal, bench/peers/webhook-memory.ts):
// self size by constructor, and by the script (module, bundle chunk) that retains it. The
// second uses the dominator tree, as DevTools' "retained size" does: each object is charged to
// the nearest object dominating it that belongs to a script (a Script itself, a function's
// SharedFunctionInfo, a closure), so a module's top-level data is charged to that module.
//
//   tsx bench/lib/heapsnapshot.ts FILE.heapsnapshot [--top 25]
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

export interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

export interface Summary {
  totalBytes: number;
  byConstructor: [string, number, number][];
  byScript: [string, number][];
  /** Self sizes charged to the nearest dominating instance of a named class (ListWatch,
   *  Gauge, WorkQueue…): which of the program's own objects holds the memory. */
  byOwner: [string, number][];
  largest: [string, number][];
}

interface Graph {
  n: number;
  N: number;
  E: number;
  first: Uint32Array;
  edges: number[];
  weak: number;
  type(i: number): string;
  name(i: number): string;
  self(i: number): number;
  edgeName(e: number): string | undefined;
  nodeId(i: number): number;
}

export function graphOf(s: Snapshot): Graph {
  const meta = s.snapshot.meta;
  const N = meta.node_fields.length;
  const E = meta.edge_fields.length;
  const types = meta.node_types[0];
  const etypes = meta.edge_types[0];
  const { nodes, edges, strings } = s;
  const n = nodes.length / N;
  const first = new Uint32Array(n + 1);
  for (let i = 0, e = 0; i < n; i++) {
    first[i] = e;
    e += nodes[i * N + 4]! * E;
  }
  first[n] = edges.length;
  const type = (i: number) => types[nodes[i * N]!]!;
  const name = (i: number) => strings[nodes[i * N + 1]!]!;
  const self = (i: number) => nodes[i * N + 3]!;
  const weak = etypes.indexOf('weak');
  const edgeName = (e: number) => strings[edges[e + 1]!];
  return { n, N, E, first, edges, weak, type, name, self, edgeName, nodeId: (i) => nodes[i * N + 2]! };
}

/** Depth-first postorder from the root over strong edges. */
export function postorder(g: Graph): { post: Int32Array; order: number[]; seen: Uint8Array } {
  const { n, N, E, first, edges, weak } = g;
  // Depth-first postorder from the root (node 0) over strong edges.
  const post = new Int32Array(n).fill(-1);
  const order: number[] = [];
  const seen = new Uint8Array(n);
  const stack: number[] = [0];
  const cursor = new Uint32Array(n);
  seen[0] = 1;
  cursor[0] = first[0]!;
  while (stack.length) {
    const v = stack[stack.length - 1]!;
    let pushed = false;
    while (cursor[v]! < first[v + 1]!) {
      const e = cursor[v]!;
      cursor[v] = e + E;
      if (edges[e] === weak) continue;
      const w = edges[e + 2]! / N;
      if (!seen[w]) {
        seen[w] = 1;
        cursor[w] = first[w]!;
        stack.push(w);
        pushed = true;
        break;
      }
    }
    if (!pushed) {
      stack.pop();
      post[v] = order.length;
      order.push(v);
    }
  }
  return { post, order, seen };
}

/** Immediate dominators (Cooper, Harvey, Kennedy) and retained sizes. */
export function dominators(g: Graph, po: ReturnType<typeof postorder>): { idom: Int32Array; retained: Float64Array } {
  const { n, N, E, first, edges, weak, self } = g;
  const { post, order, seen } = po;
  // Predecessors, then immediate dominators (Cooper, Harvey, Kennedy: iterate to a fixpoint).
  const predCount = new Uint32Array(n + 1);
  for (let v = 0; v < n; v++) if (seen[v]) for (let e = first[v]!; e < first[v + 1]!; e += E) if (edges[e] !== weak) predCount[edges[e + 2]! / N + 1]!++;
  for (let v = 0; v < n; v++) predCount[v + 1]! += predCount[v]!;
  const preds = new Uint32Array(predCount[n]!);
  const fill = predCount.slice(0, n);
  for (let v = 0; v < n; v++) if (seen[v]) for (let e = first[v]!; e < first[v + 1]!; e += E) if (edges[e] !== weak) preds[fill[edges[e + 2]! / N]!++] = v;
  const idom = new Int32Array(n).fill(-1);
  idom[0] = 0;
  const intersect = (a: number, b: number) => {
    while (a !== b) {
      while (post[a]! < post[b]!) a = idom[a]!;
      while (post[b]! < post[a]!) b = idom[b]!;
    }
    return a;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (let k = order.length - 2; k >= 0; k--) {
      const v = order[k]!;
      let d = -1;
      for (let p = predCount[v]!; p < predCount[v + 1]!; p++) {
        const u = preds[p]!;
        if (idom[u] === -1) continue;
        d = d === -1 ? u : intersect(u, d);
      }
      if (d !== idom[v]) {
        idom[v] = d;
        changed = true;
      }
    }
  }
  const retained = new Float64Array(n);
  for (const v of order) retained[v]! += self(v);
  for (const v of order) if (v !== 0) retained[idom[v]!]! += retained[v]!;
  return { idom, retained };
}

/** The script each Script, SharedFunctionInfo and closure belongs to. */
function scripts(g: Graph): { scriptOf: Map<number, string>; scriptNodes: Set<number> } {
  const { n, N, E, first, edges, type, name, edgeName } = g;
  // The script each Script / SharedFunctionInfo / closure belongs to.
  const scriptOf = new Map<number, string>();
  const target = (i: number, edge: string) => {
    for (let e = first[i]!; e < first[i + 1]!; e += E) if (edgeName(e) === edge) return edges[e + 2]! / N;
    return -1;
  };
  for (let i = 0; i < n; i++) {
    if (type(i) === 'code' && target(i, 'source') >= 0 && target(i, 'name') >= 0) scriptOf.set(i, name(target(i, 'name')) || '(unnamed script)');
  }
  const scriptNodes = new Set(scriptOf.keys());
  for (let i = 0; i < n; i++) {
    if (type(i) !== 'code') continue;
    const sc = target(i, 'script');
    if (sc >= 0 && scriptOf.has(sc)) scriptOf.set(i, scriptOf.get(sc)!);
  }
  for (let i = 0; i < n; i++) {
    if (type(i) !== 'closure') continue;
    const sfi = target(i, 'shared');
    if (sfi >= 0 && scriptOf.has(sfi)) scriptOf.set(i, scriptOf.get(sfi)!);
  }
  return { scriptOf, scriptNodes };
}

function constructorKey(g: Graph, scriptNodes: Set<number>, i: number): string {
  const t = g.type(i);
  const name = g.name(i);
  if (t === 'object' || t === 'closure' || t === 'native' || t === 'hidden') return `${name || '(anonymous)'} (${t})`;
  if (t === 'code') return scriptNodes.has(i) ? '(Script)' : name.startsWith('system /') ? name : '(code: functions)';
  return t === 'array' ? `(array) ${name}` : `(${t})`;
}

export function summarise(s: Snapshot): Summary {
  const g = graphOf(s);
  const { n, type, name, self } = g;
  const po = postorder(g);
  const { order } = po;
  const { idom, retained } = dominators(g, po);
  const { scriptOf, scriptNodes } = scripts(g);
  // Charge each node to its nearest script-owning dominator (idom comes before in reverse postorder).
  const owner = new Array<string>(n);
  owner[0] = '(roots: no script dominates it)';
  const byScript = new Map<string, number>();
  for (let k = order.length - 1; k >= 0; k--) {
    const v = order[k]!;
    owner[v] = scriptOf.get(v) ?? (v === 0 ? owner[0]! : owner[idom[v]!]!);
    byScript.set(owner[v]!, (byScript.get(owner[v]!) ?? 0) + self(v));
  }

  // Generic containers and V8's own objects are never owners: their nearest named holder is.
  const generic = /^(Object|Array|Map|Set|WeakMap|Promise|Uint8Array|ArrayBuffer|SharedArrayBuffer|Buffer|Error|Date|Timeout|system \/.*|)$/;
  const ownerOf = new Array<string>(n);
  ownerOf[0] = '(roots)';
  const byOwner = new Map<string, number>();
  for (let k = order.length - 1; k >= 0; k--) {
    const v = order[k]!;
    ownerOf[v] = type(v) === 'object' && !generic.test(name(v)) ? name(v) : v === 0 ? ownerOf[0]! : ownerOf[idom[v]!]!;
    byOwner.set(ownerOf[v]!, (byOwner.get(ownerOf[v]!) ?? 0) + self(v));
  }

  const byCtor = new Map<string, [number, number]>();
  let totalBytes = 0;
  for (let i = 0; i < n; i++) {
    const key = constructorKey(g, scriptNodes, i);
    const c = byCtor.get(key) ?? [0, 0];
    c[0] += self(i);
    c[1]++;
    byCtor.set(key, c);
    totalBytes += self(i);
  }
  // The largest single retainers that are not roots.
  const largest: [string, number][] = [];
  for (const v of order) {
    if (v === 0 || type(v) === 'synthetic' || retained[v]! < 256 * 1024) continue;
    largest.push([`${type(v)} ${name(v).slice(0, 60).replace(/\s+/g, ' ')} @${g.nodeId(v)} [${owner[v]}]`, retained[v]!]);
  }
  return {
    totalBytes,
    byConstructor: [...byCtor].map(([k, [b, c]]) => [k, b, c] as [string, number, number]).sort((a, b) => b[1] - a[1]),
    byScript: [...byScript].sort((a, b) => b[1] - a[1]),
    byOwner: [...byOwner].sort((a, b) => b[1] - a[1]),
    largest: largest.sort((a, b) => b[1] - a[1]),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values: o, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' } } });
  const top = Number(o.top);
  const kb = (b: number) => `${(b / 1024).toFixed(0)} KiB`;
  const s = summarise(JSON.parse(readFileSync(positionals[0]!, 'utf8')) as Snapshot);
  console.log(`heap total (self sizes): ${kb(s.totalBytes)}\n\nby constructor (self size, count):`);
  for (const [k, b, c] of s.byConstructor.slice(0, top)) console.log(`${kb(b).padStart(10)}  ${String(c).padStart(7)}  ${k}`);
  console.log('\nby retaining script (self sizes of what its functions and scripts dominate):');
  for (const [k, b] of s.byScript.slice(0, top)) console.log(`${kb(b).padStart(10)}  ${k.replace(/^file:\/\/.*\/dist\//, 'dist/')}`);
  console.log('\nby owner (self sizes dominated by the nearest instance of a named class):');
  for (const [k, b] of s.byOwner.slice(0, top)) console.log(`${kb(b).padStart(10)}  ${k}`);
  console.log('\nlargest retainers (retained size):');
  for (const [k, b] of s.largest.slice(0, top)) console.log(`${kb(b).padStart(10)}  ${k.replace(/file:\/\/.*\/dist\//, 'dist/')}`);
}
