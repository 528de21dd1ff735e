// Summarises a V8 .cpuprofile (node --cpu-prof): where the time goes, by function (self
// time) and by function including callees (inclusive time, each sample counted once per
// function on its stack). `tsx bench/lib/cpuprofile.ts FILE [--top N] [--root DIR]`.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileRow {
  name: string;
  selfMs: number;
  totalMs: number;
  selfPct: number;
  totalPct: number;
}

function label(n: ProfileNode, root: string): string {
  const { functionName, url, lineNumber } = n.callFrame;
  const fn = functionName || '(anonymous)';
  if (!url) return fn;
  let where = url.replace(/^file:\/\//, '');
  if (root && where.startsWith(root)) where = where.slice(root.length + 1);
  const nm = where.lastIndexOf('node_modules/');
  if (nm >= 0) where = where.slice(nm + 'node_modules/'.length);
  return `${fn} ${where}:${lineNumber + 1}`;
}

export function summarise(file: string, root = ''): { rows: ProfileRow[]; totalMs: number } {
  const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let totalUs = 0;
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    totalUs += dt;
    const leaf = byId.get(id)!;
    const leafName = label(leaf, root);
    self.set(leafName, (self.get(leafName) ?? 0) + dt);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const name = label(byId.get(cur)!, root);
      if (seen.has(name)) continue;
      seen.add(name);
      total.set(name, (total.get(name) ?? 0) + dt);
    }
  });
  const rows = [...total].map(([name, t]) => ({
    name, selfMs: (self.get(name) ?? 0) / 1000, totalMs: t / 1000,
    selfPct: ((self.get(name) ?? 0) / totalUs) * 100, totalPct: (t / totalUs) * 100,
  }));
  return { rows, totalMs: totalUs / 1000 };
}

export function formatTop(rows: ProfileRow[], by: 'self' | 'total', top: number, filter: (r: ProfileRow) => boolean = () => true): string {
  const key = by === 'self' ? 'selfMs' : 'totalMs';
  return rows.filter(filter).sort((a, b) => b[key] - a[key]).slice(0, top)
    .map((r) => `${r.selfPct.toFixed(1).padStart(5)} % self ${r.totalPct.toFixed(1).padStart(5)} % total  ${r.name}`).join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '30' }, root: { type: 'string', default: process.cwd() } } });
  for (const file of positionals) {
    const { rows, totalMs } = summarise(file, values.root);
    const top = Number(values.top);
    console.log(`${file}: ${(totalMs / 1000).toFixed(1)} s sampled\n\nBy self time:\n${formatTop(rows, 'self', top)}`);
    console.log(`\nBy inclusive time (project code):\n${formatTop(rows, 'total', top, (r) => !r.name.includes(' ') || /(webhook|src|certs)\//.test(r.name) && !r.name.includes('node_modules'))}`);
    console.log(`\nBy inclusive time (all):\n${formatTop(rows, 'total', top)}\n`);
  }
}
