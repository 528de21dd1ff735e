// `kubectl get`-style output: asks the apiserver for a Table (the CRDs' printer
// columns) and prints it aligned. Used by the demo and `esi` tooling.
import type { KubeConfig } from '@kubernetes/client-node';
import { request } from 'node:https';

interface Table {
  columnDefinitions: { name: string; priority?: number }[];
  rows: { cells: unknown[] }[];
}

export async function getTable(kc: KubeConfig, path: string): Promise<Table> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const opts: Record<string, unknown> = {};
  await kc.applyToHTTPSOptions(opts as never);
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, cluster.server), { ...opts, headers: { ...(opts.headers as object), accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body) as Table) : reject(new Error(`GET ${path}: ${res.statusCode} ${body}`))));
    });
    req.on('error', reject);
    req.end();
  });
}

export function formatTable(table: Table): string {
  const cols = table.columnDefinitions.map((c, i) => ({ name: c.name.toUpperCase(), i, priority: c.priority ?? 0 })).filter((c) => c.priority === 0);
  const rows = table.rows.map((r) => cols.map((c) => String(r.cells[c.i] ?? '')));
  const widths = cols.map((c, j) => Math.max(c.name.length, ...rows.map((r) => r[j]!.length)));
  const line = (cells: string[]) => cells.map((s, j) => s.padEnd(widths[j]!)).join('   ').trimEnd();
  return [line(cols.map((c) => c.name)), ...rows.map(line)].join('\n');
}
