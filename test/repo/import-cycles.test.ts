// No import cycle in the product at run time: a cycle makes module evaluation order decide
// which binding is still undefined, and it hides which layer a module belongs to. Counted:
// static imports and re-exports of values and import() of relative modules in src/, webhook/,
// injector/ and certs/; `import type` is erased by the compiler and does not count.
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');

function walk(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** Relative modules a file loads at run time, as repository paths. */
export function runtimeImports(file: string, text: string): string[] {
  const specs = [
    ...[...text.matchAll(/^(?:import|export)\s+(?!type\b)(?:[^'";]*?\sfrom\s+)?['"](\.[^'"]+)\.js['"]/gm)].map((m) => m[1]!),
    ...[...text.matchAll(/import\(\s*['"](\.[^'"]+)\.js['"]\s*\)/g)].map((m) => m[1]!),
  ];
  return specs.map((s) => relative(ROOT, resolve(ROOT, dirname(file), `${s}.ts`)));
}

/** Strongly connected components of more than one module (Tarjan). */
export function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>(), low = new Map<string, number>(), stack: string[] = [], on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next); low.set(v, next); next++; stack.push(v); on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)); } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const c: string[] = [];
      let w: string;
      do { w = stack.pop()!; on.delete(w); c.push(w); } while (w !== v);
      if (c.length > 1) out.push(c.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

t.test('the finder sees a cycle through import() and ignores import type', async (t) => {
  const g = new Map([
    ['a.ts', runtimeImports('a.ts', "import { b } from './b.js';")],
    ['b.ts', runtimeImports('b.ts', "export const c = () => import('./c.js');")],
    ['c.ts', runtimeImports('c.ts', "import x from './a.js';\nimport type { T } from './d.js';")],
    ['d.ts', runtimeImports('d.ts', "import type { A } from './a.js';")],
  ]);
  t.same(cycles(g), [['a.ts', 'b.ts', 'c.ts']]);
});

t.test('no runtime import cycle in src/, webhook/, injector/, certs/', async (t) => {
  const files = ['src', 'webhook', 'injector', 'certs'].flatMap((d) => walk(d));
  const graph = new Map(files.map((f) => [f, runtimeImports(f, readFileSync(join(ROOT, f), 'utf8'))]));
  t.ok(graph.size > 200, `${graph.size} modules read`);
  t.same(cycles(graph), [], 'modules that import each other at run time');
});
