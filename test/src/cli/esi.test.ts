// The `esi` command: help, version, unknown commands — the way a user types them.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { esiProcess } from '../../support/webhook.js';

async function esi(...args: string[]) {
  const p = esiProcess(args);
  const code = await new Promise<number | null>((r) => p.child.on('exit', r));
  return { code, out: p.output() };
}

t.test('esi --help lists every subcommand', async (t) => {
  const { code, out } = await esi('--help');
  t.equal(code, 0);
  for (const cmd of ['webhook', 'agent', 'controller', 'inject', 'template', 'version']) t.match(out, new RegExp(`^  ${cmd}\\s+\\S`, 'm'));
});

t.test('esi version prints the package version', async (t) => {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  const { code, out } = await esi('version');
  t.equal(code, 0);
  t.match(out, new RegExp(`^esi ${pkg.version.replace(/\./g, '\\.')} \\(node `));
});

t.test('an unknown command fails with usage', async (t) => {
  const { code, out } = await esi('frobnicate');
  t.equal(code, 2);
  t.match(out, /unknown command "frobnicate"/);
  t.match(out, /Usage: esi <command>/);
});

t.test('subcommand help', async (t) => {
  for (const cmd of ['webhook', 'inject']) {
    const { code, out } = await esi(cmd, '--help');
    t.equal(code, 0, `esi ${cmd} --help`);
    t.match(out, new RegExp(`Usage: esi ${cmd}`));
  }
});

t.test('esi controller checks every flag before starting: a bad value exits at once, naming the flag', async (t) => {
  const { code, out } = await esi('controller', '--kubeconfig', '/nonexistent', '--leader-elect', 'true', '--lease-duration', '5parsecs');
  t.not(code, 0, 'exits with an error');
  t.match(out, /--lease-duration "5parsecs" must be a Go duration/);
  t.notMatch(out, /listening|starting/, 'nothing started');
  const zero = await esi('controller', '--kubeconfig', '/nonexistent', '--restart-min-interval', '0s');
  t.not(zero.code, 0);
  t.match(zero.out, /--restart-min-interval must be a positive number, got "0"/, 'no restart without a minimum interval');
  const scoped = await esi('controller', '--kubeconfig', '/nonexistent', '--watch-namespaces', 'team-a,Team_B');
  t.not(scoped.code, 0);
  t.match(scoped.out, /--watch-namespaces "Team_B": not a namespace name/);
  const both = await esi('controller', '--kubeconfig', '/nonexistent', '--watch-namespaces', 'team-a', '--namespace-selector', 'tier=web');
  t.not(both.code, 0);
  t.match(both.out, /--watch-namespaces and --namespace-selector cannot be combined/, 'the selector reads Namespace labels, which scoped mode cannot watch');
  const noStates = await esi('controller', '--kubeconfig', '/nonexistent', '--max-generator-states', '0');
  t.not(noStates.code, 0);
  t.match(noStates.out, /--max-generator-states must be a positive number, got "0"/, 'the GeneratorState bound is a number');
  const raw = await esi('controller', '--kubeconfig', '/nonexistent', '--allow-generator-raw-results', 'sometimes');
  t.not(raw.code, 0);
  t.match(raw.out, /allow-generator-raw-results/, 'a boolean, named');
});
