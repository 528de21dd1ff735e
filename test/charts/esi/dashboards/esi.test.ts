// The chart's Grafana dashboard (charts/esi/dashboards/esi.json, shipped as a ConfigMap by
// metrics.grafanaDashboard): every panel query parses with the Prometheus project's own PromQL
// grammar (@prometheus-io/lezer-promql), and every ESI metric it names is one the controller,
// the webhook or the agent registers; the fleet row shows the reads per store (agents and
// reconciler), the budget in use, the notifications sent and their delay.
import { parser } from '@prometheus-io/lezer-promql';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
const ROOT = join(import.meta.dirname, '..', '..', '..', '..');

interface Panel { type: string; title: string; gridPos: { x: number; y: number; w: number; h: number }; targets?: { expr: string }[] }
const dashboard = JSON.parse(readFileSync(join(ROOT, 'charts/esi/dashboards/esi.json'), 'utf8')) as { panels: Panel[] };

/** Syntax errors and metric names of one query, as the PromQL grammar reads it. */
function read(expr: string): { errors: string[]; metrics: string[] } {
  const errors: string[] = [];
  const metrics: string[] = [];
  let inSelector = false;
  parser.parse(expr).iterate({
    enter: (n) => {
      if (n.type.isError) errors.push(`at ${n.from}: "${expr.slice(Math.max(0, n.from - 10), n.to + 10)}"`);
      if (n.name === 'VectorSelector') inSelector = true;
      else if (n.name === 'Identifier' && inSelector) {
        metrics.push(expr.slice(n.from, n.to));
        inSelector = false;
      }
    },
  });
  return { errors, metrics };
}

/** The metric names registered in the source (prom-client's `name: '...'` of each metric). */
function registered(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts')) for (const m of readFileSync(p, 'utf8').matchAll(/name: '((?:esi|externalsecret)_[a-z_]+)'/g)) names.add(m[1]!);
    }
  };
  for (const dir of ['src', 'injector', 'webhook']) walk(join(ROOT, dir));
  return names;
}

const queries = dashboard.panels.flatMap((p) => (p.targets ?? []).map((q) => ({ panel: p.title, expr: q.expr })));

t.test('every panel query parses with the PromQL grammar', async (t) => {
  t.ok(queries.length >= 15, `${queries.length} queries`);
  for (const q of queries) t.same(read(q.expr).errors, [], `${q.panel}: ${q.expr}`);
  t.not(read('sum(rate(esi_fleet_notifications_total[5m])').errors.length, 0, 'the check finds an unclosed call');
});

t.test('every ESI metric a query names is registered by ESI', async (t) => {
  const known = registered();
  t.ok(known.has('esi_fleet_store_read_budget') && known.has('esi_agent_provider_calls_total'), 'the scan finds the controller\'s and the agent\'s metrics');
  for (const q of queries) {
    for (const m of read(q.expr).metrics) {
      if (!/^(esi|externalsecret)_/.test(m)) continue; // process_* and the like: prom-client's defaults
      const base = m.replace(/_(bucket|sum|count)$/, '');
      t.ok(known.has(m) || known.has(base), `${q.panel}: ${m}`);
    }
  }
  t.notOk(known.has('esi_fleet_no_such_metric'), 'and an unknown name is not');
});

t.test('the fleet row: reads per store, budget in use, notifications and their delay', async (t) => {
  const i = dashboard.panels.findIndex((p) => p.type === 'row' && /fleet/i.test(p.title));
  t.ok(i >= 0, 'a fleet row');
  const below = dashboard.panels.slice(i + 1).filter((p) => p.type !== 'row');
  const named = (metric: string) => below.some((p) => p.targets?.some((q) => read(q.expr).metrics.some((m) => m.startsWith(metric))));
  for (const m of ['esi_agent_provider_calls_total', 'esi_controller_provider_calls_total', 'esi_fleet_store_planned_reads', 'esi_fleet_store_read_budget',
    'esi_fleet_notifications_total', 'esi_fleet_aws_notifications_total', 'esi_fleet_gcp_notifications_total', 'esi_fleet_notification_delay_seconds']) t.ok(named(m), `${m} in the fleet row`);
  const row = dashboard.panels[i]!;
  for (const p of below) t.ok(p.gridPos.y > row.gridPos.y, `${p.title}: below the row`);
  const ids = dashboard.panels.map((p) => (p as unknown as { id: number }).id);
  t.equal(new Set(ids).size, ids.length, 'panel ids are unique');
});
