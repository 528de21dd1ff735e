// The chart's PrometheusRule as Prometheus reads it. Every expression parses with the
// Prometheus project's own PromQL grammar (@prometheus-io/lezer-promql, the one its UI uses);
// `promtool check rules` (Prometheus' own, pinned: test/platform/build-promtool.sh, which
// the platform build installs) accepts the rendered rules and `promtool test rules`
// evaluates the alerts on series: ExternalSecretNotReady names the ExternalSecret's namespace
// whether Prometheus kept it or renamed it exported_namespace, ESIControllerNoLeader fires when
// no controller is scraped at all, ESIWebhookDown when no webhook replica reports, the agents'
// alerts on failing fetches and stale files, and none fires on a healthy install.
import { parser } from '@prometheus-io/lezer-promql';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { stringify } from 'yaml';
import { findHelm, Helm, ofKind, platformTool } from '../../../support/helm.js';

const NS = 'esi-system';
const ARGS = ['--set', 'metrics.prometheusRule.enabled=true', '--set', 'metrics.serviceMonitor.enabled=true', '--set', 'metrics.controller.serviceMonitor.enabled=true',
  '--api-versions', 'monitoring.coreos.com/v1/ServiceMonitor', '--api-versions', 'monitoring.coreos.com/v1/PrometheusRule'];

interface Rule { alert: string; expr: string; for: string; labels: Record<string, string>; annotations: Record<string, string> }
interface Group { name: string; rules: Rule[] }

/** Syntax errors the PromQL grammar finds in `expr` (positions and the text around them). */
function syntaxErrors(expr: string): string[] {
  const out: string[] = [];
  parser.parse(expr).iterate({ enter: (n) => void (n.type.isError && out.push(`at ${n.from}: "${expr.slice(Math.max(0, n.from - 10), n.to + 10)}"`)) });
  return out;
}

const found = await findHelm();
if (found.path) suite(new Helm(found.path));
else t.plan(0, `helm is not available, chart tests skipped: ${found.reason}`);

function suite(helm: Helm): void {
  let groups: Group[] = [];
  t.before(async () => {
    const objs = await helm.template('esi', NS, ARGS);
    groups = (ofKind(objs, 'PrometheusRule')[0] as unknown as { spec: { groups: Group[] } }).spec.groups;
  });

  t.test('every expression parses with the PromQL grammar', async (t) => {
    const rules = groups.flatMap((g) => g.rules);
    t.ok(rules.length >= 9, `${rules.length} alerts`);
    for (const r of rules) t.same(syntaxErrors(r.expr), [], `${r.alert}: ${r.expr}`);
    t.not(syntaxErrors('sum(rate(esi_injections_total[5m])').length, 0, 'the check finds an unclosed call');
  });

  t.test('promtool checks the rules and evaluates the alerts on series', async (t) => {
    const promtool = await platformTool('build-promtool.sh');
    const bin = promtool.path;
    if (!bin) return t.fail(`promtool is not available: ${promtool.reason}`);
    const dir = mkdtempSync(join(tmpdir(), 'esi-rules-'));
    writeFileSync(join(dir, 'rules.yaml'), stringify({ groups }));
    const check = spawnSync(bin, ['check', 'rules', join(dir, 'rules.yaml')], { encoding: 'utf8' });
    t.equal(check.status, 0, `promtool check rules: ${check.stdout}${check.stderr}`);
    writeFileSync(join(dir, 'tests.yaml'), stringify(RULE_TESTS));
    const run = spawnSync(bin, ['test', 'rules', join(dir, 'tests.yaml')], { encoding: 'utf8', cwd: dir });
    t.equal(run.status, 0, `promtool test rules: ${run.stdout}${run.stderr}`);
  });
}

const ctl = { job: 'esi-controller-metrics' };
const notReady = (ns: string, name: string) => ({
  summary: `ExternalSecret ${ns}/${name} is not Ready`,
  description: `Its Secret is not being updated; \`kubectl describe externalsecret -n ${ns} ${name}\` shows the reason (docs/troubleshooting.md).`,
});
const RULE_TESTS = {
  rule_files: ['rules.yaml'],
  evaluation_interval: '1m',
  tests: [
    {
      // Nothing of ESI scraped but two failing ExternalSecrets' series: one whose namespace
      // label survived (honorLabels), one a Prometheus renamed exported_namespace.
      interval: '1m',
      input_series: [
        { series: `externalsecret_status_condition{condition="Ready",status="False",namespace="team-a",name="db",job="${ctl.job}"}`, values: '1x30' },
        { series: `externalsecret_status_condition{condition="Ready",status="False",exported_namespace="team-b",namespace="${NS}",name="api",job="${ctl.job}"}`, values: '1x30' },
      ],
      alert_rule_test: [
        {
          eval_time: '15m', alertname: 'ExternalSecretNotReady', exp_alerts: [
            { exp_labels: { severity: 'warning', condition: 'Ready', status: 'False', namespace: 'team-a', name: 'db', job: ctl.job }, exp_annotations: notReady('team-a', 'db') },
            { exp_labels: { severity: 'warning', condition: 'Ready', status: 'False', exported_namespace: 'team-b', namespace: NS, name: 'api', job: ctl.job }, exp_annotations: notReady('team-b', 'api') },
          ],
        },
        {
          eval_time: '15m', alertname: 'ESIControllerNoLeader', exp_alerts: [{
            exp_labels: { severity: 'critical', namespace: NS },
            exp_annotations: {
              summary: `No ESI controller replica in ${NS} holds the Lease (or none is scraped); no ExternalSecret is reconciled`,
              description: `Check \`kubectl -n ${NS} get pods -l app.kubernetes.io/component=controller\` and their logs (docs/troubleshooting.md).`,
            },
          }],
        },
        {
          eval_time: '5m', alertname: 'ESIWebhookDown', exp_alerts: [{
            exp_labels: { severity: 'critical', namespace: NS },
            exp_annotations: {
              summary: `No ESI webhook replica in ${NS} is up and ready`,
              description: 'With failurePolicy Fail the apiserver refuses every pod labelled esi.dev/inject=true ("failed calling webhook"); other pods are not affected (docs/troubleshooting.md).',
            },
          }],
        },
      ],
    },
    {
      // A healthy install: a leader, a synced webhook, fast admissions, a fresh agent.
      interval: '1m',
      input_series: [
        { series: `esi_controller_leader{namespace="${NS}",pod="esi-controller-0"}`, values: '1x60' },
        { series: `esi_controller_leader{namespace="${NS}",pod="esi-controller-1"}`, values: '0x60' },
        { series: `esi_cache_synced{namespace="${NS}",pod="esi-webhook-0"}`, values: '1x60' },
        { series: `esi_admission_duration_seconds_bucket{namespace="${NS}",result="injected",le="0.005"}`, values: '0+10x60' },
        { series: `esi_admission_duration_seconds_bucket{namespace="${NS}",result="injected",le="+Inf"}`, values: '0+10x60' },
        { series: `esi_admission_duration_seconds_count{namespace="${NS}",result="injected"}`, values: '0+10x60' },
        { series: 'esi_agent_last_success_timestamp_seconds{namespace="app",pod="web-0"}', values: '0+60x60' },
        { series: 'esi_agent_refresh_interval_seconds{namespace="app",pod="web-0"}', values: '600x60' },
        { series: 'esi_agent_refresh_total{result="success",namespace="app",pod="web-0"}', values: '0+1x60' },
        { series: 'esi_agent_refresh_failures_total{stage="fetch",namespace="app",pod="web-0"}', values: '0x60' },
      ],
      alert_rule_test: ['ESIControllerNoLeader', 'ESIWebhookDown', 'ESIWebhookAdmissionErrors', 'ESIWebhookSlowAdmissions', 'ESIAgentFetchFailing', 'ESIAgentFilesStale']
        .map((alertname) => ({ eval_time: '40m', alertname, exp_alerts: [] })),
    },
    {
      // Agents in trouble: one whose fetches fail without a success, one whose files are old.
      interval: '1m',
      input_series: [
        { series: 'esi_agent_refresh_failures_total{stage="fetch",namespace="app",pod="web-1"}', values: '0+1x60' },
        { series: 'esi_agent_refresh_total{result="success",namespace="app",pod="web-1"}', values: '3x60' },
        { series: 'esi_agent_last_success_timestamp_seconds{namespace="app",pod="web-2"}', values: '60x60' },
        { series: 'esi_agent_refresh_interval_seconds{namespace="app",pod="web-2"}', values: '600x60' },
      ],
      alert_rule_test: [
        {
          eval_time: '30m', alertname: 'ESIAgentFetchFailing', exp_alerts: [{
            exp_labels: { severity: 'warning', namespace: 'app', pod: 'web-1' },
            exp_annotations: {
              summary: 'The ESI agent of pod app/web-1 cannot fetch its secrets; its files are not refreshed',
              description: '`kubectl logs -n app web-1 -c esi-agent` names the store and the error (docs/troubleshooting.md).',
            },
          }],
        },
        {
          eval_time: '40m', alertname: 'ESIAgentFilesStale', exp_alerts: [{
            exp_labels: { severity: 'warning', namespace: 'app', pod: 'web-2' },
            exp_annotations: { summary: 'The secret files of pod app/web-2 have not been refreshed for two refresh intervals' },
          }],
        },
      ],
    },
  ],
};
